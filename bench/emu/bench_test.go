package emu

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRelayThroughput measures datagrams per second through the
// relay on loopback: a 1 Gbit/s link with no delay, 1200-byte datagrams,
// a window of 64 datagrams in flight (the sender waits for the sink to
// have received all but 64), so kernel socket buffers never overflow and
// every datagram is counted. allocs/op is per datagram, for the whole
// process (relay, sender and sink); the relay's own steady-state share
// is 0.
func BenchmarkRelayThroughput(b *testing.B) {
	const (
		size   = 1200
		window = 64
	)
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(b, err)
	_ = sink.SetReadBuffer(4 << 20)
	defer sink.Close()
	received := make(chan struct{}, window*2)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := sink.Read(buf); err != nil {
				close(received)
				return
			}
			received <- struct{}{}
		}
	}()

	r, err := NewRelay(RelayConfig{Target: sink.LocalAddr().String(), Forward: path(gbps, 0), Reverse: path(gbps, 0)})
	require.NoError(b, err)
	defer r.Close()
	c, err := net.DialUDP("udp", nil, r.Addr().(*net.UDPAddr))
	require.NoError(b, err)
	defer c.Close()

	msg := make([]byte, size)
	stall := time.NewTimer(time.Hour) // reused: time.After would allocate per wait
	await := func() {
		stall.Reset(5 * time.Second) // generous: loaded CI machines stall goroutines
		select {
		case <-received:
		case <-stall.C:
			b.Fatalf("stalled: %+v", r.Stats().Forward)
		}
	}
	send := func(n int) {
		inFlight := 0
		for range n {
			for ; inFlight >= window; inFlight-- {
				await()
			}
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			inFlight++
		}
		for ; inFlight > 0; inFlight-- {
			await()
		}
	}
	send(10000) // warm up: grow the pool and the links' rings

	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	send(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "datagrams/s")
	st := r.Stats().Forward
	if st.Link.DroppedOverflow+st.Link.DroppedRandom+st.WriteErrors != 0 {
		b.Fatalf("losses in the relay: %+v", st)
	}
}
