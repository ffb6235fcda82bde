// Package sim is a discrete-event simulator in virtual time. It drives the
// shipped protocol — internal/session, the sans-I/O session that
// transport's UDP endpoints run, with its stream buffers, wire format, loss
// recovery, pacing and the real controllers of cc, owd and acp — through two
// bench/netem links (forward and reverse, possibly asymmetric), so 100
// simulated seconds take well under a second and a run is reproducible bit
// for bit from its seed.
//
// Model. Every bulk or update flow is one connection: a client session at
// the sending end (created at the flow's start; its first datagram is the
// Initial) and a server session at the receiving end (created when the
// Initial arrives). Datagrams cross the links with 28 bytes of IPv4 and UDP
// headers added to their size. The sending application keeps a bulk
// flow's send buffer full (up to its byte limit) and generates a fresh
// update whenever an update flow's regulator would send one; the receiving
// application reads the stream and the freshest update at once. CBR flows
// are the simulator's own unresponsive senders. Receivers' clocks may be
// offset and skewed (clock.go). Times are exact: the loop jumps from event
// to event.
package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
	_ "github.com/fresh-udp/fresh/owd" // registers "owd", "owd-eq2"
)

// Options tune one run.
type Options struct {
	// CC, if set, replaces the controller of every unpinned bulk flow
	// (scenario.WithCC) and labels the run.
	CC string
	// Trace collects time series and per-packet OWD samples for plots
	// (report.Flow.Series, OWDSamples).
	Trace bool
	// SampleInterval is the time-series step (default 100 ms).
	SampleInterval time.Duration
	// Progress, if set, is called now and then with the simulated time done
	// and the total.
	Progress func(done, total time.Duration)

	// noAckFrequency (tests): no session consents to ACK frequency
	// requests (session.Config.MinAckDelay −1), so every receiver ACKs
	// every second packet, as before ACK frequency existed.
	noAckFrequency bool
}

// ErrScenario wraps errors in building a run from a scenario.
var ErrScenario = errors.New("sim: cannot run scenario")

// world is one run's state.
type world struct {
	s        *scenario.Scenario
	pool     pool
	fwd, rev *netem.Link
	flows    []*flow
	trace    bool
	buf      []byte // Poll's scratch datagram
	scratch  []byte // the applications' read and update buffer

	owdSamples [][]float64
	series     []report.Series
	capacity   []float64 // the forward link's capacity per interval (traced runs)
	offered    uint64    // its trace opportunities' bytes at the last sample
}

// Run simulates s and returns its result. The same scenario, seed and
// options give identical results.
func Run(s *scenario.Scenario, opts Options) (*report.Run, error) {
	if opts.CC != "" {
		s = s.WithCC(opts.CC)
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = 100 * time.Millisecond
	}
	w, err := build(s, opts)
	if err != nil {
		return nil, err
	}
	wallStart := time.Now()
	if err := w.loop(opts); err != nil {
		return nil, err
	}
	r := w.result(opts)
	r.WallS = time.Since(wallStart).Seconds()
	return r, nil
}

func build(s *scenario.Scenario, opts Options) (*world, error) {
	w := &world{s: s, trace: opts.Trace, buf: make([]byte, 0, 65536), scratch: make([]byte, 65536)}
	onDrop := func(_ clock.Mono, p *netem.Packet, _ netem.DropReason) {
		w.pool.put(w.pool.byHandle(p.Handle))
	}
	var err error
	// Distinct seeds per direction so the two loss processes are independent.
	if w.fwd, err = netem.NewLink(netem.LinkConfigFromPath(s.Forward, uint64(s.Seed)*2+1), onDrop); err != nil {
		return nil, fmt.Errorf("%w: forward link: %w", ErrScenario, err)
	}
	if w.rev, err = netem.NewLink(netem.LinkConfigFromPath(s.Reverse, uint64(s.Seed)*2+2), onDrop); err != nil {
		return nil, fmt.Errorf("%w: reverse link: %w", ErrScenario, err)
	}
	for _, p := range []struct {
		name string
		p    scenario.Path
	}{{"forward", s.Forward}, {"reverse", s.Reverse}} {
		if p.p.Corrupt > 0 || p.p.CorruptGE != nil {
			// A flipped bit is a test of packet protection, and the
			// simulated sessions run in plaintext: nothing would catch it.
			return nil, fmt.Errorf("%w: %s path: corrupt and corrupt_gilbert_elliott need the emulator (freshbench emu --relay), where the endpoints run TLS; the simulator's sessions are plaintext and would take a flipped bit as data", ErrScenario, p.name)
		}
	}
	mode := map[string]syncMode{"perfect": syncPerfect, "inband": syncInband, "none": syncNone}[s.ClockSync]
	for i, spec := range s.Flows {
		if spec.EmuTUNOnly() {
			return nil, fmt.Errorf("%w: flow %q: %s flows run only in the emulator's TUN router (freshbench emu --tun): they need the kernel's TCP/UDP", ErrScenario, spec.Name, spec.Kind)
		}
		f, err := newFlow(s, i, spec, mode)
		if err != nil {
			return nil, fmt.Errorf("%w: flow %q: %w", ErrScenario, spec.Name, err)
		}
		if opts.noAckFrequency {
			f.cfg.MinAckDelay = -1
		}
		w.flows = append(w.flows, f)
	}
	w.owdSamples = make([][]float64, len(w.flows))
	w.series = make([]report.Series, len(w.flows))
	return w, nil
}

