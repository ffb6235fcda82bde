package sim

import (
	"encoding/binary"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
)

// flow is one scenario flow. Bulk and update flows are one connection of
// the shipped protocol: a client session at the sending end and a server
// session at the receiving end, created when the client's Initial arrives
// (as transport's Listener does). CBR flows are the simulator's own
// unresponsive senders.
type flow struct {
	idx     int
	spec    scenario.Flow
	start   clock.Mono
	end     clock.Mono
	reverse bool // data through the reverse link
	dscp    uint8

	// The connection (bulk and update flows).
	cfg      session.Config
	cli, srv *session.Session
	cliClock wallClock // the data sender's clock: the truth
	srvClock wallClock // the receiver's clock, offset and skewed
	written  int64     // stream bytes written so far (bulk)
	closed   bool      // CloseWrite called (bulk with a byte limit)
	stopped  bool      // past end: neither end is driven any more

	// held are the flow's datagrams waiting out its extra_delay before
	// they join their link, oldest first (the delay is the same for
	// each, so the order in which they were sent is the order of release).
	held []heldPacket

	nextSend clock.Mono // cbr: next packet; periodic update source: next reading
	age      acp.AgeMeter
	lastAck  clock.Mono
	st       flowStats
}

// heldPacket is a datagram delayed by its flow's extra_delay: it joins
// link at at.
type heldPacket struct {
	at   clock.Mono
	p    *packet
	link *netem.Link
}

// flowStats accumulates what report.Flow needs.
type flowStats struct {
	sent, delivered int64 // data-bearing datagrams (stream data, updates, cbr)
	sentBytes       int64 // … their bytes on the wire
	bytes           int64 // application bytes delivered (in order for bulk)
	owdMs, queueMs  []float64
	slowStart       time.Duration
	modes           map[string]time.Duration // time per cc.Metrics.Mode
	signals         [3]int64                 // by cc.DelaySignal
	clockErrSum     float64                  // ms
	clockErrN       int64
	// Jain window marks.
	bytesAtMark [2]int64
	// Series interval accumulators.
	ivBytes  int64
	ivOWDSum float64
	ivOWDN   int64
}

func (f *flow) isBulk() bool { return f.spec.Kind == scenario.KindBulk }

// periodic reports whether the flow's source takes a reading every
// 1/update_rate (acp and lazy flows with update_rate) instead of
// generating an update whenever the regulator would send one.
func (f *flow) periodic() bool  { return f.spec.PeriodicSource() }
func (f *flow) isUpdates() bool { return f.spec.IsUpdates() }
func (f *flow) isCBR() bool     { return !f.isBulk() && !f.isUpdates() }

// zeros is the stream content of bulk flows: the bytes do not matter, only
// that the session moves them.
var zeros = make([]byte, 64<<10)

func newFlow(s *scenario.Scenario, i int, spec scenario.Flow, mode syncMode) (*flow, error) {
	f := &flow{
		idx: i, spec: spec, dscp: spec.DSCP.Code(), reverse: spec.Reverse,
		start:    clock.Mono(0).Add(spec.Start.D()),
		end:      clock.Mono(0).Add(spec.End(s).D()),
		srvClock: wallClock{offset: s.ClockOffset.D(), skew: s.ClockSkewPPM * 1e-6},
	}
	f.nextSend = f.start
	if f.isCBR() {
		return f, nil
	}
	// The session as transport.Config's defaults build it, but for what
	// the scenario sets: the segment size (fixed: no path MTU discovery
	// in virtual time), the controller or update policy, the DSCP and the
	// clock model.
	f.cfg = session.Config{DisablePathMTUDiscovery: true, StreamDSCP: spec.DSCP, UpdateDSCP: spec.DSCP, Seed: flowSeed(s.Seed, i)}
	switch mode {
	case syncPerfect:
		f.cfg.TrustPeerClock = true
		f.srvClock = wallClock{}
	case syncNone:
		f.cfg.NoInband = true
	}
	if f.isBulk() {
		f.cfg.MaxDatagram = s.MSS + wire.HeaderLen + wire.DataOverhead
		name := spec.CC
		f.cfg.NewController = func(mss cc.ByteCount) (cc.Controller, error) { return cc.New(name, mss) }
		if spec.MaxWindow > 0 {
			// Both ends read it: the receiver grants at most this much
			// beyond what it read, and the sender assumes no more before
			// the first grant (session.Config.ReceiveWindow).
			f.cfg.ReceiveWindow = spec.MaxWindow
		}
	} else {
		// One update per datagram: the datagram is sized to the update.
		f.cfg.MaxDatagram = max(spec.Size+wire.HeaderLen+wire.UpdateOverhead, 256)
		f.cfg.NewUpdatePolicy = func(size cc.ByteCount) (acp.Policy, error) { return updatePolicy(spec, size) }
	}
	// Build one session now so a bad controller or policy name fails the
	// run before it starts.
	if _, err := session.New(f.cfg, 0, true, 0); err != nil {
		return nil, err
	}
	return f, nil
}

