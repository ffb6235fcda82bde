// Package report defines the result of one benchmark run (the result JSON),
// shared by the simulator (bench/sim), the emulator (bench/emu) and
// freshbench, which writes it with --json (Marshal, as every JSON file the
// benchmark writes) and plots it with --plot (bench/plots). The JSON names
// are read by other tools: keep them stable.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Stats summarises a distribution (milliseconds for delays).
type Stats struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// AgeStats summarises age of information at the monitor, in milliseconds.
type AgeStats struct {
	Mean float64 `json:"mean"`
	P95  float64 `json:"p95"`
	Peak float64 `json:"peak"`
}

// Flow is one flow's result.
type Flow struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	CC   string `json:"cc"`
	// GoodputBps is application bytes delivered in order ×8 over the
	// flow's active time, bit/s.
	GoodputBps float64 `json:"goodput_bps"`
	// Bytes is application bytes delivered.
	Bytes int64 `json:"bytes"`
	// Lost counts packets declared lost by the sender (bulk) or not
	// delivered (updates, cbr); Retransmitted counts retransmissions.
	Lost          int64 `json:"lost"`
	Retransmitted int64 `json:"retransmitted"`
	// OWDms is the one-way delay of delivered packets; QueueMs its part
	// spent in the bottleneck queue.
	OWDms   Stats `json:"owd_ms"`
	QueueMs Stats `json:"queue_ms"`
	// WriteToRouterMs and EndToEndMs are set for telemetry flows (emu
	// --tun): per message, the latency from the application's write to
	// the message's arrival at the router, and to its read by the
	// receiving application.
	WriteToRouterMs *Stats `json:"write_to_router_ms,omitempty"`
	EndToEndMs      *Stats `json:"end_to_end_ms,omitempty"`
	// WakeToStoredMs and RadioOnMs are set for sleeping telemetry flows
	// (emu --tun): per wake, the time from the device waking (and taking
	// its reading) to the monitor reading it, over the readings
	// delivered; and to the last packet of that wake's connection at the
	// router, either direction.
	WakeToStoredMs *Stats `json:"wake_to_stored_ms,omitempty"`
	RadioOnMs      *Stats `json:"radio_on_ms,omitempty"`
	// RTTMs is set for request/response telemetry flows: per message, the
	// time from its write to the read of the receiver's response.
	RTTMs *Stats `json:"rtt_ms,omitempty"`
	// AgeMs is set for update flows (acp, fixed, lazy) and telemetry
	// flows: the age of information at the monitor, from each message's
	// generation time. RateHz is set for update flows.
	AgeMs  *AgeStats `json:"age_ms,omitempty"`
	RateHz *float64  `json:"rate_hz,omitempty"`

	// SendRateBps is the mean rate the sender put on the wire.
	SendRateBps float64 `json:"send_rate_bps"`
	// Packets sent and delivered.
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	// Trace summary of the controller: seconds in slow start, and the
	// fraction of ACKs on which each delay signal was in use.
	SlowStartS float64 `json:"slow_start_s,omitempty"`
	// ModeS is the time the controller spent in each of its modes
	// (cc.Metrics.Mode), seconds: for owd "slow_start", "avoidance",
	// "probe", "competitive"; for bbr "startup", "drain", "probe_bw",
	// "probe_rtt"; for copa "slow_start", "default", "competitive"; for
	// the loss-based baselines "slow_start", "avoidance".
	ModeS       map[string]float64 `json:"mode_s,omitempty"`
	SignalShare map[string]float64 `json:"signal_share,omitempty"`
	// AckFrequencySent counts the ACK frequency requests the bulk sender
	// sent its receiver (the return path held a standing queue), and
	// AckRatio is the packets per ACK the last one asked for.
	AckFrequencySent int64 `json:"ack_frequency_sent,omitempty"`
	AckRatio         int   `json:"ack_ratio,omitempty"`
	// Link counts every IP packet of the flow the TUN router forwarded,
	// both directions, handshakes, ACKs and keep-alives included (emu
	// --tun only).
	Link         *LinkCount `json:"link,omitempty"`
	StartS       float64    `json:"start_s"`
	EndS         float64    `json:"end_s"`
	ClockErrorMs *float64   `json:"clock_error_ms,omitempty"`

	// Series holds per-interval samples for plots; not in the JSON.
	Series *Series `json:"-"`
	// OWDSamples are per-packet one-way delays (ms) for CDF plots; not in
	// the JSON.
	OWDSamples []float64 `json:"-"`
	// WriteToRouterSamples are a telemetry flow's per-message latencies
	// from write to router (ms), for CDF plots; not in the JSON.
	WriteToRouterSamples []float64 `json:"-"`
}

