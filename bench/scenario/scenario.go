// Package scenario reads the experiment files of bench/scenarios: one JSON
// object describes one experiment that runs unchanged in the simulator
// (bench/sim) and the emulator (bench/emu). Every field is documented in
// bench/README.md.
package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fresh-udp/fresh/bench/traces"
	"github.com/fresh-udp/fresh/dscp"
)

// ErrInvalid wraps every validation error.
var ErrInvalid = errors.New("invalid scenario")

// Queue configures the bottleneck queue discipline of one direction.
type Queue struct {
	// Discipline is "fifo" (default), "codel", "fq_codel", "cake" or "wmm".
	Discipline string `json:"discipline,omitempty"`
	// Limit is the queue capacity in packets (default 1000, as Linux's
	// pfifo/fq_codel; the paper scenarios set 50).
	Limit int `json:"limit,omitempty"`
	// LimitBytes, if set, limits the queue in bytes instead (fifo only: a
	// bfifo) or in addition (others; for wmm, per access category).
	LimitBytes int `json:"limit_bytes,omitempty"`
	// Target and Interval are CoDel's parameters (default 5ms, 100ms;
	// RFC 8289 §4.3–4.4), used by codel, fq_codel, cake and wmm with
	// ac_queue codel (one CoDel per access category).
	Target   Duration `json:"target,omitempty"`
	Interval Duration `json:"interval,omitempty"`
	// Quantum is the FQ deficit-round-robin quantum in bytes (default 1514,
	// RFC 8290 §4.1).
	Quantum int `json:"quantum,omitempty"`
	// Flows is the number of FQ flow queues (default 1024, RFC 8290).
	Flows int `json:"flows,omitempty"`
	// ACQueue is the queue inside each WMM access category, "fifo"
	// (default) or "codel" (wmm only).
	ACQueue string `json:"ac_queue,omitempty"`
	// ACLimit is each WMM access category's capacity in packets (default:
	// Limit, so every category is as deep as the whole queue of the other
	// disciplines; wmm only).
	ACLimit int `json:"ac_limit,omitempty"`
}

// GilbertElliott configures bursty loss: a two-state Markov chain. In the
// good state packets are lost with LossGood, in the bad state with LossBad;
// P and R are the per-packet probabilities of going good→bad and bad→good.
// Length, if set, makes every bad spell exactly Length packets long
// instead (R is then unused): bursts of a fixed length, as the QUIC
// interop runner's "bursts of 3".
type GilbertElliott struct {
	P        float64 `json:"p"`
	R        float64 `json:"r"`
	LossGood float64 `json:"loss_good,omitempty"`
	LossBad  float64 `json:"loss_bad"`
	Length   int     `json:"length,omitempty"`
}

// Path is one direction of the bottleneck link. Its capacity is exactly
// one of Rate, Trace and RateWalk (capacity.go).
type Path struct {
	Rate Rate `json:"rate,omitempty"` // serialization rate
	// Trace is a Mahimahi trace file (bench/traces) replayed as the link's
	// delivery opportunities; relative paths are read from the scenario
	// file's directory, then from the repository root.
	Trace string `json:"trace,omitempty"`
	// TraceStart is where the replay begins (default: the trace's start).
	TraceStart TraceStart `json:"trace_start,omitzero"`
	// RateWalk re-draws the rate at random now and then.
	RateWalk *RateWalk `json:"rate_walk,omitempty"`
	Delay    Duration  `json:"delay,omitempty"`  // one-way propagation delay
	Loss     float64   `json:"loss,omitempty"`   // Bernoulli random loss probability, 0..1
	Jitter   Duration  `json:"jitter,omitempty"` // uniform extra delay in [0, Jitter], order kept
	Queue    Queue     `json:"queue,omitempty"`
	// GE, if set, adds Gilbert–Elliott burst loss on top of Loss.
	GE *GilbertElliott `json:"gilbert_elliott,omitempty"`
	// Corrupt is the probability, 0..1, that a packet has one bit flipped
	// on the way (a bit error no checksum caught); CorruptGE adds
	// Gilbert–Elliott bursts of corruption (loss_good and loss_bad are
	// then corruption probabilities).
	Corrupt   float64         `json:"corrupt,omitempty"`
	CorruptGE *GilbertElliott `json:"corrupt_gilbert_elliott,omitempty"`

	// TraceData is Trace's contents, loaded by Validate (nil without a
	// trace). Not in the JSON.
	TraceData *traces.Trace `json:"-"`
	traceFor  string        // the Trace that TraceData was loaded for
}

