package sim

import (
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// flow is one scenario flow: its sender at one end and receiver at the other.
type flow struct {
	idx     int
	spec    scenario.Flow
	start   clock.Mono
	end     clock.Mono
	reverse bool // data through the reverse link
	dscp    uint8
	mss     cc.ByteCount

	// Sender.
	ctl      cc.Controller // bulk: window controller; updates: the policy
	policy   acp.Policy    // update flows only
	tr       *recovery.Tracker
	nextSend clock.Mono
	// Bulk stream: chunks of mss bytes; retx holds chunks to send again.
	nextChunk   int64
	totalChunks int64 // -1 = unlimited
	retx        []int64
	// Latest ACK's T3 and its arrival T4, echoed on data for in-band clocks.
	echoT3, echoT4 clock.Stamp
	lastAck        clock.Mono

	// Receiver.
	rx         receiver
	contiguous int64          // chunks delivered in order
	ooo        map[int64]bool // chunks received above contiguous
	age        acp.AgeMeter

	st flowStats
}

// flowStats accumulates what report.Flow needs.
type flowStats struct {
	sent, delivered     int64
	sentBytes           int64
	bytes               int64 // application bytes delivered (in order for bulk)
	lost, retransmitted int64
	owdMs, queueMs      []float64
	slowStart           time.Duration
	signals             [3]int64 // by cc.DelaySignal
	clockErrSum         float64  // ms
	clockErrN           int64
	// Jain window marks.
	bytesAtMark [2]int64
	// Series interval accumulators.
	ivBytes  int64
	ivOWDSum float64
	ivOWDN   int64
}

func (f *flow) isBulk() bool    { return f.spec.Kind == scenario.KindBulk }
func (f *flow) isUpdates() bool { return f.spec.IsUpdates() }
func (f *flow) active(now clock.Mono) bool {
	return !now.Before(f.start) && now.Before(f.end)
}

// wireSize is the size on the wire of one data packet of this flow.
func (f *flow) wireSize() int {
	if f.spec.Kind == scenario.KindCBR {
		return f.spec.Size
	}
	return f.payload() + headerBytes
}

func (f *flow) payload() int {
	if f.isBulk() {
		return int(f.mss)
	}
	return f.spec.Size
}

// hasData reports whether a bulk sender has something to send.
func (f *flow) hasData() bool {
	return len(f.retx) > 0 || f.totalChunks < 0 || f.nextChunk < f.totalChunks
}

// nextEvent is the sender's next deadline (0 = none).
func (f *flow) nextEvent(now clock.Mono) clock.Mono {
	t := f.tr.NextTimer()
	if now.Before(f.start) {
		return recovery.Earliest(t, f.start)
	}
	if !f.active(now) {
		return t
	}
	switch {
	case f.isBulk():
		if f.hasData() && f.ctl.CanSend(f.tr.TotalInFlight()) {
			t = recovery.Earliest(t, max(f.nextSend, now))
		}
	case f.isUpdates():
		t = recovery.Earliest(t, max(f.policy.NextSendTime(), now, f.start))
	default: // cbr
		t = recovery.Earliest(t, max(f.nextSend, f.start))
	}
	return t
}

// pace moves nextSend on by one packet at rate (bit/s); no pacing if 0.
func (f *flow) pace(now clock.Mono, size int, rate cc.Bandwidth) {
	if rate == 0 {
		f.nextSend = now
		return
	}
	gap := time.Duration(float64(size*8) / float64(rate) * 1e9)
	f.nextSend = max(f.nextSend, now).Add(gap)
}

// makeData fills a new outgoing packet of this flow.
func (f *flow) makeData(w *world, now clock.Mono, kind pktKind) *packet {
	p := w.pool.get()
	p.kind = kind
	p.flow = f.idx
	p.payload = f.payload()
	p.sent = now
	p.stamp = senderStamp(now)
	p.echoT3, p.echoT4 = f.echoT3, f.echoT4
	p.net.FlowKey = uint64(f.idx)<<1 | 0
	p.net.Size = f.wireSize()
	p.net.DSCP = f.dscp
	return p
}

// trySend sends whatever the flow may send at now.
func (f *flow) trySend(w *world, now clock.Mono) {
	if !f.active(now) {
		return
	}
	switch {
	case f.isBulk():
		for f.hasData() && f.ctl.CanSend(f.tr.TotalInFlight()) && !now.Before(f.nextSend) {
			var chunk int64
			if n := len(f.retx); n > 0 {
				chunk = f.retx[0]
				f.retx = f.retx[1:]
				if chunk < f.contiguous || f.ooo[chunk] {
					continue // delivered after all (spurious loss)
				}
				f.st.retransmitted++
			} else {
				chunk = f.nextChunk
				f.nextChunk++
			}
			p := f.makeData(w, now, kindData)
			p.chunk = chunk
			p.pn = f.tr.OnSent(now, f.mss, 0, chunk, 1)
			f.ctl.OnPacketSent(now, p.pn, f.mss, f.tr.TotalInFlight())
			f.pace(now, p.net.Size, f.ctl.PacingRate())
			w.send(now, f.reverse, p)
		}
	case f.isUpdates():
		if now.Before(f.policy.NextSendTime()) {
			return
		}
		// The source samples at will: the freshest update is generated
		// the moment the regulator lets one go (ACP's generate-at-will).
		p := f.makeData(w, now, kindUpdate)
		p.gen = now
		p.pn = f.tr.OnSent(now, cc.ByteCount(p.payload), 0, -1, 0)
		f.policy.OnUpdateSent(now, p.pn, now)
		w.send(now, f.reverse, p)
	default: // cbr
		for !now.Before(f.nextSend) {
			p := f.makeData(w, now, kindCBR)
			f.nextSend = max(f.nextSend, f.start).Add(time.Duration(float64(f.spec.Size*8) / float64(f.spec.Rate) * 1e9))
			w.send(now, f.reverse, p)
		}
	}
}

// onTimers fires loss-detection, RTO and delayed-ACK deadlines due at now.
func (f *flow) onTimers(w *world, now clock.Mono) {
	if f.rx.ackAt != 0 && !now.Before(f.rx.ackAt) {
		w.sendAck(now, f)
	}
	if t := f.tr.LossTime(); t != 0 && !now.Before(t) {
		f.tr.DetectLost(now, f.lostFunc(now))
		f.tr.Compact()
	}
	if t := f.tr.RTOAt(); t != 0 && !now.Before(t) {
		f.ctl.OnRetransmissionTimeout(now)
		f.tr.OnRTO(now, f.lostFunc(now))
	}
}

// lostFunc reports a lost packet to the controller and queues its data.
func (f *flow) lostFunc(now clock.Mono) recovery.LostFunc {
	return func(_ clock.Mono, pn cc.PacketNumber, p *recovery.Packet) {
		f.st.lost++
		f.ctl.OnLoss(now, cc.LossEvent{PacketNumber: pn, Bytes: p.Bytes, SentTime: p.Sent, PriorInFlight: f.tr.TotalInFlight() + p.Bytes})
		if p.Len > 0 {
			f.retx = append(f.retx, p.Offset)
		}
	}
}

// onData handles a data/update/cbr packet at the receiver.
func (f *flow) onData(w *world, now clock.Mono, p *packet) {
	trueOWD := now.Sub(p.sent)
	f.st.delivered++
	f.st.owdMs = append(f.st.owdMs, ms(trueOWD))
	f.st.queueMs = append(f.st.queueMs, ms(p.net.QueueDelay))
	f.st.ivOWDSum += ms(trueOWD)
	f.st.ivOWDN++
	if w.trace {
		w.owdSamples[f.idx] = append(w.owdSamples[f.idx], ms(trueOWD))
	}
	if p.kind == kindCBR {
		f.deliverBytes(now, int64(p.net.Size))
		return
	}
	est, ok, ackNow := f.rx.onPacket(now, p)
	if ok {
		f.st.clockErrSum += ms(absDur(est - trueOWD))
		f.st.clockErrN++
	}
	switch p.kind {
	case kindUpdate:
		if f.age.Deliver(p.gen, now) {
			f.deliverBytes(now, int64(p.payload))
		}
	case kindData:
		f.deliverChunk(now, p.chunk)
	}
	if ackNow {
		w.sendAck(now, f)
	}
}

func (f *flow) deliverChunk(now clock.Mono, chunk int64) {
	if chunk < f.contiguous || f.ooo[chunk] {
		return // duplicate
	}
	if chunk > f.contiguous {
		if f.ooo == nil {
			f.ooo = map[int64]bool{}
		}
		f.ooo[chunk] = true
		return
	}
	n := int64(1)
	f.contiguous++
	for f.ooo[f.contiguous] {
		delete(f.ooo, f.contiguous)
		f.contiguous++
		n++
	}
	f.deliverBytes(now, n*int64(f.mss))
}

func (f *flow) deliverBytes(now clock.Mono, n int64) {
	if now.After(f.end) {
		return // after the flow's end: not part of its goodput
	}
	f.st.bytes += n
	f.st.ivBytes += n
}

// onAck handles an ACK frame at the sender (RFC 9002 §5–6 order: newly
// acknowledged packets and the RTT sample first, then loss detection).
func (f *flow) onAck(now clock.Mono, a *ackFrame) {
	f.echoT3, f.echoT4 = a.t3, senderStamp(now)
	prior := f.tr.TotalInFlight()
	newLargest := false
	var rttSample time.Duration
	// The RTT sample comes from the largest acknowledged packet, if this
	// frame newly acknowledges it (RFC 9002 §5.1), less the ACK delay
	// when that does not go below min RTT (§5.3).
	if a.nRanges > 0 {
		largest := a.ranges[0].Hi
		if sp := f.tr.Get(largest); sp != nil && sp.State == recovery.InFlight {
			newLargest = true
			rttSample = now.Sub(sp.Sent)
			if m := f.tr.RTT().Min(); m == 0 || rttSample-a.ackDelay >= m {
				rttSample -= a.ackDelay
			}
			f.tr.RTT().Update(rttSample)
		}
	}
	acked := false
	// Ranges are newest first; the controller wants packet-number order.
	for i := a.nRanges - 1; i >= 0; i-- {
		rg := a.ranges[i]
		for pn := max(rg.Lo, f.tr.Base()); pn <= rg.Hi; pn++ {
			sp, ok := f.tr.Ack(pn)
			if !ok {
				continue
			}
			acked = true
			s := cc.AckSample{PacketNumber: pn, Bytes: sp.Bytes, SentTime: sp.Sent, PriorInFlight: prior, ClockSynced: a.synced}
			if newLargest && pn == rg.Hi && i == 0 {
				s.RTT = rttSample
			}
			for j := 0; j < a.nSamples; j++ {
				if a.samples[j].pn == pn {
					s.OWD, s.OWDValid = a.samples[j].owd, true
					break
				}
			}
			f.ctl.OnAck(now, s)
			f.noteControllerState(now)
		}
	}
	f.tr.DetectLost(now, f.lostFunc(now))
	if acked {
		f.tr.ArmRTO(now)
	}
	f.tr.Compact()
}

// noteControllerState accumulates the trace summary at every ACK.
func (f *flow) noteControllerState(now clock.Mono) {
	m := f.ctl.Metrics()
	if m.InSlowStart && f.lastAck != 0 {
		f.st.slowStart += now.Sub(f.lastAck)
	}
	f.lastAck = now
	if int(m.Signal) < len(f.st.signals) {
		f.st.signals[m.Signal]++
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
