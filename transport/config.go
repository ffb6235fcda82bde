package transport

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport/dscp"
)

// Config configures an endpoint and every connection it carries. The zero
// value is usable: every zero field takes the default written beside it.
type Config struct {
	// TLS secures every connection, and one of TLS or Insecure must be
	// set. A TLS 1.3 handshake (crypto/tls's QUIC API, RFC 9001)
	// authenticates the listener with its certificate — and the dialer
	// too with mutual TLS: set ClientAuth and ClientCAs on the listener's
	// config, Certificates on the dialer's — and every packet after it is
	// encrypted and authenticated (AEAD, with replays dropped). A listener
	// needs Certificates (or GetCertificate); a dialer verifies against
	// RootCAs (nil: the system roots) and ServerName (empty: the host part
	// of Dial's address). NextProtos defaults to ALPN ("fresh/1").
	// Session resumption works as crypto/tls has it: set
	// ClientSessionCache on the dialer. The config is cloned; later
	// changes do not apply. See SECURITY.md for what this protects.
	TLS *tls.Config
	// Insecure runs in plaintext: no handshake authentication, no
	// encryption, no integrity. Anyone on the path can read the stream,
	// forge data, acknowledgments and updates, and close the connection.
	// For closed test networks and the simulator only; both ends must
	// agree. It may not be set together with TLS.
	Insecure bool

	// CC names the stream's congestion controller in the cc registry
	// ("owd", "cubic", "reno", "htcp", "rttdelay", …). Default "owd".
	CC string
	// NewController, if set, builds the controller instead of CC (for a
	// controller with a non-default configuration).
	NewController func(mss cc.ByteCount) cc.Controller
	// UpdatePolicy names the update-rate policy, one of acp.PolicyNames()
	// ("acp", "acp-literal", "lazy"; see acp.NewPolicy). Default "acp".
	UpdatePolicy string
	// NewUpdatePolicy, if set, builds the update-rate policy instead of
	// UpdatePolicy: a fixed rate (acp.NewFixed), or a regulator with a
	// non-default acp.Config. size is the update size the policy paces
	// by (MaxDatagram). MaxUpdateRate does not apply to it.
	NewUpdatePolicy func(size cc.ByteCount) (acp.Policy, error)
	// MaxUpdateRate bounds the update rate, updates per second: the
	// application's sensing rate (the largest update rate, λ_max). Default 1000.
	MaxUpdateRate float64

	// MaxDatagram is the largest datagram sent, bytes. Default 1200 (fits the
	// IPv6 minimum MTU with room for tunnels, as QUIC's default).
	MaxDatagram int

	// Clock is the endpoint's clock. Default clock.NewSystem(). Give it an
	// *ntpclock.Clock to have stamps NTP-corrected.
	Clock clock.Clock
	// NTPServer, if set, makes the endpoint wrap Clock in an NTP-corrected
	// clock (github.com/beevik/ntp) and keep it synchronised in the
	// background. host or host:port.
	NTPServer string
	// TrustPeerClock says both ends keep wall clocks in sync by other means
	// (NTP, PTP, GPS): one-way delays are then computed from the raw stamps
	// and marked trustworthy at once. By default the in-band estimator
	// (clock.Inband) learns the offset from the packets themselves and
	// trusts it once it has a few seconds of samples; until then the
	// controller runs on RTT/2.
	TrustPeerClock bool

	// StreamDSCP and UpdateDSCP mark the stream's and the updates' packets
	// (IPv4 TOS / IPv6 traffic class, DSCP in the upper 6 bits). Left
	// zero (unset) they take the defaults: dscp.BestEffort for the stream and
	// dscp.CS7 for the updates, so updates ride the network-control class
	// and a DiffServ bottleneck serves them first, as in the ACP Wi-Fi
	// paper. Set UpdateDSCP to dscp.BestEffort to leave updates unmarked.
	StreamDSCP dscp.Codepoint
	UpdateDSCP dscp.Codepoint

	// AckEvery is how many ack-eliciting packets the receiver waits for
	// before it ACKs (the ACK frequency). Default 2 (RFC 5681 §4.2).
	AckEvery int
	// MaxAckDelay is the delayed-ACK timer. Default 25 ms (RFC 9000 §18.2).
	MaxAckDelay time.Duration

	// SendBuffer is the most bytes Write buffers before it blocks (written,
	// not yet acknowledged). The buffer starts at 64 KiB and doubles,
	// up to SendBuffer, only while it is what holds the sender back: when a
	// buffer's worth is acknowledged in less than four minimum RTTs. It so
	// settles near four bandwidth-delay products (128 to 512 KiB measured
	// on loopback; 500 KB on a 10 Mbit/s, 100 ms path) and SendBuffer
	// matters only on faster or longer paths. Its memory is up to twice the buffer's
	// current size (compaction stays cheap that way). Default 4 MiB.
	SendBuffer int
	// ReceiveWindow is the most the stream's flow-control window and
	// receive buffer grow to, bytes: all the memory a slow reader can make
	// the receiver hold. The window starts at 64 KiB and doubles when the
	// reader empties it in less than four RTTs, as in quic-go's
	// auto-tuning. Below 64 KiB set the same value on both ends: a sender
	// assumes min(64 KiB, its own ReceiveWindow) until the peer's first
	// ACK. Default 4 MiB.
	ReceiveWindow int
	// MaxStreamGaps is the most holes the receive stream holds (separate
	// byte ranges above the next byte to read). A Data frame that would
	// open one more is dropped unacknowledged and resent by the peer like
	// a lost one (Stats.StreamFramesDropped): a peer cannot make the
	// receiver track one range per byte. Default 1024.
	MaxStreamGaps int
	// MaxUpdateFuture is how far ahead of this end's clock (corrected by
	// the clock-offset estimate) an update's generation time may be; later
	// ones are dropped (Stats.UpdatesRejected). Default 5 s: well above
	// the offset estimate's error, far below a forged or broken stamp.
	MaxUpdateFuture time.Duration

	// HandshakeTimeout bounds Dial; on a Listener, it is how long a new
	// connection may take to complete its handshake before it is dropped
	// (Accept never sees it). Default 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection that heard nothing for this long.
	// Default 30 s.
	IdleTimeout time.Duration
	// KeepAlive sends a PING after this long without sending anything the
	// peer must acknowledge, so a quiet connection is not idled out (and NAT
	// bindings stay open). Default IdleTimeout/3; negative: never.
	KeepAlive time.Duration
	// Linger is how long Close waits for the peer to acknowledge stream
	// data already written. Default 5 s; negative: do not wait.
	Linger time.Duration

	// DisableRetry turns off a Listener's address validation by Retry.
	// By default an Initial without a token is answered with a Retry (a
	// 67-byte datagram, no state kept) and a connection is created only
	// when the client sends its Initial again with the Retry's token, which
	// proves it receives at its source address (RFC 9000 §8.1.2). That
	// costs every handshake one extra round trip, and is on by default
	// because without it a forged source address makes the Listener hold
	// a connection (its state) per forged Initial until
	// IdleTimeout, and send to the forged address: up to three times the
	// Initial's bytes (RFC 9000 §8.1's anti-amplification limit, which
	// then applies until the client answers). Disable it only where the
	// round trip matters more than those risks, for example behind a
	// filter that drops forged source addresses (BCP 38).
	DisableRetry bool
	// MaxConnections bounds the connections a Listener holds at once,
	// handshaking, waiting for Accept or accepted. An Initial beyond it is
	// dropped and its client retries. Default 100,000.
	MaxConnections int
	// MaxConnectionsPerSource bounds the connections of one source: one
	// IPv4 address, or one IPv6 /64 (a subscriber's usual allocation,
	// whose addresses one host can use freely). Default 1,024.
	MaxConnectionsPerSource int
	// HandshakeRate and HandshakeBurst bound how fast one source opens
	// connections: a token bucket of HandshakeBurst handshakes refilled at
	// HandshakeRate per second. With Retry on, only an Initial with a
	// valid token counts, so forged Initials cannot use up a real
	// source's budget. Defaults 100/s and 100.
	HandshakeRate  float64
	HandshakeBurst int
	// LimitLoopback applies MaxConnectionsPerSource and the handshake rate
	// to loopback sources too. By default loopback is exempt: its
	// sources are processes on this host, which can exhaust it by other
	// means anyway, and a local load generator or proxy (thousands of
	// connections from 127.0.0.1) must not be throttled as one remote
	// host would be. MaxConnections applies to every source.
	LimitLoopback bool

	// ReusePort opens a Listener's socket with SO_REUSEPORT, so that
	// several processes (or Listeners) serve one port, each with its own
	// socket; every socket on the port must set it (and, on Linux, belong
	// to the same user). The kernel spreads datagrams among the sockets by
	// a hash of the source and destination addresses and ports, so a
	// source stays with one process while its address and port stay the
	// same; see the package doc's "Scale-out". Linux and the BSDs; Listen
	// fails elsewhere. Dial ignores it.
	ReusePort bool

	// Logger receives debug logs; nil is silent.
	Logger *slog.Logger
}

