package recovery

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// ackLog is a sender above a Tracker that records what OnAck tells it,
// in order.
type ackLog struct {
	events []string
	acks   []cc.AckSample
	lost   []cc.PacketNumber
}

func (l *ackLog) handler(kind uint8) *AckHandler {
	return &AckHandler{
		WindowKind: kind,
		RTT:        func(rtt time.Duration) { l.events = append(l.events, fmt.Sprint("rtt ", rtt)) },
		Acked: func(_ clock.Mono, p *Packet, a cc.AckSample) {
			l.events = append(l.events, fmt.Sprint("acked ", a.PacketNumber))
			l.acks = append(l.acks, a)
		},
		Taken: func(clock.Mono) { l.events = append(l.events, "taken") },
		Lost: func(_ clock.Mono, pn cc.PacketNumber, _ *Packet) {
			l.events = append(l.events, fmt.Sprint("lost ", pn))
			l.lost = append(l.lost, pn)
		},
	}
}

// OnAck tells the sender, in this order: the RTT of the largest, each
// newly acknowledged packet in packet-number order with its sample, the
// end of the ACK, then the losses it reveals. Only the largest carries the
// RTT; PriorInFlight is the window kind's flight before the ACK.
func TestOnAckOrderAndSamples(t *testing.T) {
	tr := New()
	for i := range 7 {
		tr.OnSent(at(i), 1000, 0, 0, 0)
	}
	tr.OnSent(at(7), 100, 1, 0, 0) // another kind: not in PriorInFlight
	var l ackLog
	// 0 missing; 1, 2 and 4..6 acknowledged, the largest held 5 ms.
	a := Ack{
		Ranges:  []Range{{4, 6}, {1, 2}},
		Samples: []OWDSample{{1, 11 * time.Millisecond}, {6, 16 * time.Millisecond}, {4, 14 * time.Millisecond}},
		Delay:   5 * time.Millisecond,
	}
	res := tr.OnAck(at(50), &a, l.handler(0))
	require.Equal(t, []string{"rtt 39ms", "acked 1", "acked 2", "acked 4", "acked 5", "acked 6", "taken", "lost 0", "lost 3"}, l.events,
		"0 and 3 lost: 3 later packets acknowledged")
	require.Equal(t, AckResult{Acked: 5}, res)
	for _, s := range l.acks {
		require.Equal(t, cc.ByteCount(7000), s.PriorInFlight)
		require.Equal(t, cc.ByteCount(1000), s.Bytes)
		require.False(t, s.ClockSynced)
	}
	require.Equal(t, 39*time.Millisecond, l.acks[4].RTT, "50 − 6 sent − 5 held")
	require.Zero(t, l.acks[0].RTT)
	require.Equal(t, 39*time.Millisecond, tr.RTT().Smoothed())
	owds := map[cc.PacketNumber]time.Duration{}
	for _, s := range l.acks {
		if s.OWDValid {
			owds[s.PacketNumber] = s.OWD
		}
	}
	require.Equal(t, map[cc.PacketNumber]time.Duration{1: 11 * time.Millisecond, 4: 14 * time.Millisecond, 6: 16 * time.Millisecond}, owds,
		"each sample to its packet, out of order too; 2 and 5 had none")
	require.Equal(t, cc.ByteCount(100), tr.TotalInFlight(), "the other kind's packet is still out")
	require.NotZero(t, tr.RTOAt(), "re-armed for it")
	require.Equal(t, cc.PacketNumber(7), tr.Base(), "the finished packets are dropped")
}

