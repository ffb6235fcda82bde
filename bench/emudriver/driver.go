package emudriver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/transport/devcert"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	_ "github.com/fresh-udp/fresh/owd" // registers "owd", "owd-eq2"
	"github.com/fresh-udp/fresh/transport"
)

// Options tune one run; they mirror bench/sim.Options.
type Options struct {
	// CC, if set, replaces the controller of every unpinned bulk flow
	// (scenario.WithCC) and labels the run.
	CC string
	// Trace collects time series and per-packet OWD samples for plots
	// (report.Flow.Series, OWDSamples).
	Trace bool
	// SampleInterval is the time-series step (default 100 ms).
	SampleInterval time.Duration
	// Progress, if set, is called now and then with the time done and the
	// total (real time: a 100 s scenario takes 100 s).
	Progress func(done, total time.Duration)
	// TUN runs the flows through the TUN router between two network
	// namespaces (emu.TUN, root only; driver "emu-tun") instead of the
	// loopback relay: kernel TCP (iperf3) and telemetry flows run there
	// only. See the package doc.
	TUN bool
}

var (
	// ErrUnsupported wraps scenario features the emulator cannot run (yet);
	// the message says which and why.
	ErrUnsupported = errors.New("emudriver: not supported")
	// ErrScenario wraps errors in setting a run up (sockets, handshakes).
	ErrScenario = errors.New("emudriver: cannot run scenario")
	// ErrNoTUN wraps emu.ErrNoTUN: the TUN router cannot run here (not
	// root, no /dev/net/tun, no namespaces); the relay can.
	ErrNoTUN = errors.New("emudriver: the TUN router is unavailable (run as root with /dev/net/tun, or use the relay: freshbench emu --relay)")
)

// Timing of the driver's own loops.
const (
	statsEvery     = 10 * time.Millisecond // controller state sampling (slow start, signal, clock error)
	progressEvery  = 100 * time.Millisecond
	sensePeriod    = time.Millisecond // update sources sample at 1 kHz (= transport's default MaxUpdateRate)
	senseRate      = 1000             // Hz, Config.MaxUpdateRate
	helloEvery     = 50 * time.Millisecond
	setupTimeout   = 10 * time.Second // per handshake / reverse-cbr hello
	maxFlows       = 250              // the cbr header's flow byte; the relay's client slots are set to fit
	writeChunk     = 64 << 10
	idleTimeoutPad = 30 * time.Second
)

// Run runs s in real time with real fresh endpoints over loopback UDP
// through one emu.Relay and returns its result (driver "emu"). It takes
// the scenario's duration plus setup (a handshake per flow). Cancelling
// ctx stops the run at once; Run then returns ctx's error after closing
// every socket and goroutine it opened. See the package doc for what is
// measured how.
func Run(ctx context.Context, s *scenario.Scenario, opts Options) (*report.Run, error) {
	if opts.CC != "" {
		s = s.WithCC(opts.CC)
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = 100 * time.Millisecond
	}
	if err := check(s, opts.TUN); err != nil {
		return nil, err
	}
	wallStart := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	d := &driver{s: s, opts: opts, ctx: ctx, cancel: cancel}
	tlsConf, err := devcert.Loopback()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("emu: TLS credentials: %w", err)
	}
	d.tls = tlsConf
	d.net = &relayNet{d: d}
	if opts.TUN {
		d.net, d.exact = &tunNet{d: d}, true
	}
	d.pending.Store(-1)
	defer d.shutdown()
	if err := d.setup(); err != nil {
		if errors.Is(err, ErrNoTUN) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("emudriver: %s: %w", s.Name, ctx.Err())
		}
		return nil, err
	}
	if err := d.loop(); err != nil {
		return nil, fmt.Errorf("emudriver: %s: %w", s.Name, err)
	}
	d.shutdown()
	for _, f := range d.flows {
		if f.tunf != nil && f.spec.Kind == scenario.KindIperf3 && f.tunf.iperf == nil {
			err := f.tunf.ierr
			if err == nil {
				err = errors.New("iperf3 did not report in time")
			}
			return nil, fmt.Errorf("%w: %s: flow %q: %w", ErrScenario, s.Name, f.spec.Name, err)
		}
	}
	r := d.result()
	r.WallS = time.Since(wallStart).Seconds()
	return r, nil
}

