// Package sim is a discrete-event simulator in virtual time. It drives the
// real controllers of cc, owd and acp — the same code the UDP endpoints run —
// through two bench/netem links (forward and reverse, possibly asymmetric),
// so 100 simulated seconds take well under a second and a run is
// reproducible bit for bit from its seed.
//
// Model. Every flow has a sender at one end and a receiver at the other;
// forward flows send data through the forward link and get ACKs through the
// reverse link, reverse flows the other way round. Bulk flows are reliable
// QUIC-like streams: packet numbers are never reused, the receiver ACKs
// every second packet, after 25 ms, or at once on a gap, with ranges and one
// receiver-stamped OWD sample per packet; the sender detects loss by
// packet and time threshold (RFC 9002 §6.1) and by RTO with backoff
// (RFC 6298) — both from internal/recovery, shared with transport —
// retransmits lost chunks under new numbers, and paces at the
// controller's rate. Update flows (acp, fixed, lazy) send the freshest update
// whenever their policy allows and never retransmit; each update is ACKed.
// CBR flows are unresponsive. Receivers' clocks may be offset and skewed
// (see clock.go). Times are exact: the loop jumps from event to event.
package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	_ "github.com/fresh-udp/fresh/owd" // registers "owd", "owd-eq2", "owd-eq7"
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

	owdSamples [][]float64
	series     []report.Series
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
	w := &world{s: s, trace: opts.Trace}
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
	mode := map[string]syncMode{"perfect": syncPerfect, "inband": syncInband, "none": syncNone}[s.ClockSync]
	for i, spec := range s.Flows {
		f, err := newFlow(w, i, spec, mode)
		if err != nil {
			return nil, fmt.Errorf("%w: flow %q: %w", ErrScenario, spec.Name, err)
		}
		w.flows = append(w.flows, f)
	}
	w.owdSamples = make([][]float64, len(w.flows))
	w.series = make([]report.Series, len(w.flows))
	return w, nil
}

func newFlow(w *world, i int, spec scenario.Flow, mode syncMode) (*flow, error) {
	s := w.s
	dscp, err := scenario.ParseDSCP(spec.DSCP)
	if err != nil {
		return nil, err
	}
	f := &flow{
		idx: i, spec: spec, dscp: dscp, reverse: spec.Reverse,
		start: clock.Mono(0).Add(spec.Start.D()),
		end:   clock.Mono(0).Add(spec.End(s).D()),
		mss:   cc.ByteCount(s.MSS),
		tr:    recovery.New(),
	}
	clk := rxClock{mode: mode, offset: s.ClockOffset.D(), skew: s.ClockSkewPPM * 1e-6}
	if mode == syncInband {
		if clk.inband, err = clock.NewInband(clock.InbandConfig{}); err != nil {
			return nil, err
		}
	}
	switch {
	case f.isBulk():
		if f.ctl, err = cc.New(spec.CC, f.mss); err != nil {
			return nil, err
		}
		f.totalChunks = -1
		if spec.Bytes > 0 {
			f.totalChunks = (spec.Bytes + int64(f.mss) - 1) / int64(f.mss)
		}
		f.rx = newReceiver(clk, 2)
	case f.isUpdates():
		cfg := acp.Config{UpdateSize: cc.ByteCount(spec.Size)}
		var p acp.Policy
		switch spec.Kind {
		case scenario.KindFixed:
			p, err = acp.NewFixed(acp.Rate(spec.UpdateRate), cfg)
		default:
			var c cc.Controller
			c, err = cc.New(spec.CC, cc.ByteCount(spec.Size))
			if err == nil {
				var ok bool
				if p, ok = c.(acp.Policy); !ok {
					err = fmt.Errorf("cc %q is not an update policy (want acp, acp-literal or lazy)", spec.CC)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		f.policy, f.ctl = p, p
		f.rx = newReceiver(clk, 1)
	default: // cbr
		f.ctl = nil
	}
	f.nextSend = f.start
	return f, nil
}

// link returns the link data of a flow takes (reverse=false: forward).
func (w *world) link(reverse bool) *netem.Link {
	if reverse {
		return w.rev
	}
	return w.fwd
}

// send puts p on the link of its direction.
func (w *world) send(now clock.Mono, reverse bool, p *packet) {
	f := w.flows[p.flow]
	f.st.sent++
	f.st.sentBytes += int64(p.net.Size)
	w.link(reverse).Enqueue(now, &p.net)
}

// sendAck sends the receiver's ACK frame back toward the flow's sender.
func (w *world) sendAck(now clock.Mono, f *flow) {
	p := w.pool.get()
	p.kind = kindAck
	p.flow = f.idx
	p.sent = now
	f.rx.fillAck(now, &p.ack)
	p.net.FlowKey = uint64(f.idx)<<1 | 1
	p.net.Size = ackBytes
	p.net.DSCP = f.dscp
	w.link(!f.reverse).Enqueue(now, &p.net)
}

// deliver hands a packet that crossed a link to its endpoint.
func (w *world) deliver(now clock.Mono, np *netem.Packet) {
	p := w.pool.byHandle(np.Handle)
	f := w.flows[p.flow]
	if p.kind == kindAck {
		f.onAck(now, &p.ack)
	} else {
		f.onData(w, now, p)
	}
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
		for _, l := range []*netem.Link{w.fwd, w.rev} {
			for p := l.Poll(now); p != nil; p = l.Poll(now) {
				w.deliver(now, p)
			}
		}
		for _, f := range w.flows {
			f.onTimers(w, now)
			f.trySend(w, now)
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
			consider(f.rx.ackAt)
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
		if f.isBulk() {
			cwnd = float64(f.ctl.Window())
		}
		if f.isUpdates() {
			if f.age.Started() {
				age = ms(f.age.Age(t))
			}
			rate = float64(f.policy.Rate())
		}
		se.CwndBytes = append(se.CwndBytes, cwnd)
		se.AgeMs = append(se.AgeMs, age)
		se.RateHz = append(se.RateHz, rate)
		f.st.ivBytes, f.st.ivOWDSum, f.st.ivOWDN = 0, 0, 0
	}
}
