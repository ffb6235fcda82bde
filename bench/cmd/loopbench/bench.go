package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/bench/loopback"
	"github.com/fresh-udp/fresh/cc"
)

// bytesPerGB is the GB of "CPU-seconds per GB": 10⁹ bytes of payload.
const bytesPerGB = 1e9

// Names of the baseline stacks in the report.
const (
	stackQUIC = "quic-go"
	stackTCP  = "kernel TCP"
)

// freshStack names fresh with controller name in the report.
func freshStack(name string) string { return "fresh/" + name }

// stack is one contender: a name and a function that moves n bytes once.
type stack struct {
	name string
	run  func(ctx context.Context, n cc.ByteCount) (loopback.Transfer, error)
}

// Sample is one loopback.Transfer of one stack, as written to -json.
type Sample struct {
	Stack           string  `json:"stack"`
	Run             int     `json:"run"`                // round, from 1
	Bytes           int64   `json:"bytes"`              // payload received
	Seconds         float64 `json:"seconds"`            // loopback.Transfer time
	GoodputGbps     float64 `json:"goodput_gbps"`       // payload, 10⁹ bit/s
	CPUSeconds      float64 `json:"cpu_seconds"`        // user+system
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb"` // per 10⁹ bytes of payload
	LostPackets     int64   `json:"lost_packets"`       // declared lost by the sender (TCP: retransmits)
	Load1           float64 `json:"load1"`              // 1-minute load average just before
	// OthersCores is the CPU the rest of the machine used meanwhile, in
	// cores: /proc/stat busy time (all CPUs, softirq included) minus this
	// stack's CPU, over the sample's wall time (setup and teardown
	// included). Other jobs, and kernel work for this stack that ran in
	// ksoftirqd, show up here; above ~0.2 the sample shared the machine.
	OthersCores float64 `json:"others_cores"`
	Detail      string  `json:"detail,omitempty"`
	Err         string  `json:"error,omitempty"`
}

// Summary is one stack's medians over its successful samples.
type Summary struct {
	Stack           string  `json:"stack"`
	Runs            int     `json:"runs"`   // successful samples
	Failed          int     `json:"failed"` // samples that ended in an error
	GoodputGbps     float64 `json:"goodput_gbps"`
	GoodputMinGbps  float64 `json:"goodput_min_gbps"`
	GoodputMaxGbps  float64 `json:"goodput_max_gbps"`
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb"`
	LostPackets     float64 `json:"lost_packets"` // median per transfer
	OthersCores     float64 `json:"others_cores"` // median of the samples'
	Detail          string  `json:"detail,omitempty"`
}

// Ratio compares one fresh stack's medians with a baseline's.
type Ratio struct {
	Stack    string  `json:"stack"`
	Baseline string  `json:"baseline"`
	Goodput  float64 `json:"goodput"` // median goodput, stack / baseline
	CPU      float64 `json:"cpu"`     // median CPU-s/GB, stack / baseline; 0 if unmeasured
}

// Machine describes where the benchmark ran.
type Machine struct {
	NumCPU     int     `json:"num_cpu"`
	CPUModel   string  `json:"cpu_model"`
	Kernel     string  `json:"kernel"`
	GoVersion  string  `json:"go_version"`
	Load1Start float64 `json:"load1_start"` // 1-minute load average before the first run
	Load1End   float64 `json:"load1_end"`   // … after the last
	Load1Max   float64 `json:"load1_max"`   // highest seen before any sample
}

// Report is everything one invocation measured.
type Report struct {
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	Bytes   int64     `json:"bytes"` // payload per transfer
	Runs    int       `json:"runs"`
	Samples []Sample  `json:"samples"`
	Summary []Summary `json:"summary"`
	Ratios  []Ratio   `json:"ratios"`
}

// failed reports whether any loopback.Transfer failed.
func (r *Report) failed() bool {
	for _, s := range r.Samples {
		if s.Err != "" {
			return true
		}
	}
	return false
}