// Check reports whether Run can run s (after Options.CC, if any, is
// applied): an error wrapping ErrUnsupported names the flow or field the
// emulator cannot run. Run checks too; Check lets a caller refuse a batch
// of scenarios before the first one takes its real time.
func Check(s *scenario.Scenario) error { return check(s, false) }

// CheckTUN is Check for Options.TUN.
func CheckTUN(s *scenario.Scenario) error { return check(s, true) }

// check refuses what the emulator (the TUN router if tun, else the relay)
// cannot run, before anything is opened.
func check(s *scenario.Scenario, tun bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrUnsupported, s.Name, fmt.Sprintf(format, args...))
	}
	if s.ClockOffset != 0 || s.ClockSkewPPM != 0 {
		return bad("clock_offset and clock_skew_ppm are sim-only (the emulator's endpoints share the host clock)")
	}
	if s.ClockSync == "none" {
		return bad(`clock_sync "none" is sim-only (transport always corrects OWD, in-band or trusted)`)
	}
	if len(s.Flows) > maxFlows {
		return bad("%d flows: at most %d", len(s.Flows), maxFlows)
	}
	revPolicy := ""
	for _, f := range s.Flows {
		if f.ExtraDelay != 0 || f.MaxWindow != 0 {
			return bad("flow %q: extra_delay and max_window are sim-only (freshbench sim): the emulator has one delay per path and no per-flow receive window", f.Name)
		}
		switch f.Kind {
		case scenario.KindIperf3:
			if tun {
				if !slices.Contains(kernelCCs, f.CC) {
					return bad("flow %q: iperf3 cc %q: want one of %s", f.Name, f.CC, strings.Join(kernelCCs, ", "))
				}
				if f.Bytes != 0 || f.Start.D()+time.Second > f.End(s).D() {
					return bad("flow %q: iperf3 flows run for whole seconds (-t), at least 1 s, and not for a byte count", f.Name)
				}
				continue
			}
			fallthrough
		case scenario.KindTelemetry:
			if tun {
				continue
			}
			return bad("flow %q: %s flows need the kernel's TCP/UDP between two network namespaces: run them through the TUN router (freshbench emu --tun, as root), not the relay", f.Name, f.Kind)
		case scenario.KindBulk:
			if _, err := cc.New(f.CC, 0); err != nil {
				return bad("flow %q: %v", f.Name, err)
			}
		case scenario.KindACP, scenario.KindLazy, scenario.KindFixed:
			if f.PeriodicSource() {
				return bad("flow %q: update_rate on a %s flow (a periodic source) is for the simulator; through the emulator use a telemetry flow with protocol fresh (emu --tun)", f.Name, f.Kind)
			}
			if f.Kind != scenario.KindFixed && !slices.Contains(acp.PolicyNames(), f.CC) {
				return bad("flow %q: update policy %q: want one of %s", f.Name, f.CC, strings.Join(acp.PolicyNames(), ", "))
			}
			if f.Reverse {
				name := policyName(&f)
				if revPolicy != "" && revPolicy != name {
					return bad("reverse update flows with different policies (%s, %s): the server side has one policy (transport.Config of the Listener)", revPolicy, name)
				}
				revPolicy = name
			}
		}
	}
	return nil
}

// kernelCCs are the TCP controllers an iperf3 flow may ask for (-C).
var kernelCCs = []string{"cubic", "reno", "bbr"}

