package transport

import (
	"context"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/realtime"
)

// The measurements behind the listener's defences are part of the long
// real-time suite (package internal/realtime): they take tens of seconds
// and print numbers rather than assert them.
//
//	FRESH_REALTIME=1 go test -run Measure -v ./transport
func skipUnlessMeasuring(t *testing.T) {
	t.Helper()
	realtime.Require(t)
}

// pacedFlood sends n token-less Initials at about rate per second from
// sockets source ports, until n are sent or stop is closed.
func pacedFlood(t *testing.T, addr net.Addr, n int, rate float64, sockets int, stop <-chan struct{}) {
	t.Helper()
	conns := make([]*net.UDPConn, sockets)
	for i := range conns {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Error(err) // may run on another goroutine than the test's
			return
		}
		defer c.Close()
		conns[i] = c
	}
	const tick = 10 * time.Millisecond
	perTick := max(1, int(rate*tick.Seconds()))
	start := time.Now()
	for sent := 0; sent < n; {
		for range min(perTick, n-sent) {
			_, _ = conns[sent%sockets].WriteTo(initialDatagram(randomID(), nil), addr)
			sent++
		}
		select {
		case <-stop:
			return
		default:
		}
		if d := time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))); d > 0 {
			time.Sleep(d) // the pacing itself: the rate is what the measurement sets
		}
	}
}

func heapAndGoroutines() (uint64, int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, runtime.NumGoroutine()
}

// State a 50,000-Initial flood at 20,000/s leaves in the listener's
// process, with Retry (default) and, for comparison, a 2,000-Initial one
// without it.
func TestMeasureInitialFloodState(t *testing.T) {
	skipUnlessMeasuring(t)
	for _, tc := range []struct {
		name string
		tr   *Transport
		n    int
	}{{"retry", &Transport{}, 50_000}, {"no-retry", &Transport{DisableRetry: true}, 2_000}} {
		l := listenWith(t, tc.tr, Config{})
		port := l.Addr().(*net.UDPAddr).Port
		drops0 := udpDrops(port)
		heap0, g0 := heapAndGoroutines()
		pacedFlood(t, l.Addr(), tc.n, 20_000, 50, nil)
		// Measured once the listener has handled every Initial it got:
		// answered with a Retry, refused at a limit, or a connection.
		pollUntil(10*time.Second, func() bool {
			st := l.Stats()
			return listenerDrops(st)+int64(st.Connections)+st.HandshakeTimeouts >= int64(tc.n)-(udpDrops(port)-drops0)
		})
		heap1, g1 := heapAndGoroutines()
		st := l.Stats()
		t.Logf("%s: %d Initials at 20k/s: %d connections, heap %+.1f MB, goroutines +%d; %+v",
			tc.name, tc.n, st.Connections, float64(int64(heap1)-int64(heap0))/1e6, g1-g0, st)
		l.Close()
	}
}

// Legitimate Dials during a 300 Initials/s flood against an application
// that accepts 10 connections a second (the scenario), with and
// without Retry.
func TestMeasureDialDuringFlood(t *testing.T) {
	skipUnlessMeasuring(t)
	for _, tr := range []*Transport{{}, {DisableRetry: true}} {
		l := listenWith(t, tr, Config{})
		stop := make(chan struct{})
		var accepted []*Conn
		acceptDone := make(chan struct{})
		go func() {
			defer close(acceptDone)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				c, err := l.Accept(ctx)
				cancel()
				if err == nil {
					accepted = append(accepted, c)
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		floodDone := make(chan struct{})
		go func() { defer close(floodDone); pacedFlood(t, l.Addr(), 1<<30, 300, 50, stop) }()
		// The scenario: the flood runs for 2 s, filling what it can, before
		// the first legitimate Dial. This sleep is the scenario's timeline.
		time.Sleep(2 * time.Second)
		const dials = 6
		var ok atomic.Int64
		var wg sync.WaitGroup
		for i := range dials {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 500 * time.Millisecond) // the Dials arrive spread over the flood, as in the scenario
				c, err := Dial(context.Background(), l.Addr().String(), testConfig(Config{}))
				if err == nil {
					ok.Add(1)
					c.Close()
				}
			}()
		}
		wg.Wait()
		close(stop)
		<-floodDone
		<-acceptDone
		st := l.Stats()
		t.Logf("DisableRetry=%v: %d/%d Dials succeeded; %+v", tr.DisableRetry, ok.Load(), dials, st)
		l.Close()
		for _, c := range accepted {
			c.Close()
		}
	}
}

// The handshake time Retry adds on loopback: Dial times with and without
// it, interleaved so that load on the machine hits both alike.
func TestMeasureRetryRTT(t *testing.T) {
	skipUnlessMeasuring(t)
	const n = 1000
	ls := []*Listener{listen(t, Config{}), listenWith(t, &Transport{DisableRetry: true}, Config{})}
	ds := [2][]time.Duration{}
	for _, l := range ls {
		acceptAll(l)
	}
	for range n {
		for i, l := range ls {
			start := time.Now()
			c, err := Dial(context.Background(), l.Addr().String(), testConfig(Config{}))
			require.NoError(t, err)
			ds[i] = append(ds[i], time.Since(start))
			c.Close()
		}
	}
	for i, name := range []string{"Retry", "no Retry"} {
		slices.Sort(ds[i])
		t.Logf("%s: Dial p10 %v, median %v, p90 %v over %d", name, ds[i][n/10], ds[i][n/2], ds[i][9*n/10], n)
	}
}
