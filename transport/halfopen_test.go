package transport

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// halfOpenFlood runs half-open handshakes (address validated by the
// Retry, then a ClientHello and silence) against l from the loopback
// addresses in srcs in turn, without pause, until the test ends: one
// goroutine, so that the flood leaves the genuine client a core. With
// first > 0 each source in turn first runs first of them alone (an
// attacker that fills the sources' parts one by one, then spends a fresh
// source on each place left).
func halfOpenFlood(t *testing.T, l *Listener, first int, srcs ...net.IP) {
	t.Helper()
	scfg := testConfig(Config{}).sessionConfigOrPanic()
	socks := make([]*net.UDPConn, len(srcs))
	for i, ip := range srcs {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
		if err != nil {
			t.Skipf("no loopback address %v here (Linux routes all of 127.0.0.0/8): %v", ip, err)
		}
		t.Cleanup(func() { udp.Close() })
		socks[i] = udp
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, udp := range socks {
			for i := 0; i < first && !stop.Load(); i++ {
				halfOpen(t, udp, l.Addr().(*net.UDPAddr), scfg, 1)
			}
		}
		for !stop.Load() {
			for _, udp := range socks {
				halfOpen(t, udp, l.Addr().(*net.UDPAddr), scfg, 1)
			}
		}
	})
	t.Cleanup(func() { stop.Store(true); wg.Wait() }) // before the sockets' and the listener's
}

// loopbackSources are n loopback addresses from 127.0.0.2 on: n sources.
func loopbackSources(n int) []net.IP {
	srcs := make([]net.IP, n)
	for i := range srcs {
		srcs[i] = net.IPv4(127, 0, 0, byte(2+i))
	}
	return srcs
}

// genuineDials dials l five times from 127.0.0.1 during a flood, each
// Dial within 10 s, and after each waits until refused (the flood's
// refusals) has grown: the Dials succeed while the flood goes on.
func genuineDials(t *testing.T, l *Listener, refused func(ListenerStats) int64) {
	t.Helper()
	for i := range 5 {
		before := refused(l.Stats())
		c, err := dialWithin(l, 10*time.Second)
		require.NoError(t, err, "genuine Dial %d during the flood: %+v", i, l.Stats())
		t.Cleanup(func() { c.Close() })
		require.Eventually(t, func() bool { return refused(l.Stats()) > before }, 10*time.Second, time.Millisecond,
			"the flood goes on, refused")
	}
}

// One source that starts handshakes and never finishes them (after
// address validation: Retry is on) fills its own part of MaxHandshakes
// and no more: its Initials beyond it are refused and counted, while a
// genuine client from another source (another loopback address: each is
// a source of its own, and loopback is not exempt from this limit) keeps
// connecting throughout. Before the per-source part, one loopback source
// took all 1,000 places of the default MaxHandshakes in 1.5 s and every
// Dial failed until its handshakes expired (HandshakeTimeout).
func TestHalfOpenFloodFromOneSource(t *testing.T) {
	const maxHS = 200 // the default part: a tenth, 20
	l := listenWith(t, &Transport{MaxHandshakes: maxHS}, Config{HandshakeTimeout: time.Minute})
	acceptAll(l)
	halfOpenFlood(t, l, 0, loopbackSources(1)...)

	refused := func() int64 { st := l.Stats(); return st.InitialsSourceHandshakeLimit + st.InitialsHandshakeLimit }
	require.Eventually(t, func() bool { return refused() > 0 }, time.Minute, time.Millisecond, "the flood reaches a limit")
	genuineDials(t, l, func(st ListenerStats) int64 { return st.InitialsSourceHandshakeLimit })
	st := l.Stats()
	t.Logf("held %d (the flood's %d and 5 genuine), flood Initials refused: %d at its source's limit, %d at MaxHandshakes",
		st.Connections, maxHS/10, st.InitialsSourceHandshakeLimit, st.InitialsHandshakeLimit)
	require.Zero(t, st.InitialsHandshakeLimit, "MaxHandshakes never reached")
	require.Equal(t, maxHS/10+5, st.Connections, "the flood holds its part, no more")
}

