package emu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// Timing assertions are one-sided where physics allows (never faster than
// the emulated minimum) and loose on the other side: loaded CI machines
// wake goroutines late.

func TestRelayRTT(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, 20*time.Millisecond),
		Reverse: path(100*mbps, 20*time.Millisecond),
	})
	c := dial(t, r)
	var rtts []time.Duration
	for i := range 8 {
		rtts = append(rtts, ping(t, c, uint64(i)))
	}
	slices.Sort(rtts)
	t.Logf("RTT min %v median %v max %v", rtts[0], rtts[len(rtts)/2], rtts[len(rtts)-1])
	require.GreaterOrEqual(t, rtts[0], 40*time.Millisecond, "faster than the emulated delay")
	require.LessOrEqual(t, rtts[len(rtts)/2], 70*time.Millisecond)

	st := r.Stats()
	require.Equal(t, uint64(8), st.Forward.DatagramsOut)
	require.Equal(t, uint64(8), st.Reverse.DatagramsOut)
	require.Equal(t, 1, st.Clients)
}

func TestRelayRateLimit(t *testing.T) {
	const (
		n    = 300
		size = 1200
		rate = 2 * mbps
	)
	srv := startServer(t, false)
	fwd := path(rate, 0)
	fwd.Queue.Limit = 1000
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: fwd, Reverse: path(rate, 0)})
	c := dial(t, r)
	buf := make([]byte, size)
	for i := range n {
		_, err := c.Write(buf)
		require.NoError(t, err)
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // a burst, but one the reader keeps up with
		}
	}
	// The paper figure is n·size·8/rate = 1.44 s; the link also serialises
	// the 28 bytes of IPv4+UDP header, and the spread is first to last
	// arrival, so (n−1)·(size+28)·8/rate = 1.467 s.
	eventually(t, 5*time.Second, func() bool { return srv.count() == n }, "not every datagram arrived")
	want := time.Duration(float64(n*size*8) / float64(rate) * float64(time.Second))
	spread := srv.spread()
	t.Logf("spread %v (paper figure %v), link busy %v", spread, want, r.Stats().Forward.Link.BusyTime)
	require.GreaterOrEqual(t, spread, want*8/10)
	require.LessOrEqual(t, spread, want*15/10)
}

func TestRelayRandomLoss(t *testing.T) {
	const n = 2000
	srv := startServer(t, false)
	fwd := path(gbps, 0)
	fwd.Loss = 0.1
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: fwd, Reverse: path(gbps, 0), Seed: 7})
	c := dial(t, r)
	buf := make([]byte, 100)
	for i := range n {
		_, err := c.Write(buf)
		require.NoError(t, err)
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // let the readers keep up with the kernel buffers
		}
	}
	eventually(t, 3*time.Second, func() bool {
		st := r.Stats().Forward
		return st.DatagramsIn == n && st.Link.Delivered+st.Link.DroppedRandom == n && srv.count() == int(st.DatagramsOut)
	}, "not all datagrams crossed")
	missing := float64(n-srv.count()) / n
	t.Logf("missing %.1f%% (random drops %d)", 100*missing, r.Stats().Forward.Link.DroppedRandom)
	require.InDelta(t, 0.10, missing, 0.05)
}

func TestRelayQueueOverflow(t *testing.T) {
	const n = 100
	srv := startServer(t, false)
	fwd := path(1*mbps, 0)
	fwd.Queue.Limit = 10
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: fwd, Reverse: path(1*mbps, 0)})
	c := dial(t, r)
	buf := make([]byte, 1000)
	for range n {
		_, err := c.Write(buf)
		require.NoError(t, err)
	}
	// Read (DatagramsIn) is not yet offered to the link: the scheduler
	// goroutine enqueues what the readers handed it, so wait for the link
	// to have seen the whole burst.
	eventually(t, 2*time.Second, func() bool {
		l := r.Stats().Forward.Link
		return l.Enqueued == n // offered, drops included
	}, "burst not offered to the link")
	st := r.Stats().Forward.Link
	t.Logf("overflow drops %d, max backlog %d", st.DroppedOverflow, st.MaxBacklog)
	// 100 × 1028 B at 1 Mbit/s take 0.8 s; the burst arrives in far less,
	// so a 10-packet queue must overflow.
	require.Positive(t, st.DroppedOverflow)
	require.LessOrEqual(t, st.MaxBacklog, 10)
}