// An acknowledgement of a packet already declared lost is spurious: it
// counts once, while the packet's record is kept (behind an older packet
// in flight, which takes send times out of order here: the thresholds
// declare older packets lost first), and acknowledges nothing.
func TestOnAckSpuriousLoss(t *testing.T) {
	tr := New()
	tr.RTT().Update(10 * time.Millisecond)
	tr.OnSent(at(61), 1000, 0, 0, 0)
	tr.OnSent(at(0), 1000, 0, 0, 0)
	tr.OnSent(at(60), 1000, 0, 0, 0)
	var l ackLog
	tr.OnAck(at(62), &Ack{Ranges: []Range{{2, 2}}}, l.handler(0))
	require.Equal(t, []cc.PacketNumber{1}, l.lost, "1 by the time threshold, 0 not yet")
	res := tr.OnAck(at(63), &Ack{Ranges: []Range{{0, 2}}}, l.handler(0))
	require.Equal(t, AckResult{Acked: 1, Spurious: 1}, res)
	tr.OnSent(at(64), 1000, 0, 0, 0)
	res = tr.OnAck(at(65), &Ack{Ranges: []Range{{0, 2}}}, l.handler(0))
	require.Equal(t, AckResult{}, res, "each counts once")
	require.Len(t, l.acks, 2, "2, then 0")

	// A range past what was sent acknowledges nothing beyond it (the
	// callers refuse such ranges first; this one must neither loop to
	// 2^62 nor make that the largest acknowledged).
	tr.OnSent(at(40), 1000, 0, 0, 0)
	res = tr.OnAck(at(50), &Ack{Ranges: []Range{{3, 1 << 62}}}, l.handler(0))
	require.Equal(t, 2, res.Acked, "3 and 4")

	// After a timeout gave the flight up, an ACK of its newest packet
	// acknowledges nothing in flight, yet the path answers.
	tr.OnSent(at(60), 1000, 0, 0, 0)
	tr.OnSent(at(61), 1000, 0, 0, 0)
	fired, _ := tr.OnRTOTimeout(tr.RTOAt(), l.handler(0).Lost)
	require.True(t, fired)
	res = tr.OnAck(at(2000), &Ack{Ranges: []Range{{6, 6}}}, l.handler(0))
	require.Equal(t, AckResult{NewLargest: true}, res, "its record is gone with the flight: not counted spurious")
	require.Equal(t, 1, tr.Backoff(), "nothing new acknowledged: the backoff stays")
}

// The guard screens every synced sample before the sender sees it: the
// three impossible cases of owdGuard are discarded and counted, the
// sample next to each passes, and the ACK itself still counts. On a 40 ms
// path u is 21 ms.
func TestOnAckScreensOWD(t *testing.T) {
	const ms = time.Millisecond
	require.Equal(t, 21*ms, OWDUncertainty(40*ms))
	// exchange sends one packet, acknowledges it rtt later with sample owd
	// and reports whether the sender got the sample.
	exchange := func(tr *Tracker, now *clock.Mono, rtt, owd time.Duration, synced bool) (bool, AckResult) {
		pn := tr.OnSent(*now, 1000, 0, 0, 0)
		*now = now.Add(rtt)
		var l ackLog
		res := tr.OnAck(*now, &Ack{Ranges: []Range{{pn, pn}}, Samples: []OWDSample{{pn, owd}}, Synced: synced}, l.handler(0))
		require.Len(t, l.acks, 1, "the ACK itself reaches the sender")
		require.Equal(t, 1, res.Acked)
		return l.acks[0].OWDValid, res
	}
	for _, c := range []struct {
		name     string
		rtt, owd []time.Duration // one exchange each
		synced   bool
		passed   []bool
	}{
		{"below −u", []time.Duration{40 * ms, 40 * ms, 40 * ms}, []time.Duration{20 * ms, -22 * ms, -15 * ms}, true, []bool{true, false, true}},
		{"above the packet's RTT + u", []time.Duration{40 * ms, 40 * ms, 60 * ms, 60 * ms}, []time.Duration{20 * ms, 62 * ms, 82 * ms, 80 * ms}, true, []bool{true, false, false, true}},
		{"below the floor − 2u", []time.Duration{40 * ms, 40 * ms, 40 * ms}, []time.Duration{35 * ms, -8 * ms, -6 * ms}, true, []bool{true, false, true}},
		{"a shorter round trip moves the floor", []time.Duration{40 * ms, 10 * ms}, []time.Duration{35 * ms, 5 * ms}, true, []bool{true, true}},
		{"unsynced: not screened", []time.Duration{40 * ms, 40 * ms}, []time.Duration{-5 * time.Second, 5 * time.Second}, false, []bool{true, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := New()
			var now clock.Mono
			discarded := 0
			for i := range c.rtt {
				ok, res := exchange(tr, &now, c.rtt[i], c.owd[i], c.synced)
				require.Equal(t, c.passed[i], ok, "exchange %d", i)
				require.Equal(t, !ok, res.OWDDiscarded == 1, "exchange %d", i)
				discarded += res.OWDDiscarded
			}
		})
	}
	t.Run("a persistent shift becomes the baseline", func(t *testing.T) {
		tr := New()
		var now clock.Mono
		ok, _ := exchange(tr, &now, 40*ms, 35*ms, true)
		require.True(t, ok)
		for range OWDShiftSamples - 1 {
			ok, _ = exchange(tr, &now, 40*ms, -10*ms, true)
			require.False(t, ok)
		}
		ok, _ = exchange(tr, &now, 40*ms, -10*ms, true)
		require.True(t, ok)
	})
}

