package e2e_test

import (
	"context"
	"crypto/tls"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/transport"
)

// arrival is the first update of one connection at the monitor.
type arrival struct {
	at    time.Time
	early bool
}

// monitor accepts connections and reports when each one's first update
// reached the application.
func monitor(t *testing.T, l *transport.Listener) <-chan arrival {
	out := make(chan arrival, 64)
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				u, err := c.ReadUpdate(ctx)
				if err != nil {
					t.Errorf("monitor: %v", err)
					return
				}
				out <- arrival{time.Now(), u.Early}
			}()
		}
	}()
	return out
}

// firstUpdate dials through the relay, sends one update as soon as the
// connection takes one, and returns how long after the dial began the
// monitor's application had it.
func firstUpdate(t *testing.T, addr string, cfg transport.Config, early bool, arrivals <-chan arrival) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := transport.Dial
	if early {
		dial = transport.DialEarly
	}
	start := time.Now()
	c, err := dial(ctx, addr, cfg)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SendUpdate([]byte("status after waking")))
	select {
	case a := <-arrivals:
		return a.at.Sub(start), a.early
	case <-ctx.Done():
		t.Fatal("no update at the monitor")
		return 0, false
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// A device that resumes with 0-RTT has its first update at the monitor a
// round trip before one that runs a full handshake: through the relay at a
// 100 ms RTT, from the start of the dial to the monitor's ReadUpdate,
// with the listener's Retry on (the default) and off. The runs interleave
// full and 0-RTT dials; the test asserts the medians differ by at least
// half an RTT (expected: one RTT) and that every 0-RTT run's update came
// early.
func TestZeroRTTFirstUpdateEarlier(t *testing.T) {
	const rtt = 100 * time.Millisecond
	const runs = 5
	for _, tc := range []struct {
		name         string
		disableRetry bool
	}{{"retry", false}, {"no retry", true}} {
		t.Run(tc.name, func(t *testing.T) {
			udp, err := transport.ListenUDP("127.0.0.1:0", false)
			require.NoError(t, err)
			tr := &transport.Transport{Conn: udp, DisableRetry: tc.disableRetry}
			defer udp.Close()
			defer tr.Close()
			l, err := tr.Listen(withTLS(transport.Config{Allow0RTT: true}))
			require.NoError(t, err)
			r, err := emu.NewRelay(emu.RelayConfig{
				Target:  l.Addr().String(),
				Forward: path(10e6, rtt/2, 0, 1000), Reverse: path(10e6, rtt/2, 0, 1000), Seed: 7,
			})
			require.NoError(t, err)
			defer r.Close()
			arrivals := monitor(t, l)

			full := withTLS(transport.Config{})
			resume := withTLS(transport.Config{Allow0RTT: true})
			cache := &e2e.TicketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			resume.TLS.ClientSessionCache = cache
			// A first connection leaves the ticket.
			_, early := firstUpdate(t, r.Addr().String(), resume, true, arrivals)
			require.False(t, early)
			require.Eventually(t, func() bool { return cache.Tickets() > 0 }, 5*time.Second, time.Millisecond)

			var fullT, earlyT []time.Duration
			for range runs {
				d, early := firstUpdate(t, r.Addr().String(), full, false, arrivals)
				require.False(t, early)
				fullT = append(fullT, d)
				d, early = firstUpdate(t, r.Addr().String(), resume, true, arrivals)
				require.True(t, early, "resumed connection's update not in 0-RTT")
				earlyT = append(earlyT, d)
			}
			mf, me := median(fullT), median(earlyT)
			t.Logf("%s: dial to first update at the monitor, median of %d: full handshake %v %v, 0-RTT %v %v; %.2f RTT earlier",
				tc.name, runs, mf.Round(time.Millisecond), fullT, me.Round(time.Millisecond), earlyT, float64(mf-me)/float64(rtt))
			require.GreaterOrEqual(t, mf-me, rtt/2, "0-RTT not half an RTT earlier")
		})
	}
}