// LinkCount is what a flow put on the emulated link: IP packets and bytes
// (IP headers included) in its data direction and in the return
// direction.
type LinkCount struct {
	DataPackets   int64 `json:"data_packets"`
	DataBytes     int64 `json:"data_bytes"`
	ReturnPackets int64 `json:"return_packets"`
	ReturnBytes   int64 `json:"return_bytes"`
}

// Series are time series sampled every Step seconds from T[0].
type Series struct {
	T          []float64 // seconds since the run started
	GoodputBps []float64 // delivered in the interval
	OWDms      []float64 // mean OWD of packets delivered in the interval (NaN if none)
	CwndBytes  []float64 // window at the sample time (bulk)
	AgeMs      []float64 // age at the monitor at the sample time (updates)
	RateHz     []float64 // update rate at the sample time (updates)
}

// Utilization is the fraction of time each direction's transmitter was busy.
type Utilization struct {
	Forward float64 `json:"forward"`
	Reverse float64 `json:"reverse"`
}

// Run is one run: one scenario under one controller assignment and seed.
type Run struct {
	Scenario    string      `json:"scenario"`
	Driver      string      `json:"driver"` // "sim" or "emu"
	Seed        int64       `json:"seed"`
	CC          string      `json:"cc"`   // the controller given with --cc, or the scenario's
	Jain        float64     `json:"jain"` // over bulk flows while all are active; 1 with one flow
	Utilization Utilization `json:"utilization"`
	Flows       []Flow      `json:"flows"`
	DurationS   float64     `json:"duration_s"`
	// WallS is how long the run took in wall-clock time; not in the JSON
	// because it would break byte-identical output across runs.
	WallS float64 `json:"-"`
	// Path describes the scenario's paths for plot titles
	// (scenario.DescribePaths); not in the JSON.
	Path string `json:"-"`
	// CapacityBps is the forward link's capacity over each time-series
	// interval (the flows' Series.T), bit/s: its rate, or on a trace
	// the delivery opportunities' bytes in the interval; set by traced
	// simulator runs, for plots; not in the JSON.
	CapacityBps []float64 `json:"-"`
}

// Summarize computes mean and percentiles of xs (nearest-rank); zero Stats
// for no samples. xs is sorted in place.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return Stats{
		Mean: round3(sum / float64(len(xs))),
		P50:  round3(Percentile(xs, 0.50)),
		P95:  round3(Percentile(xs, 0.95)),
		P99:  round3(Percentile(xs, 0.99)),
	}
}

// Percentile is the nearest-rank percentile of sorted xs, q in [0,1].
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Jain is Jain's fairness index (Σx)²/(n·Σx²): 1 when all equal, 1/n when
// one takes everything. 1 for n ≤ 1 or all zero.
func Jain(xs []float64) float64 {
	if len(xs) <= 1 {
		return 1
	}
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 1
	}
	return round3(s * s / (float64(len(xs)) * s2))
}

// round3 keeps three decimals so the JSON stays readable and stable.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Round3 is round3 for other packages' derived numbers.
func Round3(x float64) float64 { return round3(x) }

// Flow returns the flow called name, and whether r has one.
func (r *Run) Flow(name string) (Flow, bool) {
	for _, f := range r.Flows {
		if f.Name == name {
			return f, true
		}
	}
	return Flow{}, false
}

// RoundSig rounds x to n significant digits (x itself for 0, NaN and
// ±Inf): a swept rate that its label names exactly, a table cell, an
// axis tick.
func RoundSig(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := float64(n) - math.Ceil(math.Log10(math.Abs(x)))
	if p >= 0 {
		pow := math.Pow(10, p)
		return math.Round(x*pow) / pow
	}
	pow := math.Pow(10, -p)
	return math.Round(x/pow) * pow
}

// Marshal is the encoding of every JSON file the benchmark writes (the
// runs, the sweep summaries, the baselines): indented by two spaces, map
// keys sorted (encoding/json sorts them), and a final newline, so that the
// same runs give the same bytes (Run keeps wall-clock times out of its
// JSON).
func Marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadRuns reads a result JSON file: the array of runs --json writes. A
// file that is not one is an error naming it.
func ReadRuns(path string) ([]*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var runs []*Run
	if err := json.Unmarshal(b, &runs); err != nil || len(runs) == 0 {
		return nil, fmt.Errorf("%s: not the JSON array of runs that emu --json writes (%v)", path, err)
	}
	return runs, nil
}

// WriteJSON writes v, as Marshal encodes it, to the file path, or to
// stdout for "-".
func WriteJSON(path string, v any, stdout io.Writer) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
