package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/transport/devcert"
	"github.com/fresh-udp/fresh/transport/quichook"
)

const (
	alpn       = "fresh-quicbench"
	rate       = 10e6                  // bit/s, each way
	oneWay     = 20 * time.Millisecond // propagation delay each way: 40 ms RTT
	bdpBytes   = 50_000                // 10 Mbit/s × 40 ms
	sampleTick = 2 * time.Millisecond
)

func tlsConfigs() (srv, cli *tls.Config, err error) {
	c, err := devcert.Loopback()
	if err != nil {
		return nil, nil, err
	}
	c.NextProtos = []string{alpn}
	return c, c.Clone(), nil
}

// socket opens a plain UDP socket or the hook on loopback.
func socket(hooked bool, ccName string) (net.PacketConn, *quichook.PacketConn, error) {
	if hooked {
		h, err := quichook.ListenPacket("127.0.0.1:0", quichook.Config{CC: ccName})
		return h, h, err
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	return uc, nil, err
}

// cwndTrace records quic-go's congestion window from its qlog
// MetricsUpdated events (every such event carries the current window).
type cwndTrace struct{ cwnd atomic.Int64 }

func (t *cwndTrace) AddProducer() qlogwriter.Recorder { return t }
func (t *cwndTrace) RecordEvent(e qlogwriter.Event) {
	if m, ok := e.(qlog.MetricsUpdated); ok && m.CongestionWindow > 0 {
		t.cwnd.Store(int64(m.CongestionWindow))
	}
}
func (t *cwndTrace) Close() error { return nil }

// pair is a quic-go server and client, each on its own Transport.
type pair struct {
	srvPC, cliPC     net.PacketConn
	srvHook, cliHook *quichook.PacketConn
	srvTr, cliTr     *quic.Transport
	ln               *quic.Listener
	trace            cwndTrace
}

func newPair(hooked bool, ccName string) (*pair, error) {
	p := &pair{}
	var err error
	if p.srvPC, p.srvHook, err = socket(hooked, ccName); err != nil {
		return nil, err
	}
	if p.cliPC, p.cliHook, err = socket(hooked, ccName); err != nil {
		p.srvPC.Close()
		return nil, err
	}
	p.srvTr, p.cliTr = &quic.Transport{Conn: p.srvPC}, &quic.Transport{Conn: p.cliPC}
	st, _, err := tlsConfigs()
	if err != nil {
		p.close()
		return nil, err
	}
	if p.ln, err = p.srvTr.Listen(st, &quic.Config{}); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *pair) close() {
	if p.ln != nil {
		p.ln.Close()
	}
	p.cliTr.Close()
	p.srvTr.Close()
	p.cliPC.Close()
	p.srvPC.Close()
}

// serve accepts one connection and one stream and counts what it reads
// into n until EOF or an error.
func (p *pair) serve(ctx context.Context, n *atomic.Int64, done chan<- error) {
	conn, err := p.ln.Accept(ctx)
	if err != nil {
		done <- err
		return
	}
	defer conn.CloseWithError(0, "")
	s, err := conn.AcceptStream(ctx)
	if err != nil {
		done <- err
		return
	}
	buf := make([]byte, 64<<10)
	for {
		k, err := s.Read(buf)
		n.Add(int64(k))
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			done <- err
			return
		}
	}
}

// dial connects the client to to and opens a stream; traced records
// quic-go's congestion window.
func (p *pair) dial(ctx context.Context, to net.Addr, traced bool) (*quic.Conn, *quic.Stream, error) {
	_, ct, err := tlsConfigs()
	if err != nil {
		return nil, nil, err
	}
	cfg := &quic.Config{}
	if traced {
		cfg.Tracer = func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return &p.trace }
	}
	conn, err := p.cliTr.Dial(ctx, to, ct, cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		conn.CloseWithError(1, "")
		return nil, nil, err
	}
	return conn, s, nil
}

type bottleneckResult struct {
	hooked       bool
	loss         float64
	goodput      float64         // bit/s
	delays       []time.Duration // queueing delay samples
	p50, p95     time.Duration
	quicBinds    float64 // share of samples with quic-go's cwnd < the hook's window
	hookBound    time.Duration
	quicBound    time.Duration
	hookLost     int64
	relayDropped uint64
	quicLost     uint64
}

func (r bottleneckResult) line() string {
	return fmt.Sprintf("bottleneck hooked=%v loss=%.0f%%: %.2f Mbit/s, queue p50 %v p95 %v, quic-go cwnd binds %.0f%%, hook-bound %v quic-bound %v",
		r.hooked, r.loss*100, r.goodput/1e6, r.p50, r.p95, r.quicBinds*100, r.hookBound, r.quicBound)
}

func fifo(loss float64) scenario.Path {
	return scenario.Path{Rate: scenario.Rate(rate), Delay: scenario.Duration(oneWay), Loss: loss,
		Queue: scenario.Queue{Discipline: "fifo", LimitBytes: bdpBytes}}
}

