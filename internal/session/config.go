package session

import (
	"crypto/tls"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/owd"
)

// Config is a session's resolved settings. The transport builds it from
// its public Config (which documents the defaults and validates user
// input); the simulator builds it from a scenario. Zero fields take the
// defaults below, so both drivers run the same protocol unless they say
// otherwise.
type Config struct {
	// MaxDatagram is the largest datagram sent, bytes: the ceiling of the
	// path MTU search, or with DisablePathMTUDiscovery the fixed size of
	// full-size datagrams. Default DefaultMaxDatagramPMTUD (1452), or
	// 1200 with DisablePathMTUDiscovery.
	MaxDatagram int
	// DisablePathMTUDiscovery turns DPLPMTUD (RFC 8899, pmtu.go) off, as
	// transport.Config's field of the same name (quic-go's name): every
	// full-size datagram is then MaxDatagram (the simulator's and the
	// fixed-size drivers' choice). On, datagrams start at min(1200,
	// MaxDatagram) bytes and grow to the largest size the path is found
	// to carry, up to MaxDatagram.
	DisablePathMTUDiscovery bool
	// NewController builds the stream's window controller for the stream
	// payload size mss. Default: owd.New.
	NewController func(mss cc.ByteCount) (cc.Controller, error)
	// CC, if set, is the Name of the controllers NewController
	// builds, and promises that NewController does not fail (a registry
	// name already checked): the session then builds its controller when
	// the stream first needs it rather than in New. A connection that
	// never sends stream data (a monitor's, which only receives updates)
	// never holds one, and saves what the default controller costs a
	// connection (bench/results/security.md, "Footprint").
	// Set by default with the default NewController.
	CC string
	// NewUpdatePolicy builds the update-rate regulator; size is the update size
	// (MaxDatagram), its acp.Config.UpdateSize. Default: the ACP regulator.
	NewUpdatePolicy func(size cc.ByteCount) (acp.Policy, error)
	// UpdatePolicy, if set, is the name of the policies NewUpdatePolicy builds
	// (an acp.PolicyNames entry the transport checked), and lets the
	// session build its regulator when it first sends an update rather
	// than in New, as CC does for the controller: a monitor's
	// connection, which only receives updates, then holds none and saves
	// the regulator's memory (bench/results/security.md, "Footprint"). A
	// NewUpdatePolicy that fails all the same fails that first SendUpdate.
	UpdatePolicy string

	// TLS, if set, secures the session: a TLS 1.3 handshake (crypto/tls's
	// QUIC API) authenticates the peer and every packet after it is
	// AEAD-protected (package internal/seal). A client's config must name
	// the server (ServerName) unless it skips verification; a server's
	// must hold a certificate. nil: plaintext, unauthenticated (the
	// simulator; the transport only with Insecure).
	TLS *tls.Config
	// Allow0RTT: a server issues session tickets that allow early data
	// and accepts a client's 0-RTT updates; a client that resumes with such
	// a ticket sends its first updates in 0-RTT (early.go). Off: neither.
	Allow0RTT bool
	// KeyUpdateInterval is how many packets one key protects before a key
	// update (RFC 9001 §6). Default 2^22, half AES-GCM's confidentiality
	// limit; tests set it small.
	KeyUpdateInterval int64

	// TrustPeerClock: both wall clocks are synchronised by other means, so
	// OWD is computed from the raw stamps and trusted at once.
	TrustPeerClock bool
	// NoInband disables the in-band offset estimator: OWD samples then
	// carry the raw clock offset and are never trusted (the simulator's
	// "no clock correction" model; transport.Config.NoInband).
	NoInband bool

	// StreamDSCP and UpdateDSCP are the code points Poll returns with
	// stream and update datagrams (unset: best effort), as in
	// transport.Config, which fills them with its defaults.
	StreamDSCP, UpdateDSCP dscp.Codepoint

	// AckEvery: ack-eliciting packets per ACK. Default 2.
	AckEvery int
	// MaxAckDelay is the delayed-ACK timer. Default 25 ms.
	MaxAckDelay time.Duration
	// MinAckDelay is the smallest ACK delay this end can honour, sent as
	// the min_ack_delay transport parameter: its consent to the peer's
	// AckFrequency requests (draft-ietf-quic-ack-frequency §3; see
	// ackfreq.go). Default 1 ms (RFC 9002 §6.1.2's timer granularity);
	// negative: no consent, the peer never asks this end to ACK less
	// often. At most MaxAckDelay.
	MinAckDelay time.Duration
	// IdleTimeout closes a session that heard nothing for this long.
	// Default 30 s.
	IdleTimeout time.Duration
	// KeepAlive: a PING after this long without ack-eliciting traffic.
	// Default IdleTimeout/3; negative: never.
	KeepAlive time.Duration

	// SendBuffer is the most bytes written and not yet acknowledged; the
	// buffer starts at 64 KiB and grows to it only while it limits the
	// sender (sendStream.autoTune). Default 4 MiB.
	SendBuffer int
	// ReceiveWindow is the most the stream's flow-control window (and
	// receive ring) grows to from 64 KiB (recvStream.autoTune), bytes.
	// Default 4 MiB.
	ReceiveWindow int
	// ServerConnID (server only) is the connection ID this server chose
	// to be addressed by, given to the client in the Accept: the client's
	// packets carry it from then on, so a load balancer or SO_REUSEPORT
	// program that routes by the server's ID finds this server (RFC 9000
	// §5.1, the QUIC-LB draft's server ID). 0 keeps the client's ID for
	// both directions (the simulator, version 1's behaviour).
	ServerConnID uint64
	// AddressValidated says a server's peer has already proved it receives
	// at its source address (its Initial carried a valid Retry token), so
	// the anti-amplification limit does not apply. Without it a server
	// sends at most three times the bytes it received until the peer
	// proves it (RFC 9000 §8.1; see Session.MarkAddressValidated).
	// Clients ignore it.
	AddressValidated bool
	// StatelessResetToken is a server's token for this connection (RFC
	// 9000 §10.3): sent, encrypted, in the handshake's transport
	// parameters, so that a StatelessReset carrying it ends the client's
	// connection once this server has lost it. The transport derives it
	// from its reset key and the server's connection ID (ResetToken). nil: none, and no reset can end the connection.
	// Clients and plaintext sessions (no TLS: no encrypted place to send
	// it) ignore it.
	StatelessResetToken *[wire.StatelessResetTokenLen]byte

	// NewToken (server only, with TLS) is an address-validation token for
	// the client's next connection, minted by the server's listener: sent
	// once the handshake completes, in a NewToken frame (RFC 9000 §19.7),
	// once and unacknowledged (newtoken.go says why). nil: none.
	NewToken []byte
	// Token (client only) is the token a NewToken frame of an earlier
	// connection to this server gave: the first Initial carries it, and a
	// server that can still open it skips the Retry's round trip (RFC 9000
	// §8.1.3). A Retry replaces it.
	Token []byte
	// OnNewToken (client only, with TLS) is called with each token a
	// NewToken frame brings (a copy), for the next connection's Token.
	// It runs inside the session's packet handling: it must not block or
	// call back into the connection.
	OnNewToken func(token []byte)

	// MaxStreamGaps is the most holes the receive stream holds: received
	// byte ranges with bytes missing below them. A Data frame
	// that would open one more is dropped unacknowledged (Stats.
	// StreamFramesDropped) and the sender resends it later: without a
	// bound a peer sending 1-byte frames at every other offset makes the
	// receiver hold half the window as ranges. Default 1024: an honest
	// sender's holes come from packets lost in one window, and 1024 lost
	// packets in flight at once is a path the controller has long backed
	// off from.
	MaxStreamGaps int

	// MaxUpdateFuture is how far ahead of this end's clock, once corrected
	// by the clock-offset estimate, an update's generation time may be;
	// later ones are rejected (Stats.UpdatesRejected). Default 5 s: well
	// above the offset estimator's error (bounded by half the round trip,
	// so under a second on any path a session survives), far below what a
	// forged or broken clock does to the age of information.
	MaxUpdateFuture time.Duration

	// Seed seeds the choice of the packet numbers the sender skips to
	// catch optimistic ACKs (RFC 9000 §21.4); the peer must not be able to
	// guess it. Drivers pass a random one (the transport a crypto-random
	// seed per connection, the simulator one derived from its scenario's
	// seed, to stay deterministic); 0 derives one from the connection ID.
	Seed uint64
}

