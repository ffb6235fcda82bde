package netem

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// steadySojourn runs a CoDel queue in which every packet waits exactly
// sojourn(t): one 1500-byte packet enqueued per millisecond, and each
// millisecond tick dequeues one packet. It returns the drop log.
func steadySojourn(t *testing.T, dur time.Duration, lag func(tick int) int) *drops {
	t.Helper()
	var d drops
	q, err := NewCoDel(CoDelConfig{Limit: 100000}, d.fn)
	require.NoError(t, err)
	var enq []*Packet // all packets ever enqueued, by enqueue ms
	next := 0         // index of the next packet the driver expects out
	for ms := 0; time.Duration(ms)*time.Millisecond < dur; ms++ {
		now := at(time.Duration(ms) * time.Millisecond)
		p := pkt(uint64(ms), 1500)
		enq = append(enq, p)
		q.Enqueue(now, p)
		// Dequeue the packets enqueued up to ms-lag: the sojourn of the
		// head is then lag ms (the queue is FIFO).
		for next < len(enq) && next <= ms-lag(ms) {
			out := q.Dequeue(now)
			if out == nil {
				break
			}
			next = int(out.FlowKey) + 1
		}
	}
	return &d
}

func TestCoDelNoDropBelowTarget(t *testing.T) {
	// Sojourn 4 ms < target 5 ms for 10 s, with a standing queue of
	// several MTUs: never a drop.
	d := steadySojourn(t, 10*time.Second, func(int) int { return 4 })
	require.Empty(t, d.pkts)
}

func TestCoDelDropsAfterAWholeIntervalAboveTarget(t *testing.T) {
	// Sojourn 10 ms from the first dequeue at t = 10 ms: above target
	// from then, so the first drop is at exactly 10 ms + interval.
	d := steadySojourn(t, time.Second, func(int) int { return 10 })
	require.NotEmpty(t, d.pkts)
	require.Equal(t, at(110*time.Millisecond), d.times[0])
	require.Equal(t, DropAQM, d.reasons[0])
}

func TestCoDelNoDropIfBelowTargetWithinInterval(t *testing.T) {
	// Above target for 99 ms, then one dequeue below target, then above
	// again: the interval restarts, so the first drop is an interval after
	// the second excursion began, not after the first.
	lag := func(ms int) int {
		if ms >= 109 && ms < 115 {
			return 1 // queue drains to a 1 ms sojourn for a few ms
		}
		return 10
	}
	d := steadySojourn(t, time.Second, lag)
	require.NotEmpty(t, d.pkts)
	require.Greater(t, d.times[0], at(115*time.Millisecond+DefaultInterval-time.Millisecond))
}

// TestCoDelControlLaw checks that successive drops in one dropping state
// follow drop_next += interval/√count (RFC 8289 §5.5).
func TestCoDelControlLaw(t *testing.T) {
	var d drops
	q, err := NewCoDel(CoDelConfig{Limit: 100000}, d.fn)
	require.NoError(t, err)
	for i := 0; i < 30000; i++ {
		q.Enqueue(at(0), pkt(uint64(i), 1500))
	}
	const tick = 100 * time.Microsecond
	for now := at(tick); q.Len() > 0 && now < at(2*time.Second); now = now.Add(tick) {
		q.Dequeue(now)
	}
	require.Greater(t, len(d.times), 20)
	// First above target at 5 ms (sojourn ≥ target), first drop an
	// interval later.
	require.Equal(t, at(105*time.Millisecond), d.times[0])
	sched := float64(d.times[0]) + float64(DefaultInterval) // S_2
	for k := 2; k <= 20; k++ {
		got := d.times[k-1]
		// The k-th drop happens at the first tick at or after S_k.
		require.GreaterOrEqual(t, float64(got), math.Floor(sched), "drop %d", k)
		require.Less(t, float64(got), sched+float64(tick), "drop %d", k)
		sched += float64(DefaultInterval) / math.Sqrt(float64(k))
	}
}

// TestCoDelCountReuse: re-entering the dropping state soon after leaving it
// resumes at the previous drop rate (count = count − lastcount), RFC 8289
// §5.6 pseudocode.
func TestCoDelCountReuse(t *testing.T) {
	var d drops
	q, err := NewCoDel(CoDelConfig{Limit: 100000}, d.fn)
	require.NoError(t, err)
	const tick = 100 * time.Microsecond
	burst := func(start time.Duration, until time.Duration) {
		for i := 0; i < 20000; i++ {
			q.Enqueue(at(start), pkt(uint64(i), 1500))
		}
		for now := at(start + tick); now < at(until); now = now.Add(tick) {
			q.Dequeue(now)
		}
	}
	burst(0, 700*time.Millisecond)
	require.True(t, q.Dropping())
	count := q.st.count
	require.Greater(t, count, 3)
	// Drain the queue: CoDel leaves the dropping state.
	for q.Dequeue(at(700*time.Millisecond)) != nil {
	}
	require.False(t, q.Dropping())
	first := len(d.times)
	// Second burst 10 ms later: above target for an interval again.
	burst(710*time.Millisecond, 1200*time.Millisecond)
	require.Greater(t, len(d.times), first+2)
	delta := count - 1 // lastCount was 1 after the first entry
	require.Equal(t, at(710*time.Millisecond+5*time.Millisecond+DefaultInterval), d.times[first])
	gap := d.times[first+1].Sub(d.times[first])
	want := time.Duration(float64(DefaultInterval) / math.Sqrt(float64(delta)))
	require.InDelta(t, float64(want), float64(gap), float64(tick), "gap %v, want %v (count %d)", gap, want, delta)
	require.Less(t, gap, DefaultInterval)
}

// TestCoDelMaxPacketRule: no drop while at most one maximum-size packet
// remains queued, however long the sojourn.
func TestCoDelMaxPacketRule(t *testing.T) {
	var d drops
	q, err := NewCoDel(CoDelConfig{}, d.fn)
	require.NoError(t, err)
	// Two packets at a time, dequeued one second later: after the first
	// dequeue only one MTU is left.
	for s := 0; s < 20; s++ {
		now := at(time.Duration(s) * time.Second)
		q.Enqueue(now, pkt(0, 1500))
		q.Enqueue(now, pkt(0, 1500))
		later := now.Add(time.Second - time.Millisecond)
		require.NotNil(t, q.Dequeue(later))
		require.NotNil(t, q.Dequeue(later))
	}
	require.Empty(t, d.pkts)
}

func TestCoDelConfigErrors(t *testing.T) {
	_, err := NewCoDel(CoDelConfig{Target: -1}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewCoDel(CoDelConfig{LimitBytes: -1}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}
