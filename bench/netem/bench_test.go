package netem

import (
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/stretchr/testify/require"
)

// linkLoop is one enqueue + drain per packet through a link at load
// percent of its rate, cycling through a fixed pool of packets (more than
// can be in flight: at most the queue limit plus the delay line).
type linkLoop struct {
	l    *Link
	pool []Packet
	i    int
	now  clock.Mono
	gap  time.Duration
}

func newLinkLoop(tb testing.TB, disc string, load int) *linkLoop {
	const rate = 100 * cc.MbitPerSecond
	l, err := NewLink(LinkConfig{
		Rate: rate, Delay: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: 0.001, Seed: 1,
		Queue: QueueConfig{Discipline: disc, Limit: 1000},
	}, nil)
	require.NoError(tb, err)
	return &linkLoop{l: l, pool: make([]Packet, 4096), gap: TxTime(1500, rate) * 100 / time.Duration(load)}
}

func (ll *linkLoop) step() {
	p := &ll.pool[ll.i%len(ll.pool)]
	*p = Packet{FlowKey: uint64(ll.i % 16), Size: 1500, DSCP: uint8(ll.i%3) * 28}
	ll.i++
	ll.now = ll.now.Add(ll.gap)
	ll.l.Enqueue(ll.now, p)
	for ll.l.Poll(ll.now) != nil {
	}
}

func benchLink(b *testing.B, disc string, load int) {
	ll := newLinkLoop(b, disc, load)
	for i := 0; i < 10000; i++ { // reach steady state (rings grown)
		ll.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ll.step()
	}
}

func BenchmarkLinkFIFO(b *testing.B)    { benchLink(b, DisciplineFIFO, 95) }
func BenchmarkLinkCoDel(b *testing.B)   { benchLink(b, DisciplineCoDel, 95) }
func BenchmarkLinkFQCoDel(b *testing.B) { benchLink(b, DisciplineFQCoDel, 95) }
func BenchmarkLinkCake(b *testing.B)    { benchLink(b, DisciplineCake, 95) }

// Overload (120 %): standing queues, AQM and overflow drops on the path.
func BenchmarkLinkFIFOOverload(b *testing.B)    { benchLink(b, DisciplineFIFO, 120) }
func BenchmarkLinkCoDelOverload(b *testing.B)   { benchLink(b, DisciplineCoDel, 120) }
func BenchmarkLinkFQCoDelOverload(b *testing.B) { benchLink(b, DisciplineFQCoDel, 120) }
func BenchmarkLinkCakeOverload(b *testing.B)    { benchLink(b, DisciplineCake, 120) }

// TestLinkSteadyStateDoesNotAllocate pins the hot path at zero
// allocations per packet for every discipline.
func TestLinkSteadyStateDoesNotAllocate(t *testing.T) {
	for _, disc := range []string{DisciplineFIFO, DisciplineCoDel, DisciplineFQCoDel, DisciplineCake} {
		for _, load := range []int{95, 120} {
			ll := newLinkLoop(t, disc, load)
			for i := 0; i < 20000; i++ {
				ll.step()
			}
			require.Zero(t, testing.AllocsPerRun(2000, ll.step), "%s at %d %%", disc, load)
		}
	}
}