// PathChange changes some parameters of a path at a given time; nil fields
// keep their value. Rate, Trace and RateWalk replace the path's capacity,
// whichever it had (at most one of them per change).
type PathChange struct {
	Rate *Rate `json:"rate,omitempty"`
	// Trace switches the path to a trace, replayed from TraceStart (default
	// the trace's start).
	Trace      *string     `json:"trace,omitempty"`
	TraceStart *TraceStart `json:"trace_start,omitempty"`
	RateWalk   *RateWalk   `json:"rate_walk,omitempty"`
	Delay      *Duration   `json:"delay,omitempty"`
	Loss       *float64    `json:"loss,omitempty"`
	Jitter     *Duration   `json:"jitter,omitempty"`

	// TraceData is Trace's contents, loaded by Validate. Not in the JSON.
	TraceData *traces.Trace `json:"-"`
	traceFor  string
}

// Change is a scheduled path change.
type Change struct {
	At      Duration    `json:"at"`
	Forward *PathChange `json:"forward,omitempty"`
	Reverse *PathChange `json:"reverse,omitempty"`
}

// Flow kinds.
const (
	KindBulk   = "bulk"   // window-controlled reliable transfer, any cc
	KindACP    = "acp"    // age-controlled status updates (cc: acp, acp-literal, lazy)
	KindFixed  = "fixed"  // updates at a fixed rate (Rate as updates' bit rate or UpdateRate)
	KindLazy   = "lazy"   // updates, one per RTT
	KindCBR    = "cbr"    // unresponsive constant-bit-rate UDP
	KindIperf3 = "iperf3" // kernel TCP through iperf3 (emu --tun only)
	// KindTelemetry is a small periodic message over kernel TCP or UDP
	// (emu --tun only).
	KindTelemetry = "telemetry"
)