// withDefaults validates c and fills defaults.
func (c Config) withDefaults() (Config, error) {
	bad := func(f string, a ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(f, a...))
	}
	if c.CC == "" {
		c.CC = "owd"
	}
	if c.UpdatePolicy == "" {
		c.UpdatePolicy = "acp"
	}
	// Unknown names fail here, at Listen or Dial, not when the first
	// connection builds its controller.
	if c.NewController == nil {
		if _, err := cc.New(c.CC, 1200); err != nil {
			if slices.Contains(acp.PolicyNames(), c.CC) {
				return bad("CC %q is an update policy, not a congestion controller: set UpdatePolicy to it, and CC to one of %v", c.CC, cc.Names())
			}
			return bad("CC: %v", err)
		}
	}
	if c.NewUpdatePolicy == nil {
		if !slices.Contains(acp.PolicyNames(), c.UpdatePolicy) {
			return bad("UpdatePolicy %q (want one of %s, or set NewUpdatePolicy)", c.UpdatePolicy, strings.Join(acp.PolicyNames(), ", "))
		}
	}
	if c.MaxUpdateRate == 0 {
		c.MaxUpdateRate = 1000
	}
	if c.MaxUpdateRate < 0 {
		return bad("MaxUpdateRate %v < 0", c.MaxUpdateRate)
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = 1200
	}
	if c.MaxDatagram < 256 || c.MaxDatagram > 65000 {
		return bad("MaxDatagram %d outside 256..65000", c.MaxDatagram)
	}
	if c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	for _, f := range []struct {
		name string
		d    *dscp.Codepoint
		def  dscp.Codepoint
	}{{"StreamDSCP", &c.StreamDSCP, dscp.BestEffort}, {"UpdateDSCP", &c.UpdateDSCP, dscp.CS7}} {
		if !f.d.Valid() {
			return bad("%s %d is not a code point: use the dscp constants, dscp.Parse or dscp.FromCode (a plain number such as 46 would not be the code point 46)", f.name, uint8(*f.d))
		}
		if !f.d.IsSet() {
			*f.d = f.def
		}
	}
	if c.AckEvery == 0 {
		c.AckEvery = 2
	}
	if c.AckEvery < 1 || c.AckEvery > 64 {
		return bad("AckEvery %d outside 1..64", c.AckEvery)
	}
	if c.MaxAckDelay == 0 {
		c.MaxAckDelay = 25 * time.Millisecond
	}
	if c.MaxAckDelay < 0 {
		return bad("MaxAckDelay < 0")
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = 4 << 20
	}
	if c.ReceiveWindow == 0 {
		c.ReceiveWindow = 4 << 20
	}
	if c.SendBuffer < c.MaxDatagram || c.ReceiveWindow < c.MaxDatagram {
		return bad("SendBuffer and ReceiveWindow must hold at least one datagram")
	}
	if c.MaxStreamGaps == 0 {
		c.MaxStreamGaps = 1024
	}
	if c.MaxUpdateFuture == 0 {
		c.MaxUpdateFuture = 5 * time.Second
	}
	if c.MaxStreamGaps < 1 || c.MaxUpdateFuture < 0 {
		return bad("MaxStreamGaps %d must be positive and MaxUpdateFuture %v not negative (0: the default)", c.MaxStreamGaps, c.MaxUpdateFuture)
	}
	if c.HandshakeTimeout < 0 || c.IdleTimeout < 0 {
		return bad("HandshakeTimeout %v and IdleTimeout %v must not be negative (0: the default)", c.HandshakeTimeout, c.IdleTimeout)
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = c.IdleTimeout / 3
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Second
	}
	if c.MaxConnections < 0 || c.MaxConnectionsPerSource < 0 || c.HandshakeRate < 0 || c.HandshakeBurst < 0 {
		return bad("MaxConnections %d, MaxConnectionsPerSource %d, HandshakeRate %v and HandshakeBurst %d must not be negative (0: the default)",
			c.MaxConnections, c.MaxConnectionsPerSource, c.HandshakeRate, c.HandshakeBurst)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 100_000
	}
	if c.MaxConnectionsPerSource == 0 {
		c.MaxConnectionsPerSource = 1024
	}
	if c.HandshakeRate == 0 {
		c.HandshakeRate = 100
	}
	if c.HandshakeBurst == 0 {
		c.HandshakeBurst = 100
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.TLS == nil && !c.Insecure:
		return bad("no TLS config: set Config.TLS (a certificate on the listener; RootCAs, and ServerName if the address is not the name, on the dialer), or Insecure: true for plaintext (unsafe: anyone on the path can read, forge and close connections)")
	case c.TLS != nil && c.Insecure:
		return bad("both TLS and Insecure are set: choose one")
	}
	if c.TLS != nil {
		// Once per endpoint: every connection shares this config (and
		// with it the keys that encrypt session tickets).
		c.TLS = session.PrepareTLS(c.TLS.Clone())
	}
	return c, nil
}

