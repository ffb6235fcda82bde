package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// result is what one phase measured, snapshotted before the connection closed.
type result struct {
	cc          string
	elapsed     time.Duration // from the handshake to the end of the phase
	bytes       int64         // stream bytes the monitor read
	offered     int64         // readings the sensor handed to SendUpdate
	queue       int           // FIFO limit, packets
	agent       transport.Stats
	monitor     transport.Stats
	relay       emu.RelayStats
	interrupted bool
}

// monitor is the receiving half: it drains the upload and keeps its own
// age meter so it can report the age over each second (transport.Stats.Age
// is the average since the first update).
type monitor struct {
	conn  *transport.Conn
	clk   clock.Clock
	bytes atomic.Int64

	mu      sync.Mutex
	age     acp.AgeMeter
	updates int64
}

// readStream reads the upload until it ends.
func (m *monitor) readStream() {
	buf := make([]byte, 64<<10)
	for {
		n, err := m.conn.Read(buf)
		m.bytes.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// readUpdates reads the freshest reading as it arrives, until ctx ends or the
// connection closes.
func (m *monitor) readUpdates(ctx context.Context) {
	for {
		u, err := m.conn.ReadUpdate(ctx)
		if err != nil {
			return
		}
		now := m.clk.Now()
		m.mu.Lock()
		// The reading was generated u.Age before it arrived; we read it
		// as soon as it arrived.
		m.age.Deliver(now.Add(-u.Age), now)
		m.updates++
		m.mu.Unlock()
	}
}

// mark returns the cumulative age integral and update count at now.
func (m *monitor) mark(now clock.Mono) (acp.AgeMark, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.age.Mark(now), m.updates
}

// agent is the sending half: a sensor sampled at hz and an upload.
type agent struct {
	conn    *transport.Conn
	hz      float64
	rng     *rand.Rand
	offered atomic.Int64 // readings handed to SendUpdate
}

// sense samples the sensor at a.hz and offers every reading to SendUpdate
// until ctx ends or the connection closes.
func (a *agent) sense(ctx context.Context) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / a.hz))
	defer tick.Stop()
	var buf []byte
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A plausible reading: temperature, humidity and vibration with
		// a little noise, and when it was taken.
		t := float64(seq) / a.hz
		buf = fmt.Appendf(buf[:0], `{"seq":%d,"t_ms":%d,"temp_c":%.2f,"rh_pct":%.1f,"vib_g":%.3f}`,
			seq, time.Now().UnixMilli(), 21.5+0.01*t+0.05*a.rng.NormFloat64(),
			45+a.rng.NormFloat64(), 0.02*a.rng.Float64())
		if err := a.conn.SendUpdate(buf); err != nil {
			return
		}
		a.offered.Add(1)
	}
}

// upload writes random bytes until the connection closes.
func (a *agent) upload(chunk []byte) {
	for {
		if _, err := a.conn.Write(chunk); err != nil {
			return
		}
	}
}