// link returns the link a datagram of flow f takes: data toward the server
// crosses the flow's forward direction, everything else the other one.
func (w *world) link(f *flow, toSrv bool) *netem.Link {
	if toSrv != f.reverse {
		return w.fwd
	}
	return w.rev
}

// pollAll sends everything one end of f has to send at now.
func (w *world) pollAll(now clock.Mono, f *flow, fromSrv bool) {
	s, wall := f.cli, f.cliClock.micros(now)
	if fromSrv {
		s, wall = f.srv, f.srvClock.micros(now)
	}
	for {
		d, mark, ok := s.Poll(now, wall, w.buf)
		if !ok {
			return
		}
		p := w.pool.get()
		p.flow, p.toSrv, p.sent = f.idx, !fromSrv, now
		p.dgram = append(p.dgram, d...)
		if typ, ok := frameType(d); ok && (typ == wire.TypeData || typ == wire.TypeUpdate) {
			p.data = true
		}
		w.enqueue(now, f, p, len(d)+ipUDPOverhead, mark.Code())
	}
}

// sendCBR sends one packet of a CBR flow.
func (w *world) sendCBR(now clock.Mono, f *flow) {
	p := w.pool.get()
	p.flow, p.toSrv, p.sent, p.cbr, p.data = f.idx, true, now, true, true
	w.enqueue(now, f, p, f.spec.Size, f.dscp)
}

// enqueue puts p on its link. Data toward the server and everything back
// are two flows to a flow-queueing discipline, as two 5-tuples would be.
func (w *world) enqueue(now clock.Mono, f *flow, p *packet, size int, dscp uint8) {
	if p.data {
		f.st.sent++
		f.st.sentBytes += int64(size)
	}
	p.net.FlowKey = uint64(f.idx) << 1
	if !p.toSrv {
		p.net.FlowKey |= 1
	}
	p.net.Size = size
	p.net.DSCP = dscp
	l := w.link(f, p.toSrv)
	if d := f.spec.ExtraDelay.D(); d > 0 {
		// The flow's own stretch of path before the bottleneck: a
		// constant delay, so the datagram keeps its place in the order.
		f.held = append(f.held, heldPacket{at: now.Add(d), p: p, link: l})
		return
	}
	l.Enqueue(now, &p.net)
}

// release puts f's held datagrams that have waited out its extra_delay
// on their links.
func (w *world) release(now clock.Mono, f *flow) {
	for len(f.held) > 0 && !now.Before(f.held[0].at) {
		h := f.held[0]
		f.held[0] = heldPacket{}
		f.held = f.held[1:]
		h.link.Enqueue(now, &h.p.net)
	}
}

// deliver hands a packet that crossed a link to its endpoint.
func (w *world) deliver(now clock.Mono, np *netem.Packet) {
	p := w.pool.byHandle(np.Handle)
	w.flows[p.flow].arrive(w, now, p)
	w.pool.put(p)
}

