package loadgen

import (
	"context"
	"crypto/x509"
	"math"
	"os"
	"path/filepath"
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

func TestQuantilesMs(t *testing.T) {
	require.Equal(t, []float64{0, 0}, QuantilesMs(nil, 0.5, 1))
	ms := time.Millisecond
	v := []time.Duration{10 * ms, 9 * ms, 8 * ms, 7 * ms, 6 * ms, 5 * ms, 4 * ms, 3 * ms, 2 * ms, 1 * ms}
	require.Equal(t, []float64{6, 10, 10, 1}, QuantilesMs(v, 0.5, 0.95, 1, 0), "index ⌊q·10⌋, the last for 1")
	require.Equal(t, 1*ms, v[0], "v is sorted in place")
}

// The CA issued the monitor's certificate for what the sources dial.
func TestLocalCA(t *testing.T) {
	ca, cert, err := LocalCA("test CA")
	require.NoError(t, err)
	require.NotNil(t, cert.Leaf)
	_, err = cert.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"})
	require.NoError(t, err)
	require.Contains(t, cert.Leaf.IPAddresses[0].String(), "127.0.0.1")
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

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, WriteJSON(path, struct {
		Agents int `json:"agents"`
	}{20}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "{\n  \"agents\": 20\n}\n", string(b))
	require.Error(t, WriteJSON(path, math.NaN()), "what JSON cannot hold")
}