// Flow is one traffic source. Flows go forward (sender at the left, data
// through the forward path, ACKs through the reverse path) unless Reverse.
type Flow struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// CC is the controller name for bulk flows (default "owd"), the
	// policy for acp flows (default "acp"), the kernel's for iperf3.
	CC string `json:"cc,omitempty"`
	// Pin keeps CC when the run replaces controllers with --cc.
	Pin bool `json:"pin,omitempty"`
	// Start and Stop bound the flow's activity (Stop 0 = scenario end).
	Start Duration `json:"start,omitempty"`
	Stop  Duration `json:"stop,omitempty"`
	// Rate is the sending rate of cbr flows.
	Rate Rate `json:"rate,omitempty"`
	// UpdateRate is the update rate in Hz of fixed flows. On acp and lazy
	// flows it is the source's rate: the application takes a reading
	// every 1/UpdateRate and hands it to SendUpdate, and the policy
	// decides when the freshest leaves (PeriodicSource); without it the
	// source generates an update whenever the policy would send one.
	UpdateRate float64 `json:"update_rate,omitempty"`
	// Size is the packet (cbr) or update (acp/fixed/lazy) size in bytes
	// (default 1000 for cbr, 1024 for updates); bulk flows use MSS.
	Size int `json:"size,omitempty"`
	// Bytes limits a bulk transfer (0 = unlimited).
	Bytes int64 `json:"bytes,omitempty"`
	// Interval is the period of a telemetry flow's messages (default
	// 100ms). With IntervalMax, each gap is drawn uniformly from
	// [Interval, IntervalMax] (the scenario's seed and the flow's index
	// seed the draws).
	Interval    Duration `json:"interval,omitempty"`
	IntervalMax Duration `json:"interval_max,omitempty"`
	// Sleep makes a telemetry flow a device that sleeps between readings:
	// at each reading it wakes, connects from a new client port (fresh:
	// resuming with 0-RTT when secure; mqtt: its persistent session,
	// resuming TLS when secure; coap: a new socket, a full DTLS handshake
	// when secure; quic: quic-go resuming with 0-RTT and its token, the
	// reading on a stream the monitor answers; udp: a new socket), sends the one reading, waits for
	// its acknowledgement where the protocol has one (fresh's ACK, MQTT
	// QoS 1's PUBACK, a confirmable CoAP request's ACK), closes, and
	// sleeps. Results per wake: wake_to_stored_ms and radio_on_ms.
	Sleep bool `json:"sleep,omitempty"`
	// Protocol carries a telemetry flow: "tcp" (default, kernel TCP),
	// "udp" (one datagram per message), "fresh" (each message a status
	// update on a fresh connection: SendUpdate, regulated by ACP), "mqtt"
	// (each message a PUBLISH, MQTT 3.1.1, to a mosquitto broker the run
	// starts on the receiving side, read back by a subscriber beside it)
	// "coap" (each message a CoAP POST, RFC 7252, to a CoAP server on the
	// receiving side) or "quic" (each message an RFC 9221 DATAGRAM on a
	// quic-go connection; with CC, quic-go runs over transport/quichook
	// with that controller). mqtt, coap and quic need emu --tun and
	// forward flows.
	Protocol string `json:"protocol,omitempty"`
	// Reliable asks mqtt for QoS 1 (PUBACK, redelivery) instead of QoS 0,
	// and coap for confirmable requests (a piggybacked 2.04, retransmitted
	// with RFC 7252 §4.2's backoff) instead of non-confirmable ones with
	// RFC 7967's No-Response option (nothing comes back).
	Reliable bool `json:"reliable,omitempty"`
	// Secure encrypts a telemetry flow as each protocol is deployed:
	// fresh with its TLS 1.3 handshake and AEAD (by default the harness
	// runs fresh in plaintext, to read write stamps at the router), mqtt
	// over TLS 1.3 (port 8883 + flow index), coap over DTLS 1.2 with a
	// pre-shared key and TLS_PSK_WITH_AES_128_CCM_8 (RFC 7252 §9.1.3.1's
	// mandatory suite). No write_to_router_ms then.
	Secure bool `json:"secure,omitempty"`
	// Nagle leaves Nagle's algorithm on for a telemetry flow over TCP
	// (TCP_NODELAY off); by default every message is sent at once.
	// Respond makes a telemetry flow request/response (tcp or udp): the
	// receiver answers each message with its first 8 bytes, and the
	// sender measures the round trip (rtt_ms in the result).
	Nagle   bool `json:"nagle,omitempty"`
	Respond bool `json:"respond,omitempty"`
	// Reverse sends the flow through the reverse path.
	Reverse bool `json:"reverse,omitempty"`
	// DSCP marks the flow's packets: a class name ("CS7", "EF", "AF41",
	// "BE", …) or a number "0".."63", as dscp.Parse reads them.
	// Default BE (Validate fills it in).
	DSCP dscp.Codepoint `json:"dscp,omitempty"`
	// ExtraDelay is added to this flow's one-way propagation delay in
	// each direction (its data and its ACKs wait that long before they
	// join the path), so its round trip is the path's plus 2×ExtraDelay:
	// flows of different RTTs through one bottleneck, for RTT fairness.
	// Simulator only.
	ExtraDelay Duration `json:"extra_delay,omitempty"`
	// MaxWindow caps a bulk flow's receive window, bytes: the receiver
	// never grants more than MaxWindow bytes beyond the last byte read,
	// so the sender never has more in flight, whatever its controller's
	// window (a TCP flow limited by its peer's rwnd). A window above the
	// path's BDP and below BDP + buffer keeps a standing queue without a
	// loss. At least two segments (2×mss). 0: the default, 4 MiB.
	// Simulator only.
	MaxWindow int `json:"max_window,omitempty"`
}