// The sample lookup returns what a scan from the start returns (the first
// sample for the number), for samples in any order, duplicates included,
// asked in ascending order or not.
func TestOWDLookupIsFirstMatch(t *testing.T) {
	scan := func(s []OWDSample, pn cc.PacketNumber) (time.Duration, bool) {
		for _, o := range s {
			if o.PN == pn {
				return o.OWD, true
			}
		}
		return 0, false
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := make([]OWDSample, r.IntN(33))
		for i := range s {
			pn := cc.PacketNumber(i)
			switch r.IntN(4) {
			case 0:
				pn = cc.PacketNumber(r.IntN(40)) // anywhere, duplicates too
			case 1:
				pn += cc.PacketNumber(r.IntN(5)) - 2 // reordered a little
			}
			s[i] = OWDSample{PN: pn, OWD: time.Duration(i)}
		}
		var asks []cc.PacketNumber
		for pn := range cc.PacketNumber(40) {
			if r.IntN(3) > 0 {
				asks = append(asks, pn)
			}
		}
		if r.IntN(4) == 0 {
			r.Shuffle(len(asks), func(i, j int) { asks[i], asks[j] = asks[j], asks[i] })
		}
		var l owdLookup
		for _, pn := range asks {
			gotD, gotOK := l.find(s, pn)
			wantD, wantOK := scan(s, pn)
			require.Equal(t, wantOK, gotOK, "pn %d in %v (asks %v)", pn, s, asks)
			require.Equal(t, wantD, gotD, "pn %d in %v (asks %v)", pn, s, asks)
		}
	}
}

// The timers fire only when due; the retransmission timeout reports the
// kinds it found in flight, none when loss detection had declared the
// last packets lost before it.
func TestTimeouts(t *testing.T) {
	tr := New()
	tr.RTT().Update(100 * time.Millisecond)
	tr.OnSent(at(0), 1000, 0, 0, 0)
	tr.OnSent(at(1), 200, 2, 0, 0)
	tr.OnSent(at(2), 1000, 0, 0, 0)
	var l ackLog
	tr.OnAck(at(10), &Ack{Ranges: []Range{{2, 2}}}, l.handler(0))
	lt := tr.LossTime()
	require.False(t, tr.OnLossTimeout(lt-1, l.handler(0).Lost))
	require.True(t, tr.OnLossTimeout(lt, l.handler(0).Lost))
	require.Equal(t, []cc.PacketNumber{0}, l.lost, "0 sent first, lost first")

	rto := tr.RTOAt()
	fired, had := tr.OnRTOTimeout(rto-1, l.handler(0).Lost)
	require.False(t, fired)
	fired, had = tr.OnRTOTimeout(rto, l.handler(0).Lost)
	require.True(t, fired)
	require.Equal(t, Kinds(1<<2), had)
	require.True(t, had.Has(2))
	require.False(t, had.Has(0), "0's last packet was lost before: nothing of it to back off")
	require.Equal(t, []cc.PacketNumber{0, 1}, l.lost)
	require.Zero(t, tr.TotalInFlight())

	// The time threshold declares the last packet in flight lost; the
	// retransmission timer, armed for it, fires after with nothing out.
	tr = New()
	tr.RTT().Update(10 * time.Millisecond)
	tr.OnSent(at(0), 1000, 0, 0, 0)
	tr.OnSent(at(1), 1000, 0, 0, 0)
	tr.OnAck(at(5), &Ack{Ranges: []Range{{1, 1}}}, l.handler(0))
	require.NotZero(t, tr.LossTime(), "0 is not lost yet")
	require.True(t, tr.OnLossTimeout(tr.LossTime(), l.handler(0).Lost))
	require.Zero(t, tr.TotalInFlight())
	require.NotZero(t, tr.RTOAt())
	fired, had = tr.OnRTOTimeout(tr.RTOAt(), l.handler(0).Lost)
	require.True(t, fired)
	require.Zero(t, had, "no kind had anything out")
}