// flowSeed is flow i's session seed (the packet numbers its sender skips),
// derived from the scenario's seed so that a run repeats exactly: the
// splitmix64 finaliser of the pair, never 0 (which asks for a default).
func flowSeed(seed int64, i int) uint64 {
	z := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i+1)*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return max(z^z>>31, 1)
}

// updatePolicy builds an update flow's policy: a fixed rate, or the policy
// named by the flow's CC, as transport builds it.
func updatePolicy(spec scenario.Flow, size cc.ByteCount) (acp.Policy, error) {
	if spec.Kind == scenario.KindFixed {
		return acp.NewFixed(acp.Rate(spec.UpdateRate), acp.Config{UpdateSize: size})
	}
	return acp.NewPolicy(spec.CC, acp.Config{UpdateSize: size})
}

// nextEvent is the flow's next deadline after now (0: none).
func (f *flow) nextEvent(now clock.Mono) clock.Mono {
	if f.stopped {
		return 0
	}
	if now.Before(f.start) {
		return f.start
	}
	if f.isCBR() {
		return f.nextSend
	}
	var t clock.Mono
	for _, s := range []*session.Session{f.cli, f.srv} {
		if s != nil {
			t = earliest(t, s.NextTimeout(now))
		}
	}
	if f.isUpdates() && f.cli != nil {
		if f.periodic() {
			// A periodic source: the next reading is due at its time; the
			// session's own deadline covers the regulator's gate.
			t = earliest(t, max(f.nextSend, now))
		} else {
			// The source samples at will: the next update is generated
			// when the regulator will let it go.
			t = earliest(t, max(f.cli.Policy().NextSendTime(), now))
		}
	}
	return t
}

func earliest(a, b clock.Mono) clock.Mono {
	if a == 0 || (b != 0 && b.Before(a)) {
		return b
	}
	return a
}

// drive runs the flow's endpoints at now: due timers, the application
// (stream writes, fresh updates), and everything they may send.
func (f *flow) drive(w *world, now clock.Mono) {
	if f.stopped || now.Before(f.start) {
		return
	}
	if !now.Before(f.end) {
		f.stopped = true // the flow ends: neither end acts again
		return
	}
	if f.isCBR() {
		for !now.Before(f.nextSend) {
			w.sendCBR(now, f)
			f.nextSend = f.nextSend.Add(time.Duration(float64(f.spec.Size*8) / float64(f.spec.Rate) * 1e9))
		}
		return
	}
	if f.cli == nil {
		var err error
		if f.cli, err = session.New(f.cfg, uint64(f.idx)+1, true, now); err != nil {
			panic(err) // validated in newFlow
		}
	}
	f.feed(now, w.scratch)
	for _, s := range []*session.Session{f.cli, f.srv} {
		if s == nil {
			continue
		}
		if t := s.NextTimeout(now); t != 0 && !now.Before(t) {
			s.Timeout(now)
		}
		w.pollAll(now, f, s == f.srv)
	}
}

// feed is the sending application: a bulk flow keeps the send buffer full
// (up to its byte limit, then closes the stream); an update flow generates
// a fresh update whenever the regulator would send one (ACP's
// generate-at-will source), or with update_rate a reading every
// 1/update_rate handed to SendUpdate (a newer one replaces one the
// regulator has not sent yet), stamped with its true generation time.
func (f *flow) feed(now clock.Mono, buf []byte) {
	switch {
	case f.isBulk():
		for !f.closed {
			n := f.cli.WriteSpace()
			if f.spec.Bytes > 0 {
				n = int(min(int64(n), f.spec.Bytes-f.written))
			}
			if n == 0 {
				break
			}
			k, _ := f.cli.Write(zeros[:min(n, len(zeros))])
			f.written += int64(k)
			if k == 0 {
				break
			}
		}
		if f.spec.Bytes > 0 && f.written >= f.spec.Bytes && !f.closed {
			f.closed = true
			_ = f.cli.CloseWrite()
		}
	case f.isUpdates() && f.periodic():
		// Readings are due at start + k/update_rate; one due before the
		// connection is open is taken and lost, as an application's
		// SendUpdate before the handshake would be.
		period := time.Duration(float64(time.Second) / f.spec.UpdateRate)
		for !now.Before(f.nextSend) {
			if f.cli.Opened() {
				u := buf[:f.spec.Size]
				binary.BigEndian.PutUint64(u, uint64(f.nextSend))
				_ = f.cli.SendUpdate(now, f.cliClock.micros(now), u)
			}
			f.nextSend = f.nextSend.Add(period)
		}
	case f.isUpdates():
		if f.cli.Opened() && !now.Before(f.cli.Policy().NextSendTime()) {
			u := buf[:f.spec.Size]
			binary.BigEndian.PutUint64(u, uint64(now))
			_ = f.cli.SendUpdate(now, f.cliClock.micros(now), u)
		}
	}
}

