package transport

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/qlog"
)

// Config configures connections: every connection a Listener accepts, or
// the one Dial opens. The socket and the Listener's admission limits are
// the Transport's. The zero value is usable once TLS (or Insecure) is set:
// every zero field takes the default written beside it.
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
	// ClientSessionCache on the dialer, and a later Dial to the same
	// server resumes (a PSK handshake, no certificate exchange; Conn.
	// ConnectionState's DidResume says so). A listener issues a ticket
	// after every handshake unless SessionTicketsDisabled is set; its
	// ticket keys live in its config, so they change when it restarts
	// unless set (SetSessionTicketKeys). With Allow0RTT a resumed
	// connection can also carry its first updates in 0-RTT (DialEarly).
	// The config is cloned; later changes do not apply. See SECURITY.md
	// for what this protects.
	TLS *tls.Config
	// Allow0RTT turns on 0-RTT status updates (TLS early data, RFC 8446
	// §4.2.10, RFC 9001 §4.6). On a listener: its session tickets allow
	// early data, and it takes the updates a resuming client sends with
	// its first flight (Update.Early marks them); everything else under
	// the early keys is dropped. On a dialer with a ClientSessionCache:
	// DialEarly to a server whose ticket allows it returns before the
	// handshake completes, and an update sent at once goes in the first
	// flight, a round trip earlier than after a full handshake. Both ends
	// must set it; default off.
	//
	// The caveat is replay: anyone who captures a first flight can send
	// it again, and crypto/tls keeps no anti-replay state (RFC 8446 §8).
	// That is why only updates go in 0-RTT, never stream bytes (a
	// replayed Write would be read twice): updates are freshest-only, so
	// a replay into the same connection is dropped as old, and a replay
	// into a new connection cannot complete its handshake, so it never
	// reaches Accept and its update no application. What a replay can
	// still do is cost the listener a handshake's work and let an
	// observer learn that the device reconnected; early data also lacks
	// forward secrecy against a later theft of the listener's ticket
	// keys. See SECURITY.md.
	Allow0RTT bool
	// TokenStore (dialer, with TLS) keeps the address-validation tokens
	// servers give for the next connection (RFC 9000 §8.1.3, a NEW_TOKEN
	// frame once the handshake completes): a Dial to a server whose
	// token it holds sends it in its first Initial, and a listener that
	// can still open it (issued by it in this process, under 24 hours
	// ago, to this IP address) skips the Retry, a round trip and a second
	// copy of the Initial; otherwise the Retry comes as without a token.
	// For a device that wakes, connects, reports and sleeps, with 0-RTT
	// (ClientSessionCache, Allow0RTT) its reading reaches the monitor
	// after 1.5 round trips instead of 2.5. nil: no tokens kept.
	// NewTokenStore is one in memory.
	TokenStore TokenStore
	// VerifyPeer, if set, is asked about the peer of every handshake once
	// TLS has verified its certificate chain (and tls.Config's own
	// VerifyConnection, if any, has passed), with its TLS state: a
	// resuming peer too, with the certificates of its first handshake
	// (crypto/tls keeps them in the ticket). A non-nil error refuses the
	// peer: the handshake fails with TLS's bad_certificate alert (RFC
	// 8446 §6.2; RFC 9001 §4.8), so the peer never gets a connection. On
	// a Listener the connection never reaches Accept and is counted under
	// HandshakeFailures.Refused, and the rejected-handshake warning logs
	// the error; Dial returns an error wrapping ErrHandshake,
	// ErrPeerRefused and the hook's error. It is for a check of what the
	// certificate says that the application cannot take: a device name
	// its storage cannot hold (fresh-monitor's monitor.VerifyPeerName), a
	// device it has revoked. Without a client certificate (a Listener
	// whose tls.Config does not request one) it is still called, with no
	// PeerCertificates. Not with Insecure: nothing is verified there.
	VerifyPeer func(tls.ConnectionState) error
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
	// controller with a non-default configuration, such as owd.New with a
	// tuned owd.Config); an error it returns fails the connection's setup.
	NewController func(mss cc.ByteCount) (cc.Controller, error)
	// UpdatePolicy names the update-rate policy, one of acp.PolicyNames()
	// ("acp", "acp-literal", "lazy"; see acp.NewPolicy). Default "acp".
	UpdatePolicy string
	// NewUpdatePolicy, if set, builds the update-rate policy instead of
	// UpdatePolicy: a fixed rate (acp.NewFixed), or a regulator with a
	// non-default acp.Config. size is the update size (MaxDatagram), for
	// acp.Config.UpdateSize. MaxUpdateRate does not apply to it.
	NewUpdatePolicy func(size cc.ByteCount) (acp.Policy, error)
	// MaxUpdateRate bounds the update rate, updates per second: the
	// application's sensing rate (the largest update rate, λ_max). Default 1000.
	MaxUpdateRate float64

	// MaxDatagram is the largest datagram sent, UDP payload bytes: the
	// ceiling of path MTU discovery (RFC 8899 DPLPMTUD). A connection
	// starts at 1200 bytes (QUIC's minimum, which every path that opened a
	// connection carries), probes 1280, 1400, 1452, … up to MaxDatagram
	// with padding packets, and sends its stream data in the largest size
	// acknowledged; it falls back to 1200 if full-size packets stop
	// arriving, and probes above again every 10 minutes. Default 1452: a
	// 1500-byte Ethernet MTU less IPv6 and UDP headers, so IPv4 and IPv6
	// Ethernet/Wi-Fi paths get their full size; set it higher for jumbo
	// frames or loopback (9000, 65000). It also sizes this end's receive
	// buffers: a peer's datagrams above it are dropped, which stops the
	// peer's discovery there. With DisablePathMTUDiscovery every datagram
	// is MaxDatagram (default then 1200, fixed). Updates may be up to
	// MaxDatagram whatever the discovered size.
	MaxDatagram int
	// DisablePathMTUDiscovery keeps the datagram size fixed at MaxDatagram
	// (default 1200 then): no probes, for a path whose MTU is known, or a
	// network that drops the large probes noisily.
	DisablePathMTUDiscovery bool

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
	// NoInband turns the in-band estimator off: without TrustPeerClock
	// every one-way delay then goes to the controller unsynchronised, and
	// delay-based controllers run on RTT/2 for the whole connection (with
	// NTPServer on both ends, set TrustPeerClock instead). As
	// quichook.Config's field of the same name.
	NoInband bool

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
	// MinAckDelay is the smallest ACK delay this end can honour, sent to
	// the peer as its consent to ACK frequency requests (the IETF draft
	// "QUIC Acknowledgment Frequency", min_ack_delay): a sending peer
	// whose ACKs queue on a narrow return path then asks this end to
	// acknowledge less often. Default 1 ms; negative: never asked (every
	// second packet acknowledged, as AckEvery says). At most MaxAckDelay.
	MinAckDelay time.Duration

	// SendBuffer is the most bytes Write buffers before it blocks (written,
	// not yet acknowledged). The buffer starts at 64 KiB and doubles,
	// up to SendBuffer, only while it is what holds the sender back: when
	// the congestion window would let more through than the buffer holds,
	// or when a buffer's worth is acknowledged in less than four minimum
	// RTTs. It so follows the congestion window, and SendBuffer matters
	// only where the window grows past it (faster or longer paths, or deep
	// queues). Its memory is up to twice the buffer's current size
	// (compaction stays cheap that way). Default 4 MiB (DefaultSendBuffer).
	SendBuffer int
	// ReceiveWindow is the most the stream's flow-control window and
	// receive buffer grow to, bytes: all the memory a slow reader can make
	// the receiver hold. The window starts at 64 KiB and doubles when the
	// reader empties it in less than four RTTs, as in quic-go's
	// auto-tuning. Below 64 KiB set the same value on both ends: a sender
	// assumes min(64 KiB, its own ReceiveWindow) until the peer's first
	// ACK. Default 4 MiB (DefaultReceiveWindow).
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
	// KeyUpdateInterval is how many packets this end protects with one
	// key before it updates its keys (RFC 9001 §6; the peer follows, and
	// Stats.KeyUpdates counts both). Default 2^22, half AES-GCM's
	// confidentiality limit (RFC 9001 §6.6), so on most connections no
	// update ever happens; set it lower to rotate the keys more often.
	// An update waits until the peer has followed the last one.
	KeyUpdateInterval int64

	// HandshakeTimeout is how long a connection's handshake may take:
	// Dial gives up after it (or when its ctx ends, if sooner), and a
	// Listener drops a connection that has not completed its handshake by
	// then (Accept never sees it); a Listener's Retry tokens stay valid as
	// long, at least 10 s. It bounds the whole handshake, not a silence:
	// through 30 % loss in bursts a few handshakes in a hundred take
	// longer than the default, almost all of it one silence (the
	// interop suite, bench/RESULTS.md); raise it on such links. Default
	// 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection that heard nothing for this long.
	// Default 30 s.
	IdleTimeout time.Duration
	// KeepAlive sends a PING after this long without sending anything the
	// peer must acknowledge, so a quiet connection is not idled out (and NAT
	// bindings stay open). Default IdleTimeout/3; negative: never.
	//
	// Each keep-alive is one small datagram each way (the PING and its
	// ACK), and it wakes the device's radio: at the default 10 s a
	// monitor with N quiet devices answers N/10 PINGs a second. A device
	// that sleeps between readings should turn it off (-1) and set
	// IdleTimeout above its sleep on both ends. A NAT on the path may then
	// forget its binding while it sleeps (home routers after a minute or
	// two, carrier NATs sooner) and give the device a new port when it
	// wakes: with TLS the server migrates the connection to it on the
	// device's first packet (see the package doc's "Connection
	// migration"), so the connection survives; in Insecure mode it does
	// not, and the device must dial again. What the server sends to a
	// binding that is gone is lost, and resent once the device's first
	// packet has moved the connection.
	KeepAlive time.Duration
	// Linger is how long Close waits for the peer to acknowledge stream
	// data already written. Default 5 s; negative: do not wait.
	Linger time.Duration

	// Logger receives debug logs, and a Listener's one warning line per
	// rejected handshake (remote, reason, err; rate-limited, see
	// HandshakeFailures); nil is silent.
	Logger *slog.Logger

	// Tracer, if set, is asked for a trace of every connection when it
	// starts (qlog.ConnInfo: role, the client's connection ID, the peer's
	// address) and is told its packets, losses, recovery metrics, OWD
	// samples, clock-offset estimates and update ages until it ends; the
	// trace is then closed. qlog.DirTracer(dir) writes one qlog file per
	// connection that qvis draws; qlog.FromEnv() does so into $QLOGDIR.
	// A nil trace leaves that connection untraced; an error is logged
	// (Logger) and the connection runs untraced. nil (the default): no
	// tracing, at the cost of one nil check per event.
	Tracer qlog.NewTracer
}

