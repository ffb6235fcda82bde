package quichook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// recorder is a controller that records what the sender tells it and
// grants a fixed window.
type recorder struct {
	window cc.ByteCount
	acks   []cc.AckSample
	losses []cc.LossEvent
	rtos   int
}

func (r *recorder) Name() string                                                         { return "recorder" }
func (r *recorder) OnPacketSent(clock.Mono, cc.PacketNumber, cc.ByteCount, cc.ByteCount) {}
func (r *recorder) OnAck(_ clock.Mono, a cc.AckSample)                                   { r.acks = append(r.acks, a) }
func (r *recorder) OnLoss(_ clock.Mono, l cc.LossEvent)                                  { r.losses = append(r.losses, l) }
func (r *recorder) OnRetransmissionTimeout(clock.Mono)                                   { r.rtos++ }
func (r *recorder) Window() cc.ByteCount                                                 { return r.window }
func (r *recorder) PacingRate() cc.Bandwidth                                             { return 0 }
func (r *recorder) CanSend(inFlight cc.ByteCount) bool                                   { return inFlight < r.window }
func (r *recorder) Metrics() cc.Metrics                                                  { return cc.Metrics{Window: r.window} }

const ms = clock.Mono(time.Millisecond)

func fbOf(synced bool, ranges []seqRange, samples ...owdSample) *feedback {
	f := &feedback{synced: synced, nRanges: len(ranges), nSamples: len(samples)}
	copy(f.ranges[:], ranges)
	copy(f.samples[:], samples)
	return f
}

func TestSenderGatesByWindowAndFeedsSamples(t *testing.T) {
	r := &recorder{window: 3000}
	s := testSender(r)
	n := 0
	for s.canSend(0) {
		s.onSent(clock.Mono(n)*ms, 1000)
		n++
	}
	require.Equal(t, 3, n, "the window holds three 1000-byte datagrams")
	// Acknowledge 0 and 1 (one feedback, ranges descending), with OWD for 1.
	require.Zero(t, s.onFeedback(50*ms, 1, fbOf(true, []seqRange{{0, 1}}, owdSample{seq: 1, owd: 12_000})))
	require.Len(t, r.acks, 2)
	require.Equal(t, cc.PacketNumber(0), r.acks[0].PacketNumber, "in sequence order")
	require.False(t, r.acks[0].OWDValid)
	require.Zero(t, r.acks[0].RTT, "only the largest carries the RTT")
	require.Equal(t, 12*time.Millisecond, r.acks[1].OWD)
	require.True(t, r.acks[1].OWDValid && r.acks[1].ClockSynced)
	require.Equal(t, 49*time.Millisecond, r.acks[1].RTT)
	require.Equal(t, cc.ByteCount(3000), r.acks[0].PriorInFlight)
	require.True(t, s.canSend(50*ms), "acknowledged bytes left the flight")
	require.True(t, s.echo, "the next datagram echoes this feedback")
}

// A range reaching past what was sent is dropped and counted; the ranges
// below it still acknowledge, and later feedback still works (a range
// with sequence 2^62 once made every later feedback look bad).
func TestSenderDropsBadRangesKeepsTheRest(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	for i := range 4 {
		s.onSent(clock.Mono(i)*ms, 1000)
	}
	require.Equal(t, 1, s.onFeedback(10*ms, 1, fbOf(true, []seqRange{{0, 4}})), "4 was never sent")
	require.Empty(t, r.acks)
	require.Equal(t, cc.ByteCount(4000), s.inFlight())
	require.False(t, s.echo, "feedback with nothing usable is not echoed")

	require.Equal(t, 1, s.onFeedback(11*ms, 1, fbOf(true, []seqRange{{3, 1 << 62}, {0, 1}})))
	require.Len(t, r.acks, 2, "0 and 1 acknowledged despite the bad range above them")
	require.True(t, s.echo)
	require.Zero(t, s.onFeedback(12*ms, 1, fbOf(true, []seqRange{{2, 3}})), "later feedback is fine")
	require.Len(t, r.acks, 4)
	require.Zero(t, s.inFlight())
	require.Equal(t, int64(2), s.badRanges)
}