// arrive hands a datagram that crossed a link to its endpoint.
func (f *flow) arrive(w *world, now clock.Mono, p *packet) {
	if f.stopped {
		return
	}
	if p.cbr {
		f.measure(w, now, p, 0, false)
		f.deliverBytes(now, int64(p.net.Size))
		return
	}
	if !p.toSrv {
		if f.cli == nil || !f.cli.Handle(now, f.cliClock.micros(now), p.dgram) {
			return
		}
		if typ, ok := frameType(p.dgram); ok && typ == wire.TypeAck {
			f.noteControllerState(now)
		}
		return
	}
	wall := f.srvClock.micros(now)
	if f.srv == nil {
		h, body, err := wire.ParseHeader(p.dgram)
		var in wire.Initial
		if err != nil || h.Type != wire.TypeInitial || wire.ParseInitial(body, len(p.dgram), &in) != nil {
			return // for nobody, as transport's Listener drops it
		}
		if f.srv, err = session.New(f.cfg, h.ConnID, false, now); err != nil {
			panic(err) // validated in newFlow
		}
	}
	if !f.srv.Handle(now, wall, p.dgram) {
		return
	}
	if p.data {
		h, _, _ := wire.ParseHeader(p.dgram)
		est, ok := f.srv.OWDEstimate(h.Timestamp, wall)
		f.measure(w, now, p, est, ok)
	}
	f.read(now, w.scratch)
}

// measure records a data-bearing datagram's true one-way and queueing
// delay, and how far the receiver's estimate (if trusted) was off.
func (f *flow) measure(w *world, now clock.Mono, p *packet, est time.Duration, trusted bool) {
	trueOWD := now.Sub(p.sent)
	f.st.delivered++
	f.st.owdMs = append(f.st.owdMs, ms(trueOWD))
	f.st.queueMs = append(f.st.queueMs, ms(p.net.QueueDelay))
	f.st.ivOWDSum += ms(trueOWD)
	f.st.ivOWDN++
	if w.trace {
		w.owdSamples[f.idx] = append(w.owdSamples[f.idx], ms(trueOWD))
	}
	if trusted {
		f.st.clockErrSum += ms(absDur(est - trueOWD))
		f.st.clockErrN++
	}
}

// read is the receiving application: it drains the stream (counting
// in-order bytes) and takes the freshest update (measuring its true age
// from the generation time in its payload).
func (f *flow) read(now clock.Mono, buf []byte) {
	for {
		n, _ := f.srv.Read(buf)
		if n == 0 {
			break
		}
		f.deliverBytes(now, int64(n))
	}
	if u, ok := f.srv.TakeUpdate(); ok && len(u.Payload) >= 8 {
		gen := clock.Mono(binary.BigEndian.Uint64(u.Payload))
		if f.age.Deliver(gen, now) {
			f.deliverBytes(now, int64(len(u.Payload)))
		}
	}
}

func (f *flow) deliverBytes(now clock.Mono, n int64) {
	if now.After(f.end) {
		return // after the flow's end: not part of its goodput
	}
	f.st.bytes += n
	f.st.ivBytes += n
}

// noteControllerState accumulates the trace summary at every ACK: the
// stream controller's modes and signal for a bulk flow, the update
// policy's signal otherwise (a policy has no modes).
func (f *flow) noteControllerState(now clock.Mono) {
	var m cc.Metrics
	if f.isBulk() {
		m = f.cli.Controller().Metrics()
	} else {
		m.Signal = f.cli.Policy().Signal()
	}
	if f.lastAck != 0 {
		dt := now.Sub(f.lastAck)
		if m.InSlowStart {
			f.st.slowStart += dt
		}
		if m.Mode != "" {
			if f.st.modes == nil {
				f.st.modes = map[string]time.Duration{}
			}
			f.st.modes[m.Mode] += dt
		}
	}
	f.lastAck = now
	if int(m.Signal) < len(f.st.signals) {
		f.st.signals[m.Signal]++
	}
}

// frameType is a datagram's frame type (without validating the rest).
func frameType(b []byte) (wire.Type, bool) {
	h, _, err := wire.ParseHeader(b)
	return h.Type, err == nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