// withDefaults validates c and fills the defaults this package applies
// itself; the protocol's own (MaxDatagram, AckEvery, MaxAckDelay,
// IdleTimeout, KeepAlive, SendBuffer, ReceiveWindow, MaxStreamGaps,
// MaxUpdateFuture, the default controller) are the session's, resolved
// and checked by session.Config.Resolve, so each default is written once.
func (c Config) withDefaults() (Config, error) {
	field := func(name, format string, a ...any) (Config, error) {
		return Config{}, fresh.InvalidField("transport.Config."+name, format, a...)
	}
	// Unknown names fail here, at Listen or Dial, not when the first
	// connection builds its controller.
	if c.NewController == nil && c.CC != "" {
		if _, err := cc.New(c.CC, 1200); err != nil {
			if slices.Contains(acp.PolicyNames(), c.CC) {
				return field("CC", "%q is an update policy, not a congestion controller: set UpdatePolicy to it, and CC to one of %v", c.CC, cc.Names())
			}
			return Config{}, fresh.WrapInvalid("transport.Config.CC", err)
		}
	}
	if c.UpdatePolicy == "" {
		c.UpdatePolicy = acp.PolicyACP
	}
	if c.NewUpdatePolicy == nil && !slices.Contains(acp.PolicyNames(), c.UpdatePolicy) {
		return field("UpdatePolicy", "%q: want one of %s, or set NewUpdatePolicy", c.UpdatePolicy, strings.Join(acp.PolicyNames(), ", "))
	}
	if c.MaxUpdateRate < 0 {
		return field("MaxUpdateRate", "%v < 0", c.MaxUpdateRate)
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
			return field(f.name, "%d is not a code point: use the dscp constants, dscp.Parse or dscp.FromCode (a plain number such as 46 would not be the code point 46)", uint8(*f.d))
		}
		if !f.d.IsSet() {
			*f.d = f.def
		}
	}
	if c.HandshakeTimeout < 0 {
		return field("HandshakeTimeout", "%v is negative (0: the default)", c.HandshakeTimeout)
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.TLS == nil && !c.Insecure:
		return field("TLS", "not set: set Config.TLS (a certificate on the listener; RootCAs, and ServerName if the address is not the name, on the dialer), or Insecure: true for plaintext (unsafe: anyone on the path can read, forge and close connections)")
	case c.TLS != nil && c.Insecure:
		return field("Insecure", "set together with TLS: choose one")
	case c.Allow0RTT && c.Insecure:
		return field("Allow0RTT", "set with Insecure: 0-RTT resumes a TLS session, set TLS instead")
	case c.VerifyPeer != nil && c.Insecure:
		return field("VerifyPeer", "set with Insecure: a plaintext peer presents nothing to verify, set TLS instead")
	}
	// The protocol's settings: the session fills and checks them; the
	// resolved datagram size sizes this end's buffers.
	sc, err := c.sessionConfig().Resolve()
	if err != nil {
		return Config{}, err
	}
	c.MaxDatagram = sc.MaxDatagram
	if c.TLS != nil {
		// Once per endpoint: every connection shares this config (and
		// with it the keys that encrypt session tickets).
		c.TLS = session.PrepareTLS(c.TLS.Clone())
		if c.VerifyPeer != nil {
			c.TLS.VerifyConnection = verifyPeer(c.TLS.VerifyConnection, c.VerifyPeer)
		}
	}
	return c, nil
}