func TestSenderDeclaresLossByThresholds(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	for i := range 10 {
		s.onSent(clock.Mono(i)*ms, 1000)
	}
	// 0..2 missing, 3..9 acknowledged: 0..2 are 3+ below the largest.
	s.onFeedback(40*ms, 1, fbOf(false, []seqRange{{3, 9}}))
	require.Len(t, r.losses, 3)
	require.Equal(t, cc.PacketNumber(0), r.losses[0].PacketNumber)
	require.Equal(t, cc.ByteCount(0), s.inFlight())
	// A late acknowledgement of a datagram declared lost changes nothing:
	// no second ack, no bytes leave the flight twice.
	s.onFeedback(41*ms, 1, fbOf(false, []seqRange{{0, 9}}))
	require.Len(t, r.acks, 7)
	require.Equal(t, cc.ByteCount(0), s.inFlight())

	// Time threshold: 10 and 12 sent, 12 acknowledged; 10 is lost 9/8 RTT
	// after it was sent, not before.
	s.onSent(100*ms, 1000)
	s.onSent(101*ms, 1000)
	s.onSent(102*ms, 1000)
	s.onFeedback(140*ms, 1, fbOf(false, []seqRange{{12, 12}}))
	require.Len(t, r.losses, 3, "not yet: 10 and 11 are within the threshold")
	require.NotZero(t, s.tr.LossTime())
	s.onTimer(s.tr.LossTime())
	require.Len(t, r.losses, 4, "10 lost at the loss timer")
	require.Equal(t, cc.PacketNumber(10), r.losses[3].PacketNumber)
	s.onTimer(s.tr.LossTime())
	require.Len(t, r.losses, 5, "11 a millisecond later")
}

func TestSenderTimeoutEmptiesTheFlight(t *testing.T) {
	r := &recorder{window: 3000}
	s := testSender(r)
	for s.canSend(0) {
		s.onSent(0, 1000)
	}
	require.False(t, s.canSend(0))
	d := s.deadline()
	require.Equal(t, clock.Mono(recovery.InitialRTO), d, "an RTO of 1 s before any RTT sample")
	s.onTimer(d - 1)
	require.Zero(t, r.rtos)
	s.onTimer(d)
	require.Equal(t, 1, r.rtos)
	require.Zero(t, s.inFlight())
	require.True(t, s.canSend(d), "a silent peer does not hold the window shut")
	s.onSent(d, 1000)
	require.Equal(t, d.Add(2*recovery.InitialRTO), s.deadline(), "backed off")
	// The backoff stops at recovery.MaxBackoffRTO, as the session's does:
	// a peer back from an outage is probed every 2 s, not every minute.
	for range 6 {
		at := s.deadline()
		require.True(t, s.onTimer(at))
		s.onSent(at, 1000)
		require.Equal(t, at.Add(recovery.MaxBackoffRTO), s.deadline())
	}
}

func testSender(ctl cc.Controller) *sender {
	s := newSender(ctl, 0)
	return &s
}

// A full feedback datagram's samples reach the right datagrams even when
// they arrived out of order (the sender looks them up with a cursor that
// expects ascending order), and a datagram without one gets none.
func TestSenderMatchesSamplesOutOfOrder(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	for i := range maxSamples + 1 {
		s.onSent(clock.Mono(i)*ms, 1000)
	}
	// Samples for 0..maxSamples−1 in arrival order with 5 and 6 swapped;
	// the last datagram, maxSamples, has no sample (the datagram was full).
	var samples []owdSample
	for i := range maxSamples {
		samples = append(samples, owdSample{seq: uint64(i), owd: int32(1000 + i)})
	}
	samples[5], samples[6] = samples[6], samples[5]
	require.Zero(t, s.onFeedback(100*ms, 1, fbOf(true, []seqRange{{0, maxSamples}}, samples...)))
	require.Len(t, r.acks, maxSamples+1)
	for i, a := range r.acks[:maxSamples] {
		require.True(t, a.OWDValid, "datagram %d", i)
		require.Equal(t, time.Duration(1000+i)*time.Microsecond, a.OWD, "datagram %d", i)
	}
	require.False(t, r.acks[maxSamples].OWDValid)
	// The encoding carries all of them.
	var f feedback
	require.NoError(t, parseFeedback(fbOf(true, []seqRange{{0, maxSamples}}, samples...).append(nil), &f))
	require.Equal(t, maxSamples, f.nSamples)
}