// A half-open flood from twelve sources, enough to fill MaxHandshakes
// with their parts: once nine tenths of the places are taken, a source
// with a handshake under way gets no more (counted as
// InitialsHandshakeLimit), and the last tenth is kept for sources with
// none, so a genuine client still connects. (With the parts alone, ten
// such sources took every place, as one did before.)
func TestHalfOpenFloodFromManySources(t *testing.T) {
	const maxHS, sources = 200, 12 // parts of 20, 20 places kept
	l := listenWith(t, &Transport{MaxHandshakes: maxHS}, Config{HandshakeTimeout: time.Minute})
	acceptAll(l)
	halfOpenFlood(t, l, 0, loopbackSources(sources)...)

	require.Eventually(t, func() bool { return l.Stats().InitialsHandshakeLimit > 0 }, time.Minute, time.Millisecond,
		"the flood reaches the places kept")
	genuineDials(t, l, func(st ListenerStats) int64 { return st.InitialsHandshakeLimit })
	st := l.Stats()
	flood := st.Connections - 5
	t.Logf("the flood holds %d of %d places (5 genuine connected); refused: %d at the places kept, %d at their parts",
		flood, maxHS, st.InitialsHandshakeLimit, st.InitialsSourceHandshakeLimit)
	require.GreaterOrEqual(t, flood, maxHS-maxHS/hsReserveShare)
	require.Less(t, flood, maxHS-maxHS/hsReserveShare+sources, "beyond nine tenths, at most one each from sources that had none")
}

// The half-open flood as the issue measured it, with the default limits:
// half-open handshakes from FRESH_FLOOD_SOURCES loopback addresses
// (127.0.0.2 on; default "1,12": one source, then twelve, enough to
// fill MaxHandshakes with their parts) for 12 s, longer than
// HandshakeTimeout, while a genuine client from 127.0.0.1 dials every
// 200 ms with a 2 s deadline. It prints how many Dials succeeded and the
// longest stretch of failures. FRESH_FLOOD_SEQUENTIAL=1 makes each
// source send its part (100) alone, in turn, before they all go on.
//
//	FRESH_REALTIME=1 go test -run TestMeasureHalfOpenFlood -v ./transport
func TestMeasureHalfOpenFlood(t *testing.T) {
	skipUnlessMeasuring(t)
	counts := []int{1, 12}
	if s := os.Getenv("FRESH_FLOOD_SOURCES"); s != "" {
		counts = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			counts = append(counts, n)
		}
	}
	for _, k := range counts {
		t.Run(fmt.Sprintf("sources=%d", k), func(t *testing.T) {
			l := listenWith(t, &Transport{}, Config{})
			acceptAll(l)
			start := time.Now()
			first := 0
			if os.Getenv("FRESH_FLOOD_SEQUENTIAL") != "" {
				first = (&Transport{}).maxHandshakesPerSource()
			}
			halfOpenFlood(t, l, first, loopbackSources(k)...)
			ok, fail := 0, 0
			var failedSince, longest time.Duration = -1, 0
			for time.Since(start) < 12*time.Second {
				at := time.Since(start)
				c, err := dialWithin(l, 2*time.Second)
				if err == nil {
					ok++
					c.Close()
					if failedSince >= 0 {
						longest = max(longest, at-failedSince)
						failedSince = -1
					}
				} else {
					fail++
					if failedSince < 0 {
						failedSince = at
					}
				}
				time.Sleep(200 * time.Millisecond)
			}
			if failedSince >= 0 {
				longest = max(longest, time.Since(start)-failedSince)
			}
			t.Logf("%d flood sources: %d of %d Dials succeeded, failing for %v at most; listener %+v",
				k, ok, ok+fail, longest.Round(10*time.Millisecond), l.Stats())
		})
	}
}