// verifyPeer is a tls.Config.VerifyConnection that runs the
// application's own (if any), then Config.VerifyPeer, whose refusal it
// marks with ErrPeerRefused so that a Listener counts it under its own
// reason. crypto/tls calls it once the peer's chain is verified, on a
// full handshake and on a resumption alike, and answers an error with
// the bad_certificate alert.
func verifyPeer(tlsVerify, verify func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if tlsVerify != nil {
			if err := tlsVerify(cs); err != nil {
				return err
			}
		}
		if err := verify(cs); err != nil {
			return fmt.Errorf("%w: %w", ErrPeerRefused, err)
		}
		return nil
	}
}

// sessionConfig is what the protocol session needs of a Config. Zero
// fields stay zero: the session's defaults apply.
func (c *Config) sessionConfig() session.Config {
	var newController func(mss cc.ByteCount) (cc.Controller, error)
	controllerName := ""
	switch {
	case c.NewController != nil: // an application's: built in New, as its name is its own
		newController = c.NewController
	case c.CC != "":
		name := c.CC
		newController = func(mss cc.ByteCount) (cc.Controller, error) { return cc.New(name, mss) }
		controllerName = name // a registry name, checked at Listen or Dial: the session may build it late
	}
	newPolicy, policyName := c.NewUpdatePolicy, ""
	if newPolicy == nil {
		name, maxRate := c.UpdatePolicy, acp.Rate(c.MaxUpdateRate)
		policyName = name // a name checked at Listen or Dial: the session may build it late
		newPolicy = func(size cc.ByteCount) (acp.Policy, error) {
			return acp.NewPolicy(name, acp.Config{UpdateSize: size, MaxRate: maxRate})
		}
	}
	return session.Config{
		TLS:                     c.TLS,
		Allow0RTT:               c.Allow0RTT,
		MaxDatagram:             c.MaxDatagram,
		DisablePathMTUDiscovery: c.DisablePathMTUDiscovery,
		NewController:           newController,
		CC:                      controllerName,
		NewUpdatePolicy:         newPolicy,
		UpdatePolicy:            policyName,
		TrustPeerClock:          c.TrustPeerClock,
		NoInband:                c.NoInband,
		StreamDSCP:              c.StreamDSCP,
		UpdateDSCP:              c.UpdateDSCP,
		AckEvery:                c.AckEvery,
		MaxAckDelay:             c.MaxAckDelay,
		MinAckDelay:             c.MinAckDelay,
		IdleTimeout:             c.IdleTimeout,
		KeepAlive:               c.KeepAlive,
		SendBuffer:              c.SendBuffer,
		ReceiveWindow:           c.ReceiveWindow,
		MaxStreamGaps:           c.MaxStreamGaps,
		MaxUpdateFuture:         c.MaxUpdateFuture,
		// Packets per key: RFC 9001 §6's key update.
		KeyUpdateInterval: c.KeyUpdateInterval,
		// Built once per connection: each gets its own secret seed for
		// the packet numbers it skips (crypto/rand, via randomID).
		Seed: randomID(),
	}
}

// DefaultMaxDatagram is Config.MaxDatagram's default with path MTU
// discovery: its ceiling, 1452 bytes (a 1500-byte MTU less IPv6 and UDP
// headers).
const DefaultMaxDatagram = session.DefaultMaxDatagramPMTUD

// DefaultSendBuffer and DefaultReceiveWindow are Config.SendBuffer's and
// Config.ReceiveWindow's defaults, bytes: the most the stream's buffers
// grow to.
const (
	DefaultSendBuffer    = session.DefaultSendBuffer
	DefaultReceiveWindow = session.DefaultReceiveWindow
)

// ALPN is the TLS application protocol fresh negotiates by default.
const ALPN = session.ALPN

// maxAccepted is the largest datagram an endpoint accepts: its own
// MaxDatagram, and never less than an Initial's padded size.
func maxAccepted(maxDatagram int) int { return max(maxDatagram, wire.MinInitialSize) }