// The one-way delays of feedback go through the session's guard
// (recovery.Tracker.OnAck): a synced sample below −u, above the
// datagram's round trip plus u, or below the smallest so far by more than
// 2u is discarded and counted, and never reaches the controller; the
// acknowledgement itself does, and so do the possible samples beside
// them. The round trips are 40 ms, so u is 21 ms.
func TestSenderScreensImpossibleOWD(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	var now clock.Mono
	// exchange sends a datagram, acknowledges it 40 ms later with sample
	// owd and reports whether the controller got the sample.
	exchange := func(owd time.Duration, synced bool) bool {
		seq := s.onSent(now, 1000)
		now = now.Add(40 * time.Millisecond)
		n := len(r.acks)
		require.Zero(t, s.onFeedback(now, 1, fbOf(synced, []seqRange{{seq, seq}}, owdSample{seq: seq, owd: int32(owd.Microseconds())})))
		require.Len(t, r.acks, n+1, "the acknowledgement reaches the controller")
		return r.acks[n].OWDValid
	}
	require.True(t, exchange(35*time.Millisecond, true), "an asymmetric path: 35 of 40 ms forward")
	require.False(t, exchange(-30*time.Millisecond, true), "below −u")
	require.False(t, exchange(70*time.Millisecond, true), "above 40 ms + u")
	require.False(t, exchange(-15*time.Millisecond, true), "above −u but below 35 − 2u = −7 ms")
	require.True(t, exchange(-5*time.Millisecond, true))
	require.Equal(t, int64(3), s.owdDiscarded)
	require.True(t, exchange(-5*time.Second, false), "unsynced: the raw offset, not screened")
	require.Equal(t, int64(3), s.owdDiscarded)
	for _, a := range r.acks {
		if a.OWDValid && a.ClockSynced {
			require.GreaterOrEqual(t, a.OWD, -7*time.Millisecond, "no impossible sample reached the controller")
			require.LessOrEqual(t, a.OWD, 61*time.Millisecond)
		}
	}
}

// The timers are the session's: a retransmission timeout tells the
// controller of each datagram it gives up, then of the timeout; one that
// fires after the time threshold had declared the last datagram lost
// finds nothing out and leaves the window alone (before, the hook
// collapsed it then).
func TestSenderTimeoutAsTheSession(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	for range 3 {
		s.onSent(0, 1000)
	}
	require.True(t, s.onTimer(s.deadline()))
	require.Len(t, r.losses, 3, "each datagram given up is a loss")
	require.Equal(t, 1, r.rtos)

	r = &recorder{window: 1 << 20}
	s = testSender(r)
	s.tr.RTT().Update(10 * time.Millisecond)
	s.onSent(0, 1000)
	s.onSent(1*ms, 1000)
	s.onFeedback(5*ms, 1, fbOf(false, []seqRange{{1, 1}}))
	require.Empty(t, r.losses, "0 is within the time threshold")
	require.False(t, s.onTimer(s.tr.LossTime()))
	require.Len(t, r.losses, 1, "0 lost at the loss timer")
	require.Zero(t, s.inFlight())
	require.True(t, s.onTimer(s.deadline()), "the timeout still fires")
	require.Zero(t, r.rtos, "with nothing out: the controller is not told")
	require.Equal(t, int64(1), s.rtos)
}

// A range at or above 2^63 is past anything sent, not a negative number:
// dropped and counted like any range past what was sent.
func TestSenderDropsRangesBeyondInt64(t *testing.T) {
	r := &recorder{window: 1 << 20}
	s := testSender(r)
	s.onSent(0, 1000)
	require.Equal(t, 1, s.onFeedback(ms, 1, fbOf(false, []seqRange{{1 << 63, 1<<63 + 5}, {0, 0}})))
	require.Len(t, r.acks, 1, "0 still acknowledged")
}
