//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package transport

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With SO_REUSEPORT (ListenUDP's reusePort) two Listeners (two monitor
// processes, in production)
// share one port; without it the second cannot bind. The kernel spreads
// sources between them, and each source's packets keep going to the one
// that accepted it: its updates arrive there.
func TestReusePortSharesOnePort(t *testing.T) {
	reused := func(addr string) *Listener {
		udp, err := ListenUDP(addr, true)
		require.NoError(t, err)
		tr := &Transport{Conn: udp}
		l, err := tr.Listen(testConfig(Config{}))
		require.NoError(t, err)
		t.Cleanup(func() {
			tr.Close()
			udp.Close()
		})
		return l
	}
	a := reused("127.0.0.1:0")
	_, err := Listen(a.Addr().String(), testConfig(Config{}))
	require.Error(t, err, "without SO_REUSEPORT the port is taken")
	b := reused(a.Addr().String())
	require.Equal(t, a.Addr().String(), b.Addr().String())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[*Listener]int{}
	var wg sync.WaitGroup
	for _, l := range []*Listener{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s, err := l.Accept(ctx)
				if err != nil {
					return
				}
				go func() {
					// This source's last update reaches this Listener
					// (earlier ones may be superseded, never misrouted).
					for {
						u, err := s.ReadUpdate(ctx)
						if err != nil {
							return
						}
						if u.Payload[0] == 2 {
							break
						}
					}
					mu.Lock()
					got[l]++
					mu.Unlock()
				}()
			}
		}()
	}
	const sources = 16
	var clients []*Conn
	for range sources {
		c, err := Dial(ctx, a.Addr().String(), testConfig(Config{}))
		require.NoError(t, err)
		clients = append(clients, c)
	}
	for i := range 3 {
		for _, c := range clients {
			require.NoError(t, c.SendUpdate([]byte{byte(i)}))
		}
		// Each round is sent before the next replaces it.
		for _, c := range clients {
			require.Eventually(t, func() bool { return c.Stats().UpdatesSent > int64(i) }, 10*time.Second, time.Millisecond)
		}
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got[a]+got[b] == sources
	}, 10*time.Second, 10*time.Millisecond, "every source's updates reached the Listener that accepted it")
	// 16 source ports hashed onto 2 sockets all landing on one: 2⁻¹⁵.
	require.Positive(t, got[a], "the kernel spreads sources over both")
	require.Positive(t, got[b], "the kernel spreads sources over both")
	for _, c := range clients {
		c.Close()
	}
	cancel()
	wg.Wait()
}
