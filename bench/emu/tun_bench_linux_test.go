//go:build linux

package emu

import (
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// BenchmarkTUNTCP measures kernel TCP through the TUN router: a
// 500 Mbit/s link each way with 1 ms of delay and a 1000-packet FIFO, one
// connection, 16 MiB per op. It reports the goodput (MB/s, and Mbit/s)
// and the process's heap allocations per IP packet routed (router, the
// test's sink and the runtime: the router's own share in the steady state
// is 0).
func BenchmarkTUNTCP(b *testing.B) {
	const (
		rate  = 500 * mbps
		chunk = 16 << 20
	)
	p := path(rate, time.Millisecond)
	p.Queue = scenario.Queue{Limit: 1000}
	tn, err := NewTUN(TUNConfig{Forward: p, Reverse: p})
	if errors.Is(err, ErrNoTUN) {
		b.Skip(err)
	}
	require.NoError(b, err)
	defer tn.Close()
	var ln net.Listener
	require.NoError(b, tn.InServer(func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(tn.ServerAddr().String(), "0"))
		return err
	}))
	defer ln.Close()
	got := make(chan int64)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(got)
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for {
			if _, err := io.ReadFull(c, buf); err != nil { // chunk is a multiple of len(buf)
				close(got)
				return
			}
			got <- int64(len(buf))
		}
	}()
	var c net.Conn
	require.NoError(b, tn.InClient(func() (err error) {
		c, err = net.Dial("tcp4", ln.Addr().String())
		return err
	}))
	defer c.Close()
	data := make([]byte, chunk)
	send := func() {
		go func() { _, _ = c.Write(data) }()
		for left := int64(chunk); left > 0; {
			n, ok := <-got
			if !ok {
				b.Fatal("sink closed")
			}
			left -= n
		}
	}
	send() // warm up: slow start, buffers, the pool
	b.SetBytes(chunk)
	var m0, m1 runtime.MemStats
	st0 := tn.Stats()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		send()
	}
	b.StopTimer()
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	st1 := tn.Stats()
	pkts := (st1.Forward.DatagramsOut + st1.Reverse.DatagramsOut) - (st0.Forward.DatagramsOut + st0.Reverse.DatagramsOut)
	b.ReportMetric(float64(b.N)*chunk*8/el.Seconds()/1e6, "Mbit/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(pkts), "mallocs/pkt")
	b.ReportMetric(float64(st1.Forward.Link.DroppedOverflow-st0.Forward.Link.DroppedOverflow), "drops")
}