// benchmark runs every stack opts.runs times, interleaved, and summarises.
// Progress goes to log.
func benchmark(opts options, command string, log io.Writer) (*Report, error) {
	cert, err := loopback.NewCerts()
	if err != nil {
		return nil, err
	}
	var stacks []stack
	for _, name := range opts.ccs {
		stacks = append(stacks, stack{freshStack(name), func(ctx context.Context, n cc.ByteCount) (loopback.Transfer, error) {
			return loopback.Fresh(ctx, name, n, opts.maxDgram)
		}})
	}
	stacks = append(stacks, stack{stackQUIC, func(ctx context.Context, n cc.ByteCount) (loopback.Transfer, error) {
		return loopback.QUIC(ctx, cert, n)
	}})
	if opts.iperf3 {
		stacks = append(stacks, stack{stackTCP, func(ctx context.Context, n cc.ByteCount) (loopback.Transfer, error) {
			return loopback.IPerf3(ctx, n, opts.iperf3CC)
		}})
	}

	rep := &Report{
		Command: command,
		Started: time.Now().UTC().Truncate(time.Second),
		Machine: describeMachine(),
		Bytes:   opts.bytes,
		Runs:    opts.runs,
	}
	rep.Machine.Load1Max = rep.Machine.Load1Start
	for r := 1; r <= opts.runs; r++ {
		for _, st := range stacks {
			s := measure(st, r, cc.ByteCount(opts.bytes), opts.timeout)
			rep.Machine.Load1Max = max(rep.Machine.Load1Max, s.Load1)
			rep.Samples = append(rep.Samples, s)
			if s.Err != "" {
				fmt.Fprintf(log, "run %d/%d  %-18s error: %s\n", r, opts.runs, s.Stack, s.Err)
				continue
			}
			fmt.Fprintf(log, "run %d/%d  %-12s %6.2f Gbit/s  %5.2f CPU-s/GB  %5.2f s  lost %d  load %.2f  others %.2f cores  %s\n",
				r, opts.runs, s.Stack, s.GoodputGbps, s.CPUSecondsPerGB, s.Seconds, s.LostPackets, s.Load1, s.OthersCores, s.Detail)
		}
	}
	rep.Machine.Load1End = load1()
	rep.Summary = summarize(rep.Samples, stacks)
	rep.Ratios = ratios(rep.Summary, opts.ccs)
	return rep, nil
}

// measure runs one loopback.Transfer of st and turns it into a Sample.
func measure(st stack, round int, n cc.ByteCount, timeout time.Duration) Sample {
	// Collect the previous transfer's garbage now, not during this one.
	runtime.GC()
	s := Sample{Stack: st.name, Run: round, Load1: load1()}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	busy0, busyErr := machineBusy()
	wall0 := time.Now()
	t, err := st.run(ctx, n)
	wall := time.Since(wall0)
	busy1, busyErr1 := machineBusy()
	if err == nil && t.Bytes != n {
		err = fmt.Errorf("receiver counted %d bytes, want %d", t.Bytes, n)
	}
	if err == nil && (t.Elapsed <= 0 || t.Goodput == 0) {
		err = errors.New("no loopback.Transfer time measured")
	}
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.Bytes = int64(t.Bytes)
	s.Seconds = t.Elapsed.Seconds()
	s.GoodputGbps = float64(t.Goodput) / 1e9
	s.CPUSeconds = t.CPU.Seconds()
	s.CPUSecondsPerGB = s.CPUSeconds / (float64(t.Bytes) / bytesPerGB)
	s.Detail = t.Detail
	s.LostPackets = t.Lost
	if busyErr == nil && busyErr1 == nil {
		s.OthersCores = max(0, (busy1-busy0-t.CPU).Seconds()/wall.Seconds())
	}
	return s
}

// summarize computes each stack's medians, in stack order.
func summarize(samples []Sample, stacks []stack) []Summary {
	var out []Summary
	for _, st := range stacks {
		sum := Summary{Stack: st.name}
		var goodput, cpu, lost, others []float64
		for _, s := range samples {
			if s.Stack != st.name {
				continue
			}
			if s.Err != "" {
				sum.Failed++
				continue
			}
			sum.Runs++
			goodput = append(goodput, s.GoodputGbps)
			cpu = append(cpu, s.CPUSecondsPerGB)
			others = append(others, s.OthersCores)
			lost = append(lost, float64(s.LostPackets))
			sum.Detail = s.Detail
		}
		if sum.Runs > 0 {
			sum.GoodputGbps = median(goodput)
			sum.GoodputMinGbps = slices.Min(goodput)
			sum.GoodputMaxGbps = slices.Max(goodput)
			sum.CPUSecondsPerGB = median(cpu)
			sum.OthersCores = median(others)
			sum.LostPackets = median(lost)
		}
		out = append(out, sum)
	}
	return out
}

// ratios compares every fresh stack with quic-go and kernel TCP, where both
// sides have at least one successful sample.
func ratios(sums []Summary, ccs []string) []Ratio {
	byName := make(map[string]Summary, len(sums))
	for _, s := range sums {
		byName[s.Stack] = s
	}
	var out []Ratio
	for _, name := range ccs {
		f, ok := byName[freshStack(name)]
		if !ok || f.Runs == 0 {
			continue
		}
		for _, base := range []string{stackQUIC, stackTCP} {
			b, ok := byName[base]
			if !ok || b.Runs == 0 {
				continue
			}
			out = append(out, Ratio{
				Stack:    f.Stack,
				Baseline: base,
				Goodput:  f.GoodputGbps / b.GoodputGbps,
			})
			if b.CPUSecondsPerGB > 0 {
				out[len(out)-1].CPU = f.CPUSecondsPerGB / b.CPUSecondsPerGB
			}
		}
	}
	return out
}

// median is the middle of xs (the mean of the two middle values for an even
// count); NaN for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