// runBottleneck uploads for dur through the emulated bottleneck.
func runBottleneck(hooked bool, ccName string, loss float64, dur, warm time.Duration) (bottleneckResult, error) {
	res := bottleneckResult{hooked: hooked, loss: loss}
	p, err := newPair(hooked, ccName)
	if err != nil {
		return res, err
	}
	defer p.close()
	relay, err := emu.NewRelay(emu.RelayConfig{Target: p.srvPC.LocalAddr().String(), Forward: fifo(loss), Reverse: fifo(0), Seed: 11, Spin: 0})
	if err != nil {
		return res, err
	}
	defer relay.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dur+30*time.Second)
	defer cancel()
	var got atomic.Int64
	served := make(chan error, 1)
	go p.serve(ctx, &got, served)
	conn, s, err := p.dial(ctx, relay.Addr(), true)
	if err != nil {
		return res, fmt.Errorf("dial: %w", err)
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var binds, samples int
	var atWarm int64
	go func() { // sampler
		defer wg.Done()
		t := time.NewTicker(sampleTick)
		defer t.Stop()
		warmed := false
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if time.Since(start) < warm {
				continue
			}
			if !warmed {
				warmed, atWarm = true, got.Load()
			}
			st := relay.Stats()
			res.delays = append(res.delays, time.Duration(float64(st.Forward.Link.BacklogBytes)*8/rate*float64(time.Second)))
			if p.cliHook != nil {
				hs := p.cliHook.Stats()
				if len(hs.Peers) > 0 {
					samples++
					if q := p.trace.cwnd.Load(); q > 0 && q < int64(hs.Peers[0].Metrics.Window) {
						binds++
					}
				}
			}
		}
	}()
	buf := make([]byte, 64<<10)
	writeErr := make(chan error, 1)
	go func() {
		for {
			if _, err := s.Write(buf); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	time.Sleep(dur)
	end := got.Load()
	close(stop)
	wg.Wait()
	res.goodput = float64(end-atWarm) * 8 / (dur - warm).Seconds()
	res.quicLost = conn.ConnectionStats().PacketsLost
	conn.CloseWithError(0, "done")
	<-writeErr
	<-served
	slices.Sort(res.delays)
	res.p50, res.p95 = pct(res.delays, 0.5), pct(res.delays, 0.95)
	if samples > 0 {
		res.quicBinds = float64(binds) / float64(samples)
	}
	if p.cliHook != nil {
		hs := p.cliHook.Stats()
		if len(hs.Peers) > 0 {
			res.hookBound, res.quicBound, res.hookLost = hs.Peers[0].HookBound, hs.Peers[0].QUICBound, hs.Peers[0].Lost
		}
	}
	res.relayDropped = relay.Stats().Forward.Link.DroppedRandom + relay.Stats().Forward.Link.DroppedOverflow
	return res, nil
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

type loopResult struct {
	hooked   bool
	traced   bool      // plain quic-go with a qlog recorder that sees every event
	goodputs []float64 // bit/s per run
	median   float64
	// cpuPerGB is the process's CPU-seconds per 10⁹ bytes, per run.
	cpuPerGB  []float64
	medianCPU float64
	// ratios are each run's goodput over the plain run of its round.
	ratios []float64
}

// loopOnce moves n bytes over one stream on loopback and returns the
// goodput in bit/s and the process's CPU time over the transfer.
func loopOnce(hooked, traced bool, ccName string, n int) (float64, time.Duration, error) {
	p, err := newPair(hooked, ccName)
	if err != nil {
		return 0, 0, err
	}
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got atomic.Int64
	served := make(chan error, 1)
	go p.serve(ctx, &got, served)
	conn, s, err := p.dial(ctx, p.srvPC.LocalAddr(), traced)
	if err != nil {
		return 0, 0, err
	}
	defer conn.CloseWithError(0, "")
	buf := make([]byte, 64<<10)
	start, cpu0 := time.Now(), processCPU()
	for sent := 0; sent < n; sent += len(buf) {
		if _, err = s.Write(buf[:min(len(buf), n-sent)]); err != nil {
			break
		}
	}
	if err == nil {
		s.Close()
		err = <-served
	}
	el, cpu := time.Since(start), processCPU()-cpu0
	if err != nil {
		return 0, 0, fmt.Errorf("loopback: %w", err)
	}
	if got.Load() != int64(n) {
		return 0, 0, fmt.Errorf("loopback: server read %d of %d bytes", got.Load(), n)
	}
	return float64(n) * 8 / el.Seconds(), cpu, nil
}

// runLoopback alternates plain, traced and hooked runs, so that the
// machine's other load hits all alike, and reports each stack's median.
// The traced runs price the information source of the other design the
// hook could have had (quic-go's qlog events instead of a shim).
func runLoopback(ccName string, n, runs int) ([3]loopResult, error) {
	res := [3]loopResult{{}, {traced: true}, {hooked: true}}
	for range runs {
		for i := range res {
			g, cpu, err := loopOnce(res[i].hooked, res[i].traced, ccName, n)
			if err != nil {
				return res, err
			}
			res[i].goodputs = append(res[i].goodputs, g)
			res[i].cpuPerGB = append(res[i].cpuPerGB, cpu.Seconds()/(float64(n)/1e9))
		}
	}
	for i := range res {
		res[i].median = median(res[i].goodputs)
		res[i].medianCPU = median(res[i].cpuPerGB)
		for k := range res[i].goodputs {
			res[i].ratios = append(res[i].ratios, res[i].goodputs[k]/res[0].goodputs[k])
		}
	}
	return res, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// processCPU is this process's CPU time so far (0 where it cannot be read).
func processCPU() time.Duration {
	d, _ := rusage.Process()
	return d
}