func TestRelayKeepsClientsApart(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, 2*time.Millisecond),
		Reverse: path(100*mbps, 2*time.Millisecond),
	})
	conns := []*net.UDPConn{dial(t, r), dial(t, r)}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				_, _ = c.Write(fmt.Appendf(nil, "client-%d-%02d", i, k))
			}
		}()
	}
	wg.Wait()
	for i, c := range conns {
		buf := make([]byte, 64)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		for range 20 {
			k, err := c.Read(buf)
			require.NoError(t, err, "client %d", i)
			require.Equal(t, 11, k)
			require.Equal(t, fmt.Sprintf("client-%d-", i), string(buf[:9]), "client %d got another's echo", i)
		}
	}
	require.Equal(t, 2, r.Stats().Clients)
	srv.mu.Lock()
	require.Len(t, srv.sources, 2, "the server must see one source per client")
	srv.mu.Unlock()
}

func TestRelayClientLimit(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(gbps, 0), Reverse: path(gbps, 0), MaxClients: 1})
	a, b := dial(t, r), dial(t, r)
	ping(t, a, 1)
	_, err := b.Write([]byte("hello"))
	require.NoError(t, err)
	eventually(t, 2*time.Second, func() bool { return r.Stats().DroppedNoClientSlot == 1 }, "second client not refused")
	require.Equal(t, 1, r.Stats().Clients)
}

func TestRelayOversize(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(gbps, 0), Reverse: path(gbps, 0), MaxDatagram: 100})
	c := dial(t, r)
	_, err := c.Write(make([]byte, 101))
	require.NoError(t, err)
	ping(t, c, 3) // 8 bytes pass
	st := r.Stats().Forward
	require.Equal(t, uint64(1), st.Oversize)
	require.Equal(t, uint64(1), st.DatagramsIn)
}

func TestRelayLargeDatagram(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: path(gbps, 0), Reverse: path(gbps, 0)})
	c := dial(t, r)
	msg := make([]byte, 9000) // beyond the small buffers
	for i := range msg {
		msg[i] = byte(i)
	}
	_, err := c.Write(msg)
	require.NoError(t, err)
	buf := make([]byte, 65536)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, msg, buf[:n])
	require.Equal(t, uint64(9000+headerBytesV4), r.Stats().Forward.Link.DeliveredBytes)
}

func TestRelaySetPath(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, 5*time.Millisecond),
		Reverse: path(100*mbps, 5*time.Millisecond),
	})
	c := dial(t, r)
	before := ping(t, c, 1)
	require.GreaterOrEqual(t, before, 10*time.Millisecond)
	require.Less(t, before, 50*time.Millisecond)

	d := scenario.Duration(50 * time.Millisecond)
	require.NoError(t, r.SetPath(&scenario.PathChange{Delay: &d}, nil))
	after := ping(t, c, 2)
	t.Logf("RTT before %v, after the forward delay went to 50 ms %v", before, after)
	require.GreaterOrEqual(t, after, 55*time.Millisecond)
	require.Less(t, after, 100*time.Millisecond)

	bad := scenario.Duration(-time.Millisecond)
	err := r.SetPath(&scenario.PathChange{Delay: &d}, &scenario.PathChange{Delay: &bad})
	require.ErrorIs(t, err, ErrInvalidConfig)
	zero := scenario.Rate(0)
	require.ErrorIs(t, r.SetPath(&scenario.PathChange{Rate: &zero}, nil), ErrInvalidConfig)
}

func TestRelayCloseStopsEverything(t *testing.T) {
	srv := startServer(t, true)
	settle := func(limit int) int {
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(2 * time.Second); n > limit && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			time.Sleep(10 * time.Millisecond)
		}
		return n
	}
	base := runtime.NumGoroutine() // the test server's goroutine is already running
	r, err := NewRelay(RelayConfig{
		Target:  srv.addr(),
		Forward: path(10*mbps, 30*time.Millisecond),
		Reverse: path(10*mbps, 30*time.Millisecond),
	})
	require.NoError(t, err)
	a, b := dial(t, r), dial(t, r)
	ping(t, a, 1)
	ping(t, b, 2)
	// Leave packets inside the links: they are dropped by Close.
	for range 20 {
		_, _ = a.Write(make([]byte, 1000))
	}
	require.Greater(t, runtime.NumGoroutine(), base, "relay goroutines not running")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close must be idempotent")
	require.LessOrEqual(t, settle(base), base, "goroutines leaked")

	st := r.Stats()
	require.Equal(t, 2, st.Clients)
	require.ErrorIs(t, r.SetPath(nil, nil), ErrClosed)
	// The relay's sockets are closed: writes to it go nowhere, no panic.
	_, _ = a.Write([]byte("after close"))
}