// driver is one run's state.
type driver struct {
	s      *scenario.Scenario
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc

	// net is the emulated path the flows cross (relay or TUN router).
	net      network
	listener *transport.Listener
	tls      *tls.Config // both ends' credentials (devcert.Loopback)
	flows    []*flowRun
	// exact says the path measures each packet's delay itself (the TUN
	// router): endpoints then only count deliveries.
	exact bool

	// origin is the run's time zero (set once, before any flow starts);
	// started says it is set.
	origin  time.Time
	started atomic.Bool

	// Flow identification at the shim: the flow whose handshake is under
	// way (flows are dialled one at a time), and the connection IDs
	// learned from their Initials.
	pending  atomic.Int64
	regMu    sync.Mutex
	byConnID map[uint64]*flowRun
	// serverCC is the controller the Listener gives the next connection
	// (a reverse bulk flow's sender is the accepted Conn).
	serverCC atomic.Value // string

	// applied are the path changes made so far, in order (read by the
	// shim's and taps' goroutines; replaced, never modified).
	applied atomic.Pointer[[]appliedChange]

	// The path's busy time at time zero, so utilisation covers the run only.
	busy0 [2]netem.LinkStats
	// listenerDatagram is the Listener's MaxDatagram.
	listenerDatagram int

	wg           sync.WaitGroup
	shutdownOnce sync.Once
}

// now is the time since the origin.
func (d *driver) now() time.Duration { return time.Since(d.origin) }

// sleepUntil waits until run time t; false if the run was cancelled.
func (d *driver) sleepUntil(t time.Duration) bool {
	w := t - d.now()
	if w <= 0 {
		return d.ctx.Err() == nil
	}
	tm := time.NewTimer(w)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *driver) setup() error {
	s := d.s
	d.byConnID = map[uint64]*flowRun{}
	d.serverCC.Store("owd")
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrScenario, s.Name, fmt.Errorf(format, args...))
	}
	for i, spec := range s.Flows {
		d.flows = append(d.flows, &flowRun{
			idx: i, spec: spec, dscp: spec.DSCP.Code(),
			start: spec.Start.D(), end: spec.End(s).D(),
			learned: make(chan struct{}),
		})
	}

	// The server: one Listener for every flow. Its datagram size is the
	// largest any flow needs, since it must carry them all.
	lcfg := d.baseConfig()
	lcfg.MaxDatagram = 256
	for _, f := range d.flows {
		lcfg.MaxDatagram = max(lcfg.MaxDatagram, f.datagramSize(s))
	}
	d.listenerDatagram = lcfg.MaxDatagram
	lcfg.NewController = func(mss cc.ByteCount) (cc.Controller, error) {
		return cc.New(d.serverCC.Load().(string), mss) // names were checked
	}
	for _, f := range d.flows {
		if f.spec.IsUpdates() && f.spec.Reverse {
			setPolicy(&lcfg, &f.spec)
		}
	}
	if err := d.net.open(lcfg); err != nil {
		if errors.Is(err, ErrNoTUN) {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		return fail("%w", err)
	}

	// Flows, one at a time, so that each handshake's first packets and
	// each Accept belong to the flow being set up.
	for _, f := range d.flows {
		if err := d.net.setupFlow(f); err != nil {
			return fail("flow %q: %w", f.spec.Name, err)
		}
	}

	d.busy0 = d.net.busy()
	d.origin = time.Now()
	d.started.Store(true)
	for _, f := range d.flows {
		d.startFlow(f)
	}
	return nil
}

// baseConfig is what every endpoint shares.
func (d *driver) baseConfig() transport.Config {
	return transport.Config{
		// The shipped default: TLS 1.3 and AEAD on every packet, with
		// throwaway loopback credentials both ends trust.
		TLS: d.tls,
		// Both ends read the same host clock: "perfect" sync is exact here;
		// "inband" lets the endpoints estimate the (zero) offset themselves.
		TrustPeerClock: d.s.ClockSync == "perfect",
		MaxUpdateRate:  senseRate,
		IdleTimeout:    d.s.Duration.D() + idleTimeoutPad,
		Linger:         -1, // the run's end is the end: nothing waits for ACKs
		// The scenario's mss is every stream packet's payload, as in
		// the simulator: no path MTU discovery growing it.
		DisablePathMTUDiscovery: true,
	}
}

// freshConfig is the client side's transport.Config of a bulk or update
// flow.
func (d *driver) freshConfig(f *flowRun) transport.Config {
	cfg := d.baseConfig()
	cfg.MaxDatagram = f.datagramSize(d.s)
	if f.spec.Reverse {
		cfg.MaxDatagram = d.listenerDatagram // the server side sends with the Listener's size
	}
	if f.spec.Kind == scenario.KindBulk {
		cfg.CC = f.spec.CC
		cfg.StreamDSCP = f.spec.DSCP
	} else {
		setPolicy(&cfg, &f.spec)
		cfg.UpdateDSCP = f.spec.DSCP // scenario.Validate set it: BE unless the file says otherwise
	}
	return cfg
}