// sessionConfig is what the protocol session needs of a validated Config.
func (c *Config) sessionConfig() session.Config {
	newController := func(mss cc.ByteCount) (cc.Controller, error) { return cc.New(c.CC, mss) }
	controllerName := c.CC // a registry name, checked at Listen or Dial: the session may build it late
	if c.NewController != nil {
		controllerName = "" // an application's: built in New, as its name is its own
		newController = func(mss cc.ByteCount) (cc.Controller, error) { return c.NewController(mss), nil }
	}
	newPolicy := c.NewUpdatePolicy
	if newPolicy == nil {
		newPolicy = func(size cc.ByteCount) (acp.Policy, error) { return namedPolicy(c.UpdatePolicy, size, c.MaxUpdateRate) }
	}
	return session.Config{
		TLS:             c.TLS,
		MaxDatagram:     c.MaxDatagram,
		NewController:   newController,
		ControllerName:  controllerName,
		NewPolicy:       newPolicy,
		TrustPeerClock:  c.TrustPeerClock,
		StreamDSCP:      c.StreamDSCP.Code(),
		UpdateDSCP:      c.UpdateDSCP.Code(),
		AckEvery:        c.AckEvery,
		MaxAckDelay:     c.MaxAckDelay,
		IdleTimeout:     c.IdleTimeout,
		KeepAlive:       c.KeepAlive,
		SendBuffer:      c.SendBuffer,
		ReceiveWindow:   c.ReceiveWindow,
		MaxStreamGaps:   c.MaxStreamGaps,
		MaxUpdateFuture: c.MaxUpdateFuture,
		// Built once per connection: each gets its own secret seed for
		// the packet numbers it skips (crypto/rand, via randomID).
		Seed: randomID(),
	}
}

// ALPN is the TLS application protocol fresh negotiates by default.
const ALPN = session.ALPN

// namedPolicy builds the update policy called name (acp.NewPolicy).
func namedPolicy(name string, size cc.ByteCount, maxRate float64) (acp.Policy, error) {
	return acp.NewPolicy(name, acp.Config{UpdateSize: size, MaxRate: acp.Rate(maxRate)})
}

// maxAccepted is the largest datagram an endpoint accepts: its own
// MaxDatagram, and never less than an Initial's padded size.
func maxAccepted(maxDatagram int) int { return max(maxDatagram, wire.MinInitialSize) }
