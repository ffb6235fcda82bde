package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/clock/ntpclock"
	"github.com/fresh-udp/fresh/transport"
)

// NTPClock returns the system clock corrected by the NTP server (host or
// host:port) for transport.Config.Clock, synchronised once (for up to 2 s)
// before it returns and then in the background until stop is called. The
// program keeps it to report its state (ClockState); Config.NTPServer
// does the same without giving the clock back.
//
// A server that does not answer is not fatal: the clock stays
// unsynchronised, ClockState says so, and it keeps trying.
func NTPClock(server string, logger *slog.Logger) (nc *ntpclock.Clock, stop func(), err error) {
	nc, err = ntpclock.New(clock.NewSystem(), ntpclock.Config{Server: server, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	first, cancelFirst := context.WithTimeout(context.Background(), 2*time.Second)
	if err := nc.Sync(first); err != nil {
		logger.Warn("first NTP sync failed; continuing unsynchronised", "server", server, "err", err)
	}
	cancelFirst()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = nc.Run(ctx) })
	return nc, func() { cancel(); wg.Wait() }, nil
}

// ClockState says in a few words how far a sender's clocks can be trusted:
// this host's NTP state (if ntp is not nil) and whether the one-way delays
// its controller gets back are measured yet. The receiver corrects each
// sample with its in-band estimate of the clock offset (clock.Inband);
// until that estimate is trusted (a few seconds of packets) a delay-based
// controller acts on half the round-trip time instead.
func ClockState(s transport.Stats, ntp *ntpclock.Clock) string {
	out := ""
	if ntp != nil {
		st := ntp.Status()
		switch {
		case st.Synchronized:
			out = fmt.Sprintf("ntp synced (offset %v, stratum %d); ", st.Offset.Round(100*time.Microsecond), st.Stratum)
		case st.Err != nil:
			out = fmt.Sprintf("ntp NOT synced (%v); ", st.Err)
		default:
			out = "ntp NOT synced; "
		}
	}
	switch {
	// A loss-based controller reports no signal; its MinOWD is the smallest
	// trusted sample (0 until the peer's estimate is trusted).
	case s.Signal == cc.SignalOWD, s.Signal == cc.SignalNone && s.CC != "owd" && s.MinOWD > 0:
		return out + "one-way delays measured (the peer's clock-offset estimate is trusted)"
	case s.Signal == cc.SignalRTT && s.CC == "owd":
		return out + "one-way delays not available (the peer is still learning the clock offset, " +
			"or no stream data flows to measure): RTT/2 stands in"
	case s.Signal == cc.SignalRTT:
		return out + "the controller acts on round-trip times"
	}
	return out + "no delay samples yet"
}
