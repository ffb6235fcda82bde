package loadgen

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every shard ticks, covers its sources once, and counts its own ticks
// from 0 without a gap; Tick returns once ctx ends.
func TestTickShards(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seqs := map[[2]int][]uint64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Tick(ctx, 2*ShardSize+20, 500, func(lo, hi int, seq uint64) {
			mu.Lock()
			defer mu.Unlock()
			k := [2]int{lo, hi}
			seqs[k] = append(seqs[k], seq)
			enough := len(seqs) == 3
			for _, s := range seqs {
				enough = enough && len(s) >= 3
			}
			if enough {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Tick did not return after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seqs, 3)
	for _, k := range [][2]int{{0, ShardSize}, {ShardSize, 2 * ShardSize}, {2 * ShardSize, 2*ShardSize + 20}} {
		s := seqs[k]
		require.GreaterOrEqual(t, len(s), 3, "shard %v", k)
		for i, seq := range s {
			require.Equal(t, uint64(i), seq, "shard %v counts its ticks", k)
		}
	}
}

// A context that has ended stops Tick before the first tick.
func TestTickEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Tick(ctx, 10, 0.001, func(int, int, uint64) { t.Error("ticked after the context ended") })
}

func TestQuantile(t *testing.T) {
	require.Zero(t, Quantile(nil, 0.5))
	v := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	require.Equal(t, time.Duration(6), Quantile(v, 0.5), "index ⌊0.5·10⌋ = 5")
	require.Equal(t, time.Duration(10), Quantile(v, 0.95))
	require.Equal(t, time.Duration(10), Quantile(v, 1), "the last, not past it")
	require.Equal(t, time.Duration(1), Quantile(v, 0))
}

func TestLoadAverage(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		require.Empty(t, LoadAverage(1), "no /proc/loadavg: nothing to say")
		return
	}
	require.Regexp(t, `^[0-9.]+ on [0-9]+ CPUs$`, LoadAverage(1))
	require.Regexp(t, `^[0-9.]+ [0-9.]+ [0-9.]+ on [0-9]+ CPUs$`, LoadAverage(3))
	require.Empty(t, LoadAverage(100), "fewer fields than asked for")
}