// Resolve returns c with every zero field at its default, or an error
// naming the first field the session cannot run with. It is where the
// protocol's defaults are written: the transport documents them and
// passes zero fields through.
func (c Config) Resolve() (Config, error) {
	c = c.withDefaults()
	return c, c.validate()
}

// The stream's buffer defaults (Config.SendBuffer, Config.ReceiveWindow).
const (
	DefaultSendBuffer    = 4 << 20
	DefaultReceiveWindow = 4 << 20
)

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.MaxDatagram == 0 {
		c.MaxDatagram = 1200
		if !c.DisablePathMTUDiscovery {
			c.MaxDatagram = DefaultMaxDatagramPMTUD
		}
	}
	if c.NewController == nil {
		c.NewController = func(mss cc.ByteCount) (cc.Controller, error) { return owd.New(owd.Config{MSS: mss}) }
		c.CC = owd.Name
	}
	if c.NewUpdatePolicy == nil {
		c.NewUpdatePolicy = func(size cc.ByteCount) (acp.Policy, error) { return acp.NewRegulator(acp.Config{UpdateSize: size}) }
	}
	if c.AckEvery == 0 {
		c.AckEvery = 2
	}
	if c.MaxAckDelay == 0 {
		c.MaxAckDelay = 25 * time.Millisecond
	}
	if c.MinAckDelay == 0 {
		c.MinAckDelay = time.Millisecond
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = c.IdleTimeout / 3
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = DefaultSendBuffer
	}
	if c.ReceiveWindow == 0 {
		c.ReceiveWindow = DefaultReceiveWindow
	}
	if c.KeyUpdateInterval == 0 {
		c.KeyUpdateInterval = 1 << 22 // half the AES-GCM limit (RFC 9001 §6.6): margin for the update's round trip
	}
	if c.MaxStreamGaps == 0 {
		c.MaxStreamGaps = 1024
	}
	if c.MaxUpdateFuture == 0 {
		c.MaxUpdateFuture = 5 * time.Second
	}
	return c
}

