package transport

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/internal/wire"
)

// BenchmarkLoopbackStream moves b.N datagram-sized writes through a real
// connection on loopback: the whole stack, sockets and goroutines included.
// Allocations are per datagram of stream payload.
func BenchmarkLoopbackStream(b *testing.B) { benchLoopbackStream(b, testConfig(Config{})) }

// benchLoopbackStream is BenchmarkLoopbackStream with both ends on cfg.
func benchLoopbackStream(b *testing.B, cfg Config) {
	l, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, l.Addr().String(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := l.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	d, _ := cfg.withDefaults()
	chunk := make([]byte, d.MaxDatagram-wire.HeaderLen-wire.DataOverhead)
	done := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, s)
		done <- n
	}()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	<-done
	b.StopTimer()
	c.Close()
	s.Close()
}