func TestNewRelayValidates(t *testing.T) {
	ok := path(mbps, 0)
	for name, cfg := range map[string]RelayConfig{
		"no target":       {Forward: ok, Reverse: ok},
		"bad target":      {Target: "nonsense:port:x", Forward: ok, Reverse: ok},
		"bad listen":      {Listen: "nonsense:port:x", Target: "127.0.0.1:9", Forward: ok, Reverse: ok},
		"no forward rate": {Target: "127.0.0.1:9", Reverse: ok},
		"no reverse rate": {Target: "127.0.0.1:9", Forward: ok},
		"bad loss":        {Target: "127.0.0.1:9", Forward: scenario.Path{Rate: ok.Rate, Loss: 2}, Reverse: ok},
		"bad discipline":  {Target: "127.0.0.1:9", Forward: scenario.Path{Rate: ok.Rate, Queue: scenario.Queue{Discipline: "red"}}, Reverse: ok},
		"bad max":         {Target: "127.0.0.1:9", Forward: ok, Reverse: ok, MaxDatagram: 70000},
		"negative spin":   {Target: "127.0.0.1:9", Forward: ok, Reverse: ok, Spin: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewRelay(cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestRelayServerDown(t *testing.T) {
	// A target nobody listens on: writes may fail with ECONNREFUSED
	// (counted), nothing panics, Close still works.
	srv := startServer(t, false)
	target := srv.addr()
	require.NoError(t, srv.conn.Close())
	r := newRelay(t, RelayConfig{Target: target, Forward: path(gbps, 0), Reverse: path(gbps, 0)})
	c := dial(t, r)
	for range 10 {
		_, _ = c.Write([]byte("anyone?"))
		time.Sleep(time.Millisecond)
	}
	eventually(t, 2*time.Second, func() bool {
		st := r.Stats().Forward
		return st.DatagramsOut+st.WriteErrors == 10
	}, "datagrams unaccounted for")
	st := r.Stats()
	t.Logf("out %d, write errors %d, back read errors %d", st.Forward.DatagramsOut, st.Forward.WriteErrors, st.Reverse.ReadErrors)
	require.NoError(t, r.Close())
}

func TestRelaySpin(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, 10*time.Millisecond),
		Reverse: path(100*mbps, 10*time.Millisecond),
		Spin:    2 * time.Millisecond,
	})
	c := dial(t, r)
	var rtts []time.Duration
	for i := range 5 {
		rtts = append(rtts, ping(t, c, uint64(i)))
	}
	slices.Sort(rtts)
	t.Logf("spin RTT min %v median %v", rtts[0], rtts[len(rtts)/2])
	require.GreaterOrEqual(t, rtts[0], 20*time.Millisecond)
	require.LessOrEqual(t, rtts[len(rtts)/2], 80*time.Millisecond) // spinning on a loaded 2-core CI box is slow
}

// The link model is the simulator's: spot-check that the relay passes the
// scenario's queue through (CAKE builds, and its counters appear).
func TestRelayCakeQueue(t *testing.T) {
	srv := startServer(t, true)
	p := path(10*mbps, time.Millisecond)
	p.Queue = scenario.Queue{Discipline: netem.DisciplineCake}
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: p, Reverse: p})
	c := dial(t, r)
	ping(t, c, 1)
	require.Equal(t, uint64(1), r.Stats().Forward.Link.Delivered)
}