// Scenario is one experiment.
type Scenario struct {
	Name     string   `json:"name"`
	Duration Duration `json:"duration"`
	Seed     int64    `json:"seed,omitempty"`
	// MSS is the bulk flows' segment size in bytes (default 1000).
	MSS int `json:"mss,omitempty"`
	// ClockOffset and ClockSkewPPM give every receiver's clock an offset and
	// skew against its sender's (0 = perfect clocks).
	ClockOffset  Duration `json:"clock_offset,omitempty"`
	ClockSkewPPM float64  `json:"clock_skew_ppm,omitempty"`
	// ClockSync is how receivers correct their clock: "perfect" (θ known
	// exactly, an ideal NTP), "inband" (clock.Inband from the packets'
	// own stamps) or "none" (uncorrected; OWD marked untrustworthy).
	// Default "perfect" when no offset or skew is set, else "inband".
	ClockSync string   `json:"clock_sync,omitempty"`
	Forward   Path     `json:"forward"`
	Reverse   Path     `json:"reverse"`
	Flows     []Flow   `json:"flows"`
	Changes   []Change `json:"changes,omitempty"`

	// dir is the directory of the file Load read (relative trace paths
	// are resolved against it); "" for Parse: the working directory.
	dir string
}

// Load reads and validates a scenario file. Unknown fields are errors, so a
// typo does not silently run a different experiment. Relative trace paths
// are resolved against the file's directory, then the repository root.
func Load(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	s, err := parse(b, dir)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse decodes and validates a scenario, filling defaults. Relative trace
// paths are resolved against the working directory, then the root of the
// repository holding it.
func Parse(b []byte) (*Scenario, error) { return parse(b, "") }

func parse(b []byte, dir string) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	s := Scenario{dir: dir}
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks the scenario and fills defaults in place.
func (s *Scenario) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if s.Name == "" {
		return bad("name is required")
	}
	if s.Duration <= 0 {
		return bad("duration must be positive")
	}
	if s.MSS == 0 {
		s.MSS = 1000
	}
	if s.MSS < 100 || s.MSS > 65000 {
		return bad("mss %d out of range 100..65000", s.MSS)
	}
	res := resolver{dir: s.dir}
	for _, p := range []struct {
		name string
		p    *Path
	}{{"forward", &s.Forward}, {"reverse", &s.Reverse}} {
		if err := p.p.validate(res); err != nil {
			return bad("%s: %v", p.name, err)
		}
	}
	if s.ClockSync == "" {
		s.ClockSync = "perfect"
		if s.ClockOffset != 0 || s.ClockSkewPPM != 0 {
			s.ClockSync = "inband"
		}
	}
	switch s.ClockSync {
	case "perfect", "inband", "none":
	default:
		return bad("clock_sync %q: want perfect, inband or none", s.ClockSync)
	}
	if len(s.Flows) == 0 {
		return bad("no flows")
	}
	names := map[string]bool{}
	for i := range s.Flows {
		f := &s.Flows[i]
		if f.Name == "" {
			f.Name = fmt.Sprintf("%s-%d", f.Kind, i)
		}
		if names[f.Name] {
			return bad("flow name %q used twice", f.Name)
		}
		names[f.Name] = true
		if err := f.validate(s); err != nil {
			return bad("flow %q: %v", f.Name, err)
		}
	}
	for i := range s.Changes {
		c := &s.Changes[i]
		if c.At > s.Duration {
			return bad("change %d at %v is after the end", i, c.At.D())
		}
		for _, pc := range []struct {
			name string
			c    *PathChange
			p    *Path
		}{{"forward", c.Forward, &s.Forward}, {"reverse", c.Reverse, &s.Reverse}} {
			if pc.c == nil {
				continue
			}
			if err := pc.c.validate(res, pc.p.Queue.Discipline); err != nil {
				return bad("change %d at %v: %s: %v", i, c.At.D(), pc.name, err)
			}
		}
	}
	return nil
}