// runPhase runs one controller for o.duration (or until ctx ends) and
// prints one line per second.
func runPhase(ctx context.Context, o *options, name string, out io.Writer) (*result, error) {
	clk := clock.NewSystem()
	// Both ends in one process on loopback: one throwaway certificate
	// serves them (a real deployment gives each its own, see
	// examples/certgen). The agent dials the relay's 127.0.0.1 and
	// verifies the monitor as "localhost".
	tlsConf, err := devcert.Loopback()
	if err != nil {
		return nil, err
	}
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: tlsConf, Clock: clk, Logger: o.logger.With("side", "monitor")})
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	path := func(loss float64) scenario.Path {
		return scenario.Path{
			Rate: scenario.Rate(o.rate), Delay: scenario.Duration(o.rtt / 2), Loss: loss,
			Queue: scenario.Queue{Discipline: "fifo", Limit: o.queue},
		}
	}
	relay, err := emu.NewRelay(emu.RelayConfig{
		Target: ln.Addr().String(), Forward: path(o.loss), Reverse: path(0),
		Seed: o.seed, Clock: clk, Logger: o.logger.With("side", "relay"),
	})
	if err != nil {
		return nil, err
	}
	defer relay.Close()

	cli, err := transport.Dial(ctx, relay.Addr().String(), transport.Config{
		TLS:           tlsConf,
		CC:            name,
		MaxUpdateRate: o.hz,
		Clock:         clk,
		// The upload never ends; when the phase does, drop what is
		// still buffered instead of waiting for it.
		Linger: -1,
		Logger: o.logger.With("side", "agent"),
	})
	if err != nil {
		if errors.Is(err, transport.ErrHandshake) && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// The handshake's certificates are several kilobytes: on a
			// slow or lossy emulated path they do not arrive in
			// Config.HandshakeTimeout.
			return nil, fmt.Errorf("%w\n  (the TLS handshake did not get through the emulated path in time: give a faster -rate, less -loss or a shorter -rtt)", err)
		}
		return nil, err
	}
	defer cli.Close()
	srv, err := ln.Accept(ctx)
	if err != nil {
		return nil, err
	}

	mon := &monitor{conn: srv, clk: clk}
	ag := &agent{conn: cli, hz: o.hz, rng: rand.New(rand.NewPCG(o.seed, 1))}
	chunk := make([]byte, 64<<10)
	fill := rand.New(rand.NewPCG(o.seed, 2))
	for i := range chunk {
		chunk[i] = byte(fill.Uint32())
	}

	phaseCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(mon.readStream)
	wg.Go(func() { mon.readUpdates(phaseCtx) })
	wg.Go(func() { ag.sense(phaseCtx) })
	wg.Go(func() { ag.upload(chunk) })
	defer wg.Wait() // after Close (deferred later, runs first) ends them

	fmt.Fprintf(out, "%6s %9s %7s %17s %9s %7s %8s %8s %7s\n", "time", "goodput", "srtt", "owd min/cur est.", "clock est.", "cwnd", "acp", "updates", "age")
	fmt.Fprintf(out, "%6s %9s %7s %17s %9s %7s %8s %8s %7s\n", "", "(Mbit/s)", "(ms)", "(ms)", "(ms)", "(kB)", "(/s)", "(/s)", "(ms)")
	start := clk.Now()
	end := time.NewTimer(o.duration)
	defer end.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prevT, prevBytes := start, int64(0)
	prevAge, prevUpd := mon.mark(start)
	interrupted := false
	line := func(now clock.Mono) {
		dt := now.Sub(prevT).Seconds()
		b := mon.bytes.Load()
		st := cli.Stats()
		am, upd := mon.mark(now)
		age := "-" // undefined until the monitor has a reading
		if mean, ok := am.MeanSince(prevAge); ok {
			age = fmt.Sprintf("%.1f", msf(mean))
		}
		owd := "-" // no one-way delay yet (a loss-based controller before the clocks are trusted)
		if st.MinOWD > 0 {
			owd = fmt.Sprintf("%.1f/%.1f", msf(st.MinOWD), msf(st.CurOWD))
			if st.Signal == cc.SignalRTT {
				owd += " rtt" // RTT-derived until the clock offset is learned
			}
		}
		// The monitor's in-band estimate of its clock's offset from the
		// agent's, which it subtracts from every OWD sample it returns.
		// Both run on one clock here, so the truth is 0: what is shown is
		// the estimator's error, and it is in every OWD above.
		off := "learning"
		if ms := srv.Stats(); ms.ClockSynced {
			off = fmt.Sprintf("%+.1f", msf(ms.ClockOffset))
		}
		fmt.Fprintf(out, "%5.1fs %9.2f %7.1f %17s %9s %7.1f %8.1f %8.1f %7s\n",
			now.Sub(start).Seconds(), float64(b-prevBytes)*8/dt/1e6,
			msf(st.SRTT), owd, off, float64(st.Window)/1e3, st.UpdateRate,
			float64(upd-prevUpd)/dt, age)
		prevT, prevBytes, prevAge, prevUpd = now, b, am, upd
	}
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-end.C:
			if now := clk.Now(); now.Sub(prevT) >= 500*time.Millisecond {
				line(now) // the last, partial second
			}
			break loop
		case <-cli.Done():
			return nil, fmt.Errorf("agent connection ended: %w", cli.Err())
		case <-tick.C:
			line(clk.Now())
		}
	}
	r := &result{
		cc: name, elapsed: clk.Now().Sub(start), bytes: mon.bytes.Load(), offered: ag.offered.Load(), queue: o.queue,
		agent: cli.Stats(), monitor: srv.Stats(), relay: relay.Stats(), interrupted: interrupted,
	}
	cancel()
	if err := cli.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		return r, fmt.Errorf("closing the agent: %w", err)
	}
	srv.Close()
	if interrupted {
		return r, ctx.Err()
	}
	return r, nil
}

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