// Rebind moves each client to a new source port at the server, as a NAT
// that rebinds, and RebindTo to a new address and port, as a NAT that maps
// it to another of its external addresses: the client keeps its slot and
// its echoes come back through each new back socket.
func TestRelayRebind(t *testing.T) {
	srv := startServer(t, true)
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, time.Millisecond),
		Reverse: path(100*mbps, time.Millisecond),
	})
	c := dial(t, r)
	ping(t, c, 1)
	n, err := r.Rebind()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ping(t, c, 2)
	for i, a := range []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")} {
		n, err := r.RebindTo(a)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		ping(t, c, uint64(i+3))
	}
	srv.mu.Lock()
	require.Len(t, srv.sources, 4, "the server saw the client from a new port each time")
	addrs := map[netip.Addr]int{}
	for src, k := range srv.sources {
		require.Equal(t, 1, k, "source %v", src)
		addrs[src.Addr()]++
	}
	srv.mu.Unlock()
	require.Equal(t, map[netip.Addr]int{
		netip.MustParseAddr("127.0.0.1"): 2, netip.MustParseAddr("127.0.0.2"): 1, netip.MustParseAddr("127.0.0.3"): 1,
	}, addrs, "Rebind keeps the address, RebindTo moves it")
	st := r.Stats()
	require.Equal(t, 1, st.Clients, "the same slot")
	require.Equal(t, uint64(3), st.Rebinds)
	require.NoError(t, r.Close())
	_, err = r.Rebind()
	require.ErrorIs(t, err, ErrClosed)
}

// Filter sees every datagram read, in both directions, and drops those it
// refuses (counted, never offered to the link); Observe sees those
// written, with their direction and client.
func TestRelayFilterAndObserve(t *testing.T) {
	srv := startServer(t, true)
	var mu sync.Mutex
	var filtered, observed []string
	dropEchoes := 2
	r := newRelay(t, RelayConfig{
		Target:  srv.addr(),
		Forward: path(100*mbps, time.Millisecond),
		Reverse: path(100*mbps, time.Millisecond),
		Filter: func(d Datagram) bool {
			mu.Lock()
			defer mu.Unlock()
			filtered = append(filtered, fmt.Sprintf("%v %x", d.Forward, d.Data))
			if !d.Forward && dropEchoes > 0 {
				dropEchoes--
				return false // the server's first two answers
			}
			return true
		},
		Observe: func(d Datagram) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, fmt.Sprintf("%v %x", d.Forward, d.Data))
		},
	})
	c := dial(t, r)
	for seq := uint64(1); seq <= 3; seq++ {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], seq)
		_, err := c.Write(b[:])
		require.NoError(t, err)
		eventually(t, 2*time.Second, func() bool { return srv.count() == int(seq) }, "the server got it")
	}
	// Only the third echo comes back.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, uint64(3), binary.BigEndian.Uint64(buf[:n]))
	eventually(t, time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(observed) == 4
	}, "observed")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, filtered, 6, "three datagrams each way")
	require.Equal(t, []string{
		"true 0000000000000001", "true 0000000000000002", "true 0000000000000003", "false 0000000000000003",
	}, observed)
	st := r.Stats()
	require.Equal(t, uint64(2), st.Reverse.Filtered)
	require.Zero(t, st.Forward.Filtered)
	require.Equal(t, uint64(1), st.Reverse.DatagramsIn, "filtered datagrams are not offered to the link")
}

// A corrupting path (bench/netem's Corrupt) delivers each datagram with
// one bit flipped: the relay's buffer is the link's Data.
func TestRelayCorrupts(t *testing.T) {
	srv := startServer(t, true)
	fwd := path(100*mbps, time.Millisecond)
	fwd.Corrupt = 1
	var corrupted atomic.Int64
	r := newRelay(t, RelayConfig{Target: srv.addr(), Forward: fwd, Reverse: path(100*mbps, time.Millisecond),
		Observe: func(d Datagram) {
			if d.Corrupted != d.Forward {
				panic("only the forward link corrupts, every datagram")
			}
			if d.Corrupted {
				corrupted.Add(1)
			}
		}})
	c := dial(t, r)
	sent := bytes.Repeat([]byte{0x5A}, 100)
	for range 20 {
		_, err := c.Write(sent)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		buf := make([]byte, 200)
		n, err := c.Read(buf)
		require.NoError(t, err)
		require.Equal(t, len(sent), n)
		flipped := 0
		for i := range n {
			flipped += bits.OnesCount8(buf[i] ^ sent[i])
		}
		require.Equal(t, 1, flipped, "one bit flipped on the way")
	}
	eventually(t, time.Second, func() bool { return corrupted.Load() == 20 }, "Observe saw every corrupted datagram as such")
	require.Equal(t, uint64(20), r.Stats().Forward.Link.Corrupted)
	require.Zero(t, r.Stats().Reverse.Link.Corrupted)
}
