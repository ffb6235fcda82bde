package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/fresh-udp/fresh/bench/traces"
	"github.com/fresh-udp/fresh/cc"
)

// A path's capacity comes from exactly one of three sources: a fixed
// "rate", a Mahimahi "trace" file replayed as delivery opportunities, or a
// "rate_walk", a seeded random process that re-draws the rate now and then.
// bench/netem implements them (Link); this file reads and checks them.

// TraceStart is where a trace replay begins: an offset into the trace, or
// a point drawn uniformly over the trace's period from the link's seed. In
// JSON, "random" or a duration ("30s"). The zero value starts at the
// trace's beginning, as mm-link does.
type TraceStart struct {
	Random bool
	Offset Duration // used when !Random; taken modulo the trace's period
}

// IsZero reports whether ts is the default, the start of the trace.
func (ts TraceStart) IsZero() bool { return !ts.Random && ts.Offset == 0 }

func (ts TraceStart) MarshalJSON() ([]byte, error) {
	if ts.Random {
		return json.Marshal("random")
	}
	return ts.Offset.MarshalJSON()
}

func (ts *TraceStart) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`trace_start must be "random" or a duration string like "30s": %w`, err)
	}
	if s == "random" {
		*ts = TraceStart{Random: true}
		return nil
	}
	var d Duration
	if err := d.UnmarshalJSON(b); err != nil {
		return fmt.Errorf(`trace_start: want "random" or a duration: %w`, err)
	}
	*ts = TraceStart{Offset: d}
	return nil
}

// RateWalk is a random capacity process: the rate holds for a time drawn
// uniformly from [HoldMin, HoldMax], then is re-drawn uniformly on a
// logarithmic scale between Min and Max (so the walk spends as long
// between 1 and 2 Mbit/s as between 10 and 20: capacity changes are felt
// as ratios, and a linear draw would rarely visit the low rates where
// queues build). Drawn from the link's seed: each seed is another walk.
type RateWalk struct {
	Min     Rate     `json:"min"`
	Max     Rate     `json:"max"`
	HoldMin Duration `json:"hold_min"`
	HoldMax Duration `json:"hold_max"`
}

// MinRateWalkHold bounds hold_min, ms: a walk re-drawn more often than once
// a millisecond is noise no controller can follow (each of its packets
// would see another rate), and bounds the work of replaying the walk.
const MinRateWalkHold = time.Millisecond

// Validate checks the walk's bounds.
func (w *RateWalk) Validate() error {
	switch {
	case w.Min <= 0:
		return errors.New(`rate_walk: min must be a positive rate such as "1Mbps"`)
	case w.Max < w.Min:
		return fmt.Errorf("rate_walk: max %s is below min %s", FormatRate(w.Max.Bandwidth()), FormatRate(w.Min.Bandwidth()))
	case w.HoldMin.D() < MinRateWalkHold:
		return fmt.Errorf("rate_walk: hold_min %v is below %v (set both hold_min and hold_max, e.g. \"200ms\" and \"500ms\")", w.HoldMin.D(), MinRateWalkHold)
	case w.HoldMax < w.HoldMin:
		return fmt.Errorf("rate_walk: hold_max %v is below hold_min %v", w.HoldMax.D(), w.HoldMin.D())
	}
	return nil
}

// MeanRate is the walk's time-averaged rate: the mean of the log-uniform
// distribution on [Min, Max], (Max − Min) / ln(Max / Min) (hold times do
// not depend on the rate drawn, so the time average is the draw's mean).
func (w *RateWalk) MeanRate() cc.Bandwidth {
	lo, hi := float64(w.Min), float64(w.Max)
	if hi <= lo {
		return w.Min.Bandwidth()
	}
	return cc.Bandwidth((hi - lo) / math.Log(hi/lo))
}

// Capacity is the path's mean capacity: its rate, the trace's mean rate
// over one period, or the rate walk's mean. For what needs one number for
// a variable path (the capacity axis of a plot, the ACP sweep's grid).
func (p *Path) Capacity() cc.Bandwidth {
	switch {
	case p.TraceData != nil:
		return p.TraceData.MeanRate()
	case p.RateWalk != nil:
		return p.RateWalk.MeanRate()
	}
	return p.Rate.Bandwidth()
}

