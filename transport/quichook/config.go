package quichook

import (
	"log/slog"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/owd" // registers "owd" and "owd-eq2"
)

// Config configures a PacketConn. The zero value is valid: every zero field takes
// the default written beside it. The fields that package transport's
// Config also has carry the same names and meanings.
type Config struct {
	// CC names the congestion controller in cc's registry ("owd",
	// "cubic", "reno", "htcp", "rttdelay", …; default owd.Name). Every
	// peer gets its own.
	CC string
	// NewController, if set, builds each peer's controller instead of CC
	// (a controller by value: a tuned owd.Config, say); an error it
	// returns leaves that peer plain QUIC (Stats.PeersRefused).
	NewController func(mss cc.ByteCount) (cc.Controller, error)
	// MaxDatagram is the segment size, bytes, the controller counts its
	// window in (default DefaultMaxDatagram: quic-go's largest datagram,
	// 1452 bytes; the shim header is counted in flight but not here).
	MaxDatagram int
	// Clock reads time (default clock.NewSystem()). An *ntpclock.Clock
	// makes the send and arrival stamps NTP-corrected.
	Clock clock.Clock
	// TrustPeerClock says both hosts' clocks are synchronised already (NTP
	// on both, or one host): one-way delays are taken from the stamps as
	// they are and reported synchronised. Default: the in-band estimator
	// (clock.Inband) learns the offset from the shim's own stamps, and
	// until it has, samples go out unsynchronised so that delay-based
	// controllers use RTT/2 (see package owd, "RTT fallback").
	TrustPeerClock bool
	// NoInband disables the in-band estimator: without TrustPeerClock every
	// sample then goes out unsynchronised.
	NoInband bool
	// QueuePackets bounds each peer's queue of datagrams waiting for the
	// controller's window and pacer (default 64). QueueWait is how long a
	// write from quic-go waits for room before the datagram is dropped
	// and counted (default 100 ms): the wait is the back-pressure that
	// stops quic-go packing packets the controller will not send soon (its
	// send queue fills and it pauses), the drop the bound on it.
	QueuePackets int
	QueueWait    time.Duration
	// The hook's receiver acknowledges shimmed datagrams with feedback
	// datagrams (the hook's ACKs, carrying the one-way delays), named as
	// transport.Config's ACK settings are. AckEvery is how many data
	// datagrams one feedback datagram covers normally (default 2, like a
	// TCP or QUIC receiver's ACK every other packet; at most 32, what one
	// feedback datagram carries); MinAckInterval spaces feedback
	// datagrams at least that far apart unless 32 samples are waiting
	// (default 1 ms: at loopback rates, where datagrams come microseconds
	// apart, it bounds the feedback datagrams, each a syscall at both
	// ends); MaxAckDelay is how long the first waiting datagram may wait
	// (default 2 ms).
	AckEvery       int
	MinAckInterval time.Duration
	MaxAckDelay    time.Duration
	// DSCP marks quic-go's datagrams, AckDSCP the feedback datagrams
	// (defaults: DSCP best effort, AckDSCP the same as DSCP). Per
	// datagram on Linux, the socket's class elsewhere (as in transport).
	DSCP, AckDSCP dscp.Codepoint
	// MaxPeers bounds the validated peers (addresses that showed this
	// end's cookie, each with its own controller and clock state), and
	// separately the unvalidated entries (default 256 each). At the bound
	// a new validated peer replaces the one silent for longest if that one
	// has been for 30 s with nothing in flight; otherwise datagrams of
	// further peers pass through as plain QUIC, counted in
	// Stats.PeersRefused. A new unvalidated entry replaces the
	// unvalidated one heard from longest ago (Stats.UnvalidatedEvicted).
	MaxPeers int
	// Logger receives the hook's logs (nil: silent).
	Logger *slog.Logger
}

// Defaults of Config (see the fields).
const (
	DefaultCC             = owd.Name
	DefaultMaxDatagram    = 1452
	DefaultQueuePackets   = 64
	DefaultQueueWait      = 100 * time.Millisecond
	DefaultAckEvery       = 2
	DefaultMinAckInterval = time.Millisecond
	DefaultMaxAckDelay    = 2 * time.Millisecond
	DefaultMaxPeers       = 256
)

// ErrInvalidConfig is what every Config validation error wraps: the one
// value package transport and the controllers' packages export under the
// same name, so errors.Is matches whichever layer refused.
var ErrInvalidConfig = fresh.ErrInvalidConfig

func (c Config) withDefaults() (Config, error) {
	if c.CC == "" {
		c.CC = DefaultCC
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	if c.QueuePackets == 0 {
		c.QueuePackets = DefaultQueuePackets
	}
	if c.QueueWait == 0 {
		c.QueueWait = DefaultQueueWait
	}
	if c.AckEvery == 0 {
		c.AckEvery = DefaultAckEvery
	}
	if c.MinAckInterval == 0 {
		c.MinAckInterval = DefaultMinAckInterval
	}
	if c.MaxAckDelay == 0 {
		c.MaxAckDelay = DefaultMaxAckDelay
	}
	if c.AckDSCP == 0 {
		c.AckDSCP = c.DSCP
	}
	if c.MaxPeers == 0 {
		c.MaxPeers = DefaultMaxPeers
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	const f = "quichook.Config."
	switch {
	case c.MaxDatagram < 512 || c.MaxDatagram > 65535:
		return c, fresh.InvalidField(f+"MaxDatagram", "%d outside 512..65535", c.MaxDatagram)
	case c.QueuePackets < 1:
		return c, fresh.InvalidField(f+"QueuePackets", "%d < 1", c.QueuePackets)
	case c.QueueWait < 0:
		return c, fresh.InvalidField(f+"QueueWait", "%v negative", c.QueueWait)
	case c.AckEvery < 1 || c.AckEvery > maxSamples:
		return c, fresh.InvalidField(f+"AckEvery", "%d outside 1..%d", c.AckEvery, maxSamples)
	case c.MinAckInterval < 0:
		return c, fresh.InvalidField(f+"MinAckInterval", "%v negative", c.MinAckInterval)
	case c.MaxAckDelay < 0:
		return c, fresh.InvalidField(f+"MaxAckDelay", "%v negative", c.MaxAckDelay)
	case c.MaxPeers < 1:
		return c, fresh.InvalidField(f+"MaxPeers", "%d < 1", c.MaxPeers)
	case c.DSCP != 0 && !c.DSCP.IsSet():
		return c, fresh.InvalidField(f+"DSCP", "must be built with dscp.Parse or the constants")
	case c.AckDSCP != 0 && !c.AckDSCP.IsSet():
		return c, fresh.InvalidField(f+"AckDSCP", "must be built with dscp.Parse or the constants")
	}
	if c.NewController == nil {
		name := c.CC
		if _, err := cc.New(name, cc.ByteCount(c.MaxDatagram)); err != nil {
			return c, fresh.WrapInvalid(f+"CC", err)
		}
		c.NewController = func(mss cc.ByteCount) (cc.Controller, error) { return cc.New(name, mss) }
	}
	return c, nil
}