// connectFresh sets one bulk or update flow's Conns up: dial dials the
// client side (through the emulated path), then the Listener accepts the
// server side. Flows are set up one at a time.
func (d *driver) connectFresh(f *flowRun, dial func(ctx context.Context, cfg transport.Config) (*transport.Conn, error)) error {
	if f.spec.Kind == scenario.KindBulk && f.spec.Reverse {
		d.serverCC.Store(f.spec.CC)
	} else {
		d.serverCC.Store("owd")
	}
	d.pending.Store(int64(f.idx))
	defer d.pending.Store(-1)
	hctx, cancel := context.WithTimeout(d.ctx, setupTimeout)
	defer cancel()
	client, err := dial(hctx, d.freshConfig(f))
	if err != nil {
		return err
	}
	f.client = client
	if _, srvID := client.ConnectionIDs(); srvID != 0 {
		// After the handshake the client's packets carry the server's
		// ID: the relay's tap finds the flow by it from then on.
		d.regMu.Lock()
		d.byConnID[srvID] = f
		d.regMu.Unlock()
	}
	server, err := d.listener.Accept(hctx)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	f.server = server
	f.sender, f.receiver = client, server
	if f.spec.Reverse {
		f.sender, f.receiver = server, client
	}
	return nil
}

// cbrDelivered counts one cbr datagram delivered at run time t; owd is
// its one-way delay, recorded unless the path measures delays itself.
func (d *driver) cbrDelivered(f *flowRun, t, owd time.Duration) {
	f.mu.Lock()
	f.m.cbrDelivered++
	if t <= f.end {
		n := int64(f.spec.Size)
		f.m.bytes += n
		f.m.ivBytes += n
	}
	f.mu.Unlock()
	if !d.exact {
		d.delaySample(f, t, owd)
	}
}

// delaySample records the one-way delay of one packet delivered at run
// time t, with the propagation delay it had (its queueing delay is
// worked out at the end, see result).
func (d *driver) delaySample(f *flowRun, t, owd time.Duration) {
	base := d.delayAt(f.spec.Reverse, t)
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := float64(owd) / 1e6
	f.m.owdMs = append(f.m.owdMs, ms)
	f.m.baseMs = append(f.m.baseMs, float64(base)/1e6)
	f.m.ivOWDSum += ms
	f.m.ivOWDN++
}

// exactSample records the delay and the queueing delay of one packet as
// the path measured them.
func (d *driver) exactSample(f *flowRun, owd, queue time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := float64(owd) / 1e6
	f.m.owdMs = append(f.m.owdMs, ms)
	f.m.queueMs = append(f.m.queueMs, float64(queue)/1e6)
	f.m.ivOWDSum += ms
	f.m.ivOWDN++
}

// startFlow starts a flow's goroutines; each waits for the flow's start.
func (d *driver) startFlow(f *flowRun) {
	switch {
	case f.spec.Kind == scenario.KindBulk:
		d.goFunc(func() { d.bulkReader(f) })
		d.goFunc(func() { d.bulkWriter(f) })
		// The writer may be blocked in Write at the end: stop from aside.
		d.goFunc(func() {
			if d.sleepUntil(f.end) {
				d.stopFlow(f)
			}
		})
	case f.spec.IsUpdates():
		d.goFunc(func() { d.monitor(f) })
		d.goFunc(func() { d.source(f) })
	case f.spec.Kind == scenario.KindCBR:
		if f.cbrIn != nil {
			d.goFunc(func() { d.cbrReceiver(f) })
		}
		d.goFunc(func() { d.cbrSender(f) })
	default:
		d.net.startFlow(f)
	}
}

func (d *driver) goFunc(fn func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
}