// loop runs the event loop to the end of the scenario.
func (w *world) loop(opts Options) error {
	s := w.s
	end := clock.Mono(0).Add(s.Duration.D())
	changes := slices.Clone(s.Changes)
	slices.SortStableFunc(changes, func(a, b scenario.Change) int { return int(a.At - b.At) })

	// Jain's window: from the last bulk start to the first bulk stop.
	markAt := [2]clock.Mono{0, end}
	for _, f := range w.flows {
		if f.isBulk() && !f.reverse {
			markAt[0] = max(markAt[0], f.start)
			markAt[1] = min(markAt[1], f.end)
		}
	}
	marked := 0
	nextSample := clock.Mono(0).Add(opts.SampleInterval)
	nextProgress := clock.Mono(0)
	now := clock.Mono(0)
	for {
		// Apply everything due at now, in a fixed order.
		for len(changes) > 0 && !now.Before(clock.Mono(0).Add(changes[0].At.D())) {
			if err := w.apply(now, changes[0]); err != nil {
				return err
			}
			changes = changes[1:]
		}
		for _, f := range w.flows {
			w.release(now, f)
		}
		for _, l := range []*netem.Link{w.fwd, w.rev} {
			for p := l.Poll(now); p != nil; p = l.Poll(now) {
				w.deliver(now, p)
			}
		}
		for _, f := range w.flows {
			f.drive(w, now)
		}
		for marked < 2 && !now.Before(markAt[marked]) {
			for _, f := range w.flows {
				f.st.bytesAtMark[marked] = f.st.bytes
			}
			marked++
		}
		if !now.Before(nextSample) {
			w.sample(nextSample, opts.SampleInterval)
			nextSample = nextSample.Add(opts.SampleInterval)
		}
		if opts.Progress != nil && !now.Before(nextProgress) {
			opts.Progress(now.Sub(0), s.Duration.D())
			nextProgress = now.Add(time.Second)
		}
		if !now.Before(end) {
			break
		}

		// Jump to the earliest next event.
		next := end
		consider := func(t clock.Mono) {
			if t != 0 && t.Before(next) {
				next = t
			}
		}
		for _, l := range []*netem.Link{w.fwd, w.rev} {
			if t, ok := l.NextEvent(); ok {
				consider(t)
			}
		}
		for _, f := range w.flows {
			consider(f.nextEvent(now))
			if len(f.held) > 0 {
				consider(f.held[0].at)
			}
		}
		if len(changes) > 0 {
			consider(clock.Mono(0).Add(changes[0].At.D()))
		}
		if marked < 2 {
			consider(markAt[marked])
		}
		consider(nextSample)
		if !next.After(now) {
			next = now.Add(time.Microsecond) // guard: never stand still
		}
		now = next
	}
	if opts.Progress != nil {
		opts.Progress(s.Duration.D(), s.Duration.D())
	}
	return nil
}

// apply carries out a scheduled path change at now.
func (w *world) apply(now clock.Mono, c scenario.Change) error {
	if c.Forward != nil {
		if err := w.fwd.ApplyChange(now, *c.Forward); err != nil {
			return fmt.Errorf("%w: change at %v: forward: %w", ErrScenario, c.At.D(), err)
		}
	}
	if c.Reverse != nil {
		if err := w.rev.ApplyChange(now, *c.Reverse); err != nil {
			return fmt.Errorf("%w: change at %v: reverse: %w", ErrScenario, c.At.D(), err)
		}
	}
	return nil
}

// sample closes one time-series interval ending at t.
func (w *world) sample(t clock.Mono, step time.Duration) {
	if !w.trace {
		for _, f := range w.flows {
			f.st.ivBytes, f.st.ivOWDSum, f.st.ivOWDN = 0, 0, 0
		}
		return
	}
	st := w.fwd.Stats()
	capBps := float64(w.fwd.Rate())
	if off := st.OfferedBytes - w.offered; off > 0 || capBps == 0 {
		capBps = float64(off*8) / step.Seconds()
	}
	w.offered = st.OfferedBytes
	w.capacity = append(w.capacity, capBps)
	for i, f := range w.flows {
		se := &w.series[i]
		se.T = append(se.T, t.Sub(0).Seconds())
		se.GoodputBps = append(se.GoodputBps, float64(f.st.ivBytes*8)/step.Seconds())
		owd := nan()
		if f.st.ivOWDN > 0 {
			owd = f.st.ivOWDSum / float64(f.st.ivOWDN)
		}
		se.OWDms = append(se.OWDms, owd)
		cwnd, age, rate := nan(), nan(), nan()
		if f.isBulk() && f.cli != nil {
			cwnd = float64(f.cli.Controller().Window())
		}
		if f.isUpdates() {
			if f.age.Started() {
				age = ms(f.age.Age(t))
			}
			if f.cli != nil {
				rate = float64(f.cli.Policy().Rate())
			}
		}
		se.CwndBytes = append(se.CwndBytes, cwnd)
		se.AgeMs = append(se.AgeMs, age)
		se.RateHz = append(se.RateHz, rate)
		f.st.ivBytes, f.st.ivOWDSum, f.st.ivOWDN = 0, 0, 0
	}
}
