// Package loadgen holds what the load tests of a monitor share: loadtest
// (one transport.Listener, many ACP sources in a second process) and
// fleetload (fresh-monitor processes, a fleet of agents). Both drive many
// sources from a few goroutines, need a file descriptor per socket, and
// report the machine's load average beside their numbers, so that a run on
// a shared CPU says so.
package loadgen

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/transport/devcert"
)

// ShardSize is how many sources one ticker goroutine drives.
const ShardSize = 50

// Tick calls tick(lo, hi, seq) rate times a second for each shard [lo, hi)
// of n sources, ShardSize sources a shard, until ctx ends; seq counts the
// shard's ticks from 0. Each shard starts at a random phase, so that the
// shards do not tick together, and one ticker per shard rather than per
// source keeps the generator's own scheduling from being what delays the
// ACKs, which the sources' regulators would take for a slow path. It
// returns when every shard has stopped.
func Tick(ctx context.Context, n int, rate float64, tick func(lo, hi int, seq uint64)) {
	period := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += ShardSize {
		hi := min(lo+ShardSize, n)
		wg.Go(func() {
			select { // a random phase
			case <-time.After(rand.N(period)):
			case <-ctx.Done():
				return
			}
			t := time.NewTicker(period)
			defer t.Stop()
			for seq := uint64(0); ; seq++ {
				tick(lo, hi, seq)
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
}

// LoadAverage is the first fields of /proc/loadavg (1: the 1-minute load
// average; 3: the 1, 5 and 15-minute ones) and the number of CPUs, as
// "0.52 0.61 0.70 on 2 CPUs"; "" where /proc/loadavg is missing (not
// Linux). Above the number of CPUs, the run shared them with others.
func LoadAverage(fields int) string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < fields {
		return ""
	}
	return fmt.Sprintf("%s on %d CPUs", strings.Join(f[:fields], " "), runtime.NumCPU())
}

// QuantilesMs sorts v and returns its q-quantiles, for each q of qs, in
// milliseconds: the element at index ⌊q·n⌋ (the last for q = 1). Zeros
// for no samples.
func QuantilesMs(v []time.Duration, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	if len(v) == 0 {
		return out
	}
	slices.Sort(v)
	for i, q := range qs {
		out[i] = float64(v[min(int(q*float64(len(v))), len(v)-1)]) / 1e6
	}
	return out
}

// WriteJSON writes a load test's report to path: indented by two spaces,
// with a final newline.
func WriteJSON(path string, report any) error {
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LocalCA is a throwaway CA named name (transport/devcert: the shape of
// examples/certgen's) and the certificate it issued for a monitor on
// loopback, for "localhost" and 127.0.0.1, which the load's sources
// verify and dial.
func LocalCA(name string) (*devcert.CA, tls.Certificate, error) {
	ca, err := devcert.NewCA(name)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return ca, cert, nil
}