// resolver loads the trace files a scenario names: relative names are
// looked for in dir (the scenario file's directory, or the working
// directory for Parse) and then at the root of the repository holding dir.
type resolver struct{ dir string }

func (r resolver) load(name string) (*traces.Trace, error) {
	dir := r.dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("trace %q: %w", name, err)
		}
		dir = wd
	}
	path, err := traces.Resolve(name, dir, traces.RepoRoot(dir))
	if err != nil {
		return nil, fmt.Errorf("trace: %w (relative paths are read from the scenario file's directory, then from the repository root)", err)
	}
	return traces.Load(path)
}

// validateCapacity checks that p has exactly one capacity source and
// loads its trace.
func (p *Path) validateCapacity(r resolver) error {
	n := 0
	for _, set := range []bool{p.Rate != 0, p.Trace != "", p.RateWalk != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New(`no capacity: set one of rate (e.g. "10Mbps"), trace (a Mahimahi trace file, e.g. "bench/traces/TMobile-LTE-short.up") or rate_walk`)
	case n > 1:
		return fmt.Errorf("%s: give only one of them (a trace or a rate walk is the capacity)", capacityFields(p.Rate != 0, p.Trace != "", p.RateWalk != nil))
	case !p.TraceStart.IsZero() && p.Trace == "":
		return errors.New("trace_start is set without a trace")
	}
	if p.RateWalk != nil {
		if err := p.RateWalk.Validate(); err != nil {
			return err
		}
	}
	if p.Trace == "" {
		p.TraceData = nil
		return nil
	}
	if p.TraceData != nil && p.traceFor == p.Trace {
		return nil // validated before (a copy validated again)
	}
	t, err := r.load(p.Trace)
	if err != nil {
		return err
	}
	p.TraceData, p.traceFor = t, p.Trace
	return nil
}

// validate checks a change of one path, whose queue discipline is disc.
func (c *PathChange) validate(r resolver, disc string) error {
	n := 0
	for _, set := range []bool{c.Rate != nil, c.Trace != nil, c.RateWalk != nil} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%s: a change gives at most one of them", capacityFields(c.Rate != nil, c.Trace != nil, c.RateWalk != nil))
	case c.Rate != nil && *c.Rate <= 0:
		return errors.New("rate must be positive")
	case c.TraceStart != nil && c.Trace == nil:
		return errors.New("trace_start is set without a trace")
	case c.Trace != nil && disc == "cake":
		return errors.New(cakeOnTrace)
	case c.Delay != nil && *c.Delay < 0, c.Jitter != nil && *c.Jitter < 0:
		return errors.New("delay and jitter must not be negative")
	case c.Loss != nil && !(*c.Loss >= 0 && *c.Loss <= 1):
		return fmt.Errorf("loss %v outside 0..1", *c.Loss)
	}
	if c.RateWalk != nil {
		if err := c.RateWalk.Validate(); err != nil {
			return err
		}
	}
	if c.Trace == nil {
		c.TraceData = nil
		return nil
	}
	if *c.Trace == "" {
		return errors.New("trace is an empty file name")
	}
	if c.TraceData != nil && c.traceFor == *c.Trace {
		return nil
	}
	t, err := r.load(*c.Trace)
	if err != nil {
		return err
	}
	c.TraceData, c.traceFor = t, *c.Trace
	return nil
}

// cakeOnTrace is why a trace link refuses cake.
const cakeOnTrace = "cake needs a rate (its shaper and its tins' bandwidth thresholds are fractions of it) and a trace link has none: use fq_codel, codel, fifo or wmm on a trace, or a rate or rate_walk with cake"

// capacityFields names the capacity fields that are set, for an error.
func capacityFields(rate, trace, walk bool) string {
	var names []string
	for _, f := range []struct {
		set  bool
		name string
	}{{rate, "rate"}, {trace, "trace"}, {walk, "rate_walk"}} {
		if f.set {
			names = append(names, f.name)
		}
	}
	switch len(names) {
	case 2:
		return names[0] + " and " + names[1] + " are both set"
	case 3:
		return "rate, trace and rate_walk are all set"
	}
	return ""
}

// LoadTrace reads the trace file name as a scenario in directory dir
// would ("" = the working directory): a relative name from dir, then from
// the root of the repository holding dir. Files are read once per process.
func LoadTrace(name, dir string) (*traces.Trace, error) { return resolver{dir: dir}.load(name) }