func (p *Path) validate(r resolver) error {
	if err := p.validateCapacity(r); err != nil {
		return err
	}
	if p.Loss < 0 || p.Loss > 1 {
		return fmt.Errorf("loss %v outside 0..1", p.Loss)
	}
	q := &p.Queue
	if q.Discipline == "" {
		q.Discipline = "fifo"
	}
	switch q.Discipline {
	case "fifo", "codel", "fq_codel", "cake":
		if q.ACQueue != "" || q.ACLimit != 0 {
			return fmt.Errorf("ac_queue and ac_limit are wmm parameters, not %s's", q.Discipline)
		}
	case "wmm":
		switch q.ACQueue {
		case "":
			q.ACQueue = "fifo"
		case "fifo", "codel":
		default:
			return fmt.Errorf("ac_queue %q: want fifo or codel", q.ACQueue)
		}
	default:
		return fmt.Errorf("queue discipline %q: want fifo, codel, fq_codel, cake or wmm", q.Discipline)
	}
	if q.Discipline == "cake" && p.Trace != "" {
		return errors.New(cakeOnTrace)
	}
	if q.Limit < 0 || q.LimitBytes < 0 || q.Quantum < 0 || q.Flows < 0 || q.ACLimit < 0 {
		return errors.New("queue limits must not be negative")
	}
	if q.Limit == 0 && q.LimitBytes == 0 {
		q.Limit = 1000
	}
	if !(p.Corrupt >= 0 && p.Corrupt <= 1) {
		return fmt.Errorf("corrupt %v outside 0..1", p.Corrupt)
	}
	for _, g := range []struct {
		name string
		ge   *GilbertElliott
	}{{"gilbert_elliott", p.GE}, {"corrupt_gilbert_elliott", p.CorruptGE}} {
		if g.ge == nil {
			continue
		}
		for _, v := range []float64{g.ge.P, g.ge.R, g.ge.LossGood, g.ge.LossBad} {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("%s probabilities must be within 0..1", g.name)
			}
		}
		if g.ge.Length < 0 {
			return fmt.Errorf("%s length %d is negative", g.name, g.ge.Length)
		}
	}
	return nil
}

