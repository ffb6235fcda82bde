package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// receiverReport is the JSON line the server writes back after EOF.
type receiverReport struct {
	Bytes           int64   `json:"bytes"`           // stream bytes read
	Seconds         float64 `json:"seconds"`         // first byte to EOF
	BitsPerSecond   float64 `json:"bits_per_second"` // Bytes·8 / Seconds
	PacketsReceived int64   `json:"packets_received"`
	Duplicates      int64   `json:"duplicates"`
}

// serve accepts clients until ctx ends (or, with -1, after one).
func serve(ctx context.Context, ln *transport.Listener, o *options, stdout io.Writer) error {
	out := &lockedWriter{w: stdout}
	banner := func() {
		fmt.Fprintln(out, "-----------------------------------------------------------")
		fmt.Fprintf(out, "Server listening on %d (fresh over UDP)\n", ln.Addr().(*net.UDPAddr).Port)
		fmt.Fprintln(out, "-----------------------------------------------------------")
	}
	banner()
	var wg sync.WaitGroup
	defer wg.Wait()
	for id := 1; ; id++ {
		conn, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, transport.ErrListenerClosed) {
				return nil
			}
			return err
		}
		if o.oneOff {
			return receive(ctx, conn, id, o, out)
		}
		wg.Go(func() {
			if err := receive(ctx, conn, id, o, out); err != nil {
				fmt.Fprintf(out, "[%3d] %v\n", id, err)
			}
			banner()
		})
	}
}

// receive reads one client's stream to EOF, printing intervals, and sends
// back the receiver's report.
func receive(ctx context.Context, conn *transport.Conn, id int, o *options, out io.Writer) error {
	defer conn.Close()
	ra := conn.RemoteAddr().(*net.UDPAddr)
	la := conn.LocalAddr().(*net.UDPAddr)
	fmt.Fprintf(out, "Accepted connection from %s, port %d\n", ra.IP, ra.Port)
	fmt.Fprintf(out, "[%3d] local %s port %d connected to %s port %d\n", id, la.IP, la.Port, ra.IP, ra.Port)
	fmt.Fprintln(out, "[ ID] Interval           Transfer     Bitrate")

	type progress struct {
		n     int64
		first time.Time // first byte read
		err   error     // io.EOF at the end
	}
	var mu sync.Mutex
	var p progress
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 128<<10)
		for {
			n, err := conn.Read(buf)
			mu.Lock()
			if n > 0 && p.n == 0 {
				p.first = time.Now()
			}
			p.n += int64(n)
			p.err = err
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()

	start := time.Now()
	var tick <-chan time.Time
	if o.interval > 0 {
		t := time.NewTicker(o.interval)
		defer t.Stop()
		tick = t.C
	}
	var prevN int64
	prevT := start
loop:
	for {
		select {
		case <-ctx.Done():
			conn.Close() // ends the reader
			<-done
			return nil
		case <-done:
			break loop
		case now := <-tick:
			mu.Lock()
			n := p.n
			mu.Unlock()
			dt := now.Sub(prevT).Seconds()
			fmt.Fprintf(out, "[%3d] %s sec  %12s  %15s\n", id, interval(prevT.Sub(start).Seconds(), now.Sub(start).Seconds()),
				formatBytes(float64(n-prevN)), formatBits(float64(n-prevN)*8/dt))
			prevN, prevT = n, now
		}
	}
	end := time.Now()
	if !errors.Is(p.err, io.EOF) {
		return fmt.Errorf("stream ended after %d bytes: %w", p.n, p.err)
	}
	from := p.first
	if p.n == 0 {
		from = start
	}
	secs := end.Sub(from).Seconds()
	st := conn.Stats()
	rep := receiverReport{
		Bytes: p.n, Seconds: secs, BitsPerSecond: float64(p.n) * 8 / secs,
		PacketsReceived: st.PacketsReceived, Duplicates: st.Duplicates,
	}
	fmt.Fprintln(out, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	fmt.Fprintf(out, "[%3d] %s sec  %12s  %15s                  receiver\n", id,
		interval(0, secs), formatBytes(float64(rep.Bytes)), formatBits(rep.BitsPerSecond))
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sending the report: %w", err)
	}
	// The client may have read the report and hung up already.
	if err := conn.CloseWrite(); err != nil && !errors.Is(err, transport.ErrPeerClosed) {
		return fmt.Errorf("sending the report: %w", err)
	}
	// Wait for the client to read the report and hang up (Close lingers
	// for it too, but the client may close first: either is fine).
	select {
	case <-conn.Done():
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
	return nil
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