// bulkWriter writes the flow's stream from start to end (or Bytes).
func (d *driver) bulkWriter(f *flowRun) {
	if !d.sleepUntil(f.start) {
		return
	}
	// The stream's content does not matter; a fixed pseudo-random block
	// keeps it incompressible and costs nothing per write.
	buf := make([]byte, writeChunk)
	x := uint64(f.idx)*0x9e3779b97f4a7c15 + 1
	for i := range buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf[i] = byte(x)
	}
	left := f.spec.Bytes
	for left > 0 || f.spec.Bytes == 0 {
		p := buf
		if f.spec.Bytes > 0 && int64(len(p)) > left {
			p = p[:left]
		}
		n, err := f.sender.Write(p)
		left -= int64(n)
		if err != nil {
			return // closed at the flow's end, or the run's
		}
	}
	_ = f.sender.CloseWrite()
}

// bulkReader reads the stream at the receiver, counting the bytes read
// within the flow's active time.
func (d *driver) bulkReader(f *flowRun) {
	buf := make([]byte, writeChunk)
	jainLo, jainHi := d.jainWindow()
	for {
		n, err := f.receiver.Read(buf)
		if n > 0 && d.started.Load() {
			t := d.now()
			f.mu.Lock()
			if t >= f.start && t <= f.end {
				f.m.bytes += int64(n)
				f.m.ivBytes += int64(n)
			}
			if !f.spec.Reverse && t >= jainLo && t <= jainHi {
				f.m.jainBytes += int64(n)
			}
			f.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// jainWindow is from the last forward bulk start to the first forward bulk
// end, as in bench/sim.
func (d *driver) jainWindow() (lo, hi time.Duration) {
	hi = d.s.Duration.D()
	for _, f := range d.flows {
		if f.spec.Kind == scenario.KindBulk && !f.spec.Reverse {
			lo, hi = max(lo, f.start), min(hi, f.end)
		}
	}
	return lo, hi
}

// source is an update flow's sensor: from start to end it hands a fresh
// sample (the first 8 bytes: its generation time, ns since the origin) to
// SendUpdate every millisecond; the regulator sends the freshest when it
// lets one go.
func (d *driver) source(f *flowRun) {
	if !d.sleepUntil(f.start) {
		return
	}
	payload := make([]byte, f.spec.Size)
	tick := time.NewTicker(sensePeriod)
	defer tick.Stop()
	for {
		t := d.now()
		if t >= f.end {
			d.stopFlow(f)
			return
		}
		putNS(payload, t)
		if err := f.sender.SendUpdate(payload); err != nil {
			return
		}
		select {
		case <-tick.C:
		case <-d.ctx.Done():
			return
		}
	}
}

// monitor reads updates and measures the age of information with the
// generation times they carry: one clock at both ends, so it is exact.
func (d *driver) monitor(f *flowRun) {
	for {
		u, err := f.receiver.ReadUpdate(d.ctx)
		if err != nil {
			return
		}
		t := d.now()
		if len(u.Payload) < 8 || t > f.end {
			continue
		}
		gen := getNS(u.Payload)
		f.mu.Lock()
		if f.m.age.Deliver(monoOf(gen), monoOf(t)) {
			f.m.bytes += int64(len(u.Payload))
			f.m.ivBytes += int64(len(u.Payload))
		}
		f.mu.Unlock()
	}
}

// cbrSender sends a cbr flow's datagrams at its rate from start to end
// with f.cbrSend.
func (d *driver) cbrSender(f *flowRun) {
	if !d.sleepUntil(f.start) {
		return
	}
	b := make([]byte, cbrPayload(f.spec.Size))
	gap := time.Duration(float64(f.spec.Size*8) / float64(f.spec.Rate) * 1e9)
	next := f.start
	var seq uint32
	for next < f.end {
		if !d.sleepUntil(next) {
			return
		}
		// Send every datagram due by now (a late wake-up sends a burst,
		// so the mean rate holds).
		for t := d.now(); next <= t && next < f.end; next += gap {
			putCBR(b, cbrHeader{kind: cbrData, flow: f.idx, seq: seq, sentNS: int64(d.now())})
			seq++
			if err := f.cbrSend(b); err != nil && errors.Is(err, net.ErrClosed) {
				return
			}
			f.mu.Lock()
			f.m.cbrSent++
			f.m.cbrSentBytes += int64(f.spec.Size)
			f.mu.Unlock()
		}
	}
}

// cbrReceiver reads a cbr flow's sink socket, f.cbrIn.
func (d *driver) cbrReceiver(f *flowRun) {
	buf := make([]byte, maxDatagram)
	for {
		n, err := f.cbrIn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if h, ok := parseCBR(buf[:n]); ok && h.kind == cbrData && h.flow == f.idx {
			t := d.now()
			d.cbrDelivered(f, t, t-time.Duration(h.sentNS))
		}
	}
}

// stopFlow ends a fresh flow: its endpoints' counters are read, then both
// Conns are closed (which ends its goroutines). Idempotent.
func (d *driver) stopFlow(f *flowRun) {
	f.stopOnce.Do(func() {
		if f.sender != nil {
			ss, rs := f.sender.Stats(), f.receiver.Stats()
			f.mu.Lock()
			f.fin.sender, f.fin.receiver, f.fin.ok = ss, rs, true
			f.mu.Unlock()
		}
		if f.client != nil {
			_ = f.client.Close()
		}
		if f.server != nil {
			_ = f.server.Close()
		}
		if f.onStop != nil {
			f.onStop()
		}
	})
}

// loop runs the scenario's clock: path changes at their times, controller
// sampling, the time series and the progress, until the duration is up.
func (d *driver) loop() error {
	s := d.s
	total := s.Duration.D()
	changes := slices.Clone(s.Changes)
	slices.SortStableFunc(changes, func(a, b scenario.Change) int { return int(a.At - b.At) })
	step := d.opts.SampleInterval
	nextSample, nextProgress := step, time.Duration(0)
	tick := time.NewTicker(statsEvery)
	defer tick.Stop()
	for {
		t := d.now()
		for len(changes) > 0 && changes[0].At.D() <= t {
			c := changes[0]
			if err := d.net.setPath(c.Forward, c.Reverse); err != nil {
				return fmt.Errorf("change at %v: %w", c.At.D(), err)
			}
			list := append(slices.Clone(d.appliedList()), appliedChange{at: d.now(), forward: c.Forward, reverse: c.Reverse})
			d.applied.Store(&list)
			changes = changes[1:]
		}
		d.sampleControllers(t)
		for nextSample <= t && nextSample <= total {
			d.sampleSeries(nextSample, step)
			nextSample += step
		}
		if t >= total {
			break
		}
		if d.opts.Progress != nil && t >= nextProgress {
			d.opts.Progress(t, total)
			nextProgress = t + progressEvery
		}
		select {
		case <-tick.C:
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
	}
	for _, f := range d.flows {
		d.stopFlow(f)
	}
	d.net.finish()
	if d.opts.Progress != nil {
		d.opts.Progress(total, total)
	}
	return nil
}

func (d *driver) appliedList() []appliedChange {
	if p := d.applied.Load(); p != nil {
		return *p
	}
	return nil
}

// sampleControllers reads the state of every active bulk sender (slow
// start, delay signal) and, under in-band sync, the receiver's clock
// error (the true offset is 0: one host clock).
func (d *driver) sampleControllers(t time.Duration) {
	for _, f := range d.flows {
		if f.spec.Kind != scenario.KindBulk || t < f.start || t >= f.end {
			continue
		}
		ss, rs := f.sender.Stats(), f.receiver.Stats()
		f.mu.Lock()
		f.m.samples++
		if ss.InSlowStart {
			f.m.slowStart++
		}
		if f.m.signals == nil {
			f.m.signals = map[string]int64{}
		}
		f.m.signals[ss.Signal.String()]++
		if ss.Mode != "" {
			if f.m.modes == nil {
				f.m.modes = map[string]int64{}
			}
			f.m.modes[ss.Mode]++
		}
		if d.s.ClockSync == "inband" && rs.ClockSynced {
			f.m.clockErrSum += math.Abs(float64(rs.ClockOffset) / 1e6)
			f.m.clockErrN++
		}
		f.mu.Unlock()
	}
}

// sampleSeries closes one time-series interval ending at t.
func (d *driver) sampleSeries(t, step time.Duration) {
	for _, f := range d.flows {
		var ss transport.Stats
		live := f.sender != nil && t >= f.start && t < f.end
		if live {
			ss = f.sender.Stats()
		}
		f.mu.Lock()
		if d.opts.Trace {
			se := &f.m.series
			se.T = append(se.T, t.Seconds())
			se.GoodputBps = append(se.GoodputBps, float64(f.m.ivBytes*8)/step.Seconds())
			owd := math.NaN()
			if f.m.ivOWDN > 0 {
				owd = f.m.ivOWDSum / float64(f.m.ivOWDN)
			}
			se.OWDms = append(se.OWDms, owd)
			cwnd, age, rate := math.NaN(), math.NaN(), math.NaN()
			if f.spec.Kind == scenario.KindBulk && live {
				cwnd = float64(ss.Window)
			}
			if f.spec.IsUpdates() {
				if f.m.age.Started() {
					age = float64(f.m.age.Age(monoOf(t))) / 1e6
				}
				if live {
					rate = ss.UpdateRate
				}
			}
			se.CwndBytes = append(se.CwndBytes, cwnd)
			se.AgeMs = append(se.AgeMs, age)
			se.RateHz = append(se.RateHz, rate)
		}
		f.m.ivBytes, f.m.ivOWDSum, f.m.ivOWDN = 0, 0, 0
		f.mu.Unlock()
	}
}

// shutdown stops every goroutine and closes every socket the run opened;
// safe to call more than once and from any state of setup.
func (d *driver) shutdown() {
	d.shutdownOnce.Do(func() {
		d.cancel()
		for _, f := range d.flows {
			d.stopFlow(f)
		}
		for _, f := range d.flows {
			for _, c := range []*net.UDPConn{f.cbr, f.cbrIn} {
				if c != nil {
					_ = c.Close()
				}
			}
			if f.tap != nil {
				f.tap.Close()
			}
		}
		if d.net != nil {
			d.net.close()
		}
		if d.listener != nil {
			_ = d.listener.Close()
		}
		d.wg.Wait()
	})
}

// setPolicy configures an update flow's rate policy: a fixed rate
// (acp.NewFixed at the flow's update_rate) or a named one (acp, acp-literal,
// lazy).
func setPolicy(cfg *transport.Config, f *scenario.Flow) {
	if f.Kind != scenario.KindFixed {
		cfg.UpdatePolicy = f.CC
		return
	}
	hz := acp.Rate(f.UpdateRate)
	cfg.NewUpdatePolicy = func(size cc.ByteCount) (acp.Policy, error) {
		return acp.NewFixed(hz, acp.Config{UpdateSize: size})
	}
}

// policyName names a flow's update policy, the rate included for fixed.
func policyName(f *scenario.Flow) string {
	if f.Kind == scenario.KindFixed {
		return fmt.Sprintf("fixed %g Hz", f.UpdateRate)
	}
	return f.CC
}

// appliedChange is a path change as the relay got it: at run time at.
type appliedChange struct {
	at               time.Duration
	forward, reverse *scenario.PathChange
}

// delayAt is the propagation delay a packet of one direction arriving at
// run time t had. A delay change applies to the packets that finish
// serialising after it (netem.Link.SetDelay), so the packet had change
// c's delay if it arrived at least that delay after c was applied (the
// real time, not the scheduled one: the loop applies changes up to a tick
// late). This never credits a packet with more propagation delay than it
// had when the delay grew, so queueing delay is never under-estimated
// around a change.
func (d *driver) delayAt(reverse bool, t time.Duration) time.Duration {
	delay := d.s.Forward.Delay.D()
	if reverse {
		delay = d.s.Reverse.Delay.D()
	}
	applied := d.applied.Load()
	if applied == nil {
		return delay
	}
	for _, c := range *applied {
		pc := c.forward
		if reverse {
			pc = c.reverse
		}
		if pc != nil && pc.Delay != nil && t-pc.Delay.D() >= c.at {
			delay = pc.Delay.D()
		}
	}
	return delay
}