func (f *Flow) validate(s *Scenario) error {
	switch f.Kind {
	case KindBulk:
		if f.CC == "" {
			f.CC = "owd"
		}
	case KindACP:
		if f.CC == "" {
			f.CC = "acp"
		}
	case KindLazy:
		f.CC = "lazy"
	case KindFixed:
		if f.UpdateRate <= 0 {
			return errors.New("fixed flows need update_rate > 0 (Hz)")
		}
	case KindCBR:
		if f.Rate == 0 {
			return errors.New("cbr flows need a rate")
		}
	case KindIperf3:
		if f.CC == "" {
			f.CC = "cubic"
		}
	case KindTelemetry:
		if f.Interval == 0 {
			f.Interval = Duration(100 * time.Millisecond)
		}
		if f.Interval < 0 {
			return errors.New("interval must be positive")
		}
		if f.IntervalMax != 0 && f.IntervalMax < f.Interval {
			return fmt.Errorf("interval_max %v is below interval %v", f.IntervalMax.D(), f.Interval.D())
		}
		if f.Protocol == "" {
			f.Protocol = "tcp"
		}
		if !slices.Contains([]string{"tcp", "udp", "fresh", "mqtt", "coap", "quic"}, f.Protocol) {
			return fmt.Errorf("protocol %q: want tcp, udp, fresh, mqtt, coap or quic", f.Protocol)
		}
		if f.Secure && f.Protocol != "fresh" && f.Protocol != "mqtt" && f.Protocol != "coap" && f.Protocol != "quic" {
			return errors.New("secure applies to fresh, mqtt (TLS 1.3) and coap (DTLS 1.2) only (quic is always encrypted)")
		}
		if f.CC != "" && f.Protocol != "quic" {
			return errors.New("cc on a telemetry flow applies to quic only (the controller under quic-go, through transport/quichook)")
		}
		if f.Reliable && f.Protocol != "mqtt" && f.Protocol != "coap" {
			return errors.New("reliable applies to mqtt (QoS 1) and coap (confirmable) only")
		}
		if f.Sleep && (f.Protocol == "tcp" || f.CC != "" || f.Respond || f.Reverse || f.Nagle) {
			return errors.New("sleep applies to forward fresh, mqtt, coap, quic (without cc) and udp flows (tcp: not built)")
		}
		if (f.Protocol == "mqtt" || f.Protocol == "coap" || f.Protocol == "quic") && (f.Respond || f.Reverse) {
			return fmt.Errorf("protocol %s: respond and reverse are for tcp and udp (the device publishes to the monitor's side)", f.Protocol)
		}
		if f.Nagle && f.Protocol != "tcp" {
			return errors.New("nagle applies to tcp only")
		}
		if f.Respond && f.Protocol == "fresh" {
			return errors.New("respond applies to tcp and udp (a fresh update is answered by its ACK)")
		}
	default:
		return fmt.Errorf("kind %q: want bulk, acp, fixed, lazy, cbr, iperf3 or telemetry", f.Kind)
	}
	if f.UpdateRate < 0 || math.IsInf(f.UpdateRate, 0) || math.IsNaN(f.UpdateRate) {
		return fmt.Errorf("update_rate %v: want a positive number of updates per second", f.UpdateRate)
	}
	if f.UpdateRate != 0 && !f.IsUpdates() {
		return fmt.Errorf("update_rate is for fixed flows (their rate) and acp and lazy flows (the source's reading rate), not %s flows", f.Kind)
	}
	if f.Kind != KindTelemetry && (f.Interval != 0 || f.IntervalMax != 0 || f.Protocol != "" || f.Nagle || f.Respond || f.Reliable || f.Secure || f.Sleep) {
		return errors.New("interval, interval_max, protocol, nagle, respond, reliable, secure and sleep are for telemetry flows only")
	}
	if f.Size == 0 {
		switch f.Kind {
		case KindCBR:
			f.Size = 1000
		case KindACP, KindFixed, KindLazy:
			f.Size = 1024
		case KindTelemetry:
			f.Size = 64
		default:
			f.Size = s.MSS
		}
	}
	if f.Size < 20 || f.Size > 65000 {
		return fmt.Errorf("size %d out of range 20..65000", f.Size)
	}
	if f.Stop != 0 && f.Stop <= f.Start {
		return errors.New("stop must be after start")
	}
	if f.Start >= s.Duration {
		return errors.New("starts after the scenario ends")
	}
	if f.ExtraDelay < 0 {
		return errors.New("extra_delay must not be negative")
	}
	if f.MaxWindow != 0 {
		if f.Kind != KindBulk {
			return fmt.Errorf("max_window is for bulk flows (a receive window), not %s flows", f.Kind)
		}
		if f.MaxWindow < 2*s.MSS {
			return fmt.Errorf("max_window %d is below two segments (2×mss = %d bytes)", f.MaxWindow, 2*s.MSS)
		}
	}
	if !f.DSCP.IsSet() {
		f.DSCP = dscp.BestEffort
	}
	return nil
}

// End is when the flow stops: Stop, or the scenario's end.
func (f *Flow) End(s *Scenario) Duration {
	if f.Stop == 0 || f.Stop > s.Duration {
		return s.Duration
	}
	return f.Stop
}

// EmuTUNOnly reports whether the flow runs only through the TUN router
// (freshbench emu --tun): kernel TCP (iperf3) and telemetry flows.
func (f *Flow) EmuTUNOnly() bool { return f.Kind == KindIperf3 || f.Kind == KindTelemetry }

// PeriodicSource reports whether the flow's application takes a reading
// every 1/UpdateRate and hands it to SendUpdate (acp and lazy flows with
// update_rate), rather than generating an update whenever the policy would
// send one.
func (f *Flow) PeriodicSource() bool {
	return (f.Kind == KindACP || f.Kind == KindLazy) && f.UpdateRate > 0
}

// IsUpdates reports whether the flow carries status updates.
func (f *Flow) IsUpdates() bool {
	return f.Kind == KindACP || f.Kind == KindFixed || f.Kind == KindLazy
}

// WithCC returns a copy of s in which every unpinned bulk flow uses name.
func (s *Scenario) WithCC(name string) *Scenario {
	c := *s
	c.Flows = append([]Flow(nil), s.Flows...)
	for i := range c.Flows {
		if c.Flows[i].Kind == KindBulk && !c.Flows[i].Pin {
			c.Flows[i].CC = name
		}
	}
	return &c
}