// validate rejects settings the session cannot run with. The fields are
// named as the transport's Config has them, which the session's mirrors.
func (c *Config) validate() error {
	field := func(name, format string, a ...any) error {
		return fresh.InvalidField("transport.Config."+name, format, a...)
	}
	switch {
	case c.MaxDatagram < 256 || c.MaxDatagram > 65000:
		return field("MaxDatagram", "%d outside 256..65000", c.MaxDatagram)
	case c.AckEvery < 1 || c.AckEvery > 64:
		return field("AckEvery", "%d outside 1..64", c.AckEvery)
	case c.MaxAckDelay < 0:
		return field("MaxAckDelay", "%v is negative (0: the default)", c.MaxAckDelay)
	case c.MinAckDelay > c.MaxAckDelay:
		return field("MinAckDelay", "%v above MaxAckDelay %v (negative: no ACK frequency requests)", c.MinAckDelay, c.MaxAckDelay)
	case c.IdleTimeout < 0:
		return field("IdleTimeout", "%v is negative (0: the default)", c.IdleTimeout)
	case c.SendBuffer < c.MaxDatagram:
		return field("SendBuffer", "%d does not hold one datagram (MaxDatagram %d)", c.SendBuffer, c.MaxDatagram)
	case c.ReceiveWindow < c.MaxDatagram:
		return field("ReceiveWindow", "%d does not hold one datagram (MaxDatagram %d)", c.ReceiveWindow, c.MaxDatagram)
	case c.MaxStreamGaps < 1:
		return field("MaxStreamGaps", "%d is not positive (0: the default)", c.MaxStreamGaps)
	case c.MaxUpdateFuture < 0:
		return field("MaxUpdateFuture", "%v is negative (0: the default)", c.MaxUpdateFuture)
	case c.KeyUpdateInterval < 0:
		return field("KeyUpdateInterval", "%d is negative (0: the default)", c.KeyUpdateInterval)
	}
	return nil
}

// MSS is the stream payload of one datagram of the base size (see
// baseDatagram): the segment size the controller counts its window in,
// and so its initial window, whatever size discovery reaches later (RFC
// 8899 §4.4: a larger PLPMTU must not enlarge the window in bytes).
func (c *Config) MSS() int { return c.dataPayload(c.baseDatagram()) }

// baseDatagram is the datagram size a session starts with: MaxDatagram,
// or, unless DisablePathMTUDiscovery, BASE_PLPMTU (pmtuBase) if that is
// smaller.
func (c *Config) baseDatagram() int {
	if !c.DisablePathMTUDiscovery {
		return min(pmtuBase, c.MaxDatagram)
	}
	return c.MaxDatagram
}

// dataPayload is the stream payload of a Data datagram of size bytes.
func (c *Config) dataPayload(size int) int {
	return size - wire.HeaderLen - wire.DataOverhead - c.tagLen()
}

// MaxUpdatePayload is the largest update payload.
func (c *Config) MaxUpdatePayload() int {
	return c.MaxDatagram - wire.HeaderLen - wire.UpdateOverhead - c.tagLen()
}

// tagLen is the AEAD tag each protected packet carries.
func (c *Config) tagLen() int {
	if c.TLS == nil {
		return 0
	}
	return wire.ProtectedOverhead
}
