package judge

import (
	"math"
	"strconv"
	"strings"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// ModeCompetitive is the cc.Metrics.Mode a controller reports while it
// competes like a buffer filler (owd's competitive mode; report.Flow.ModeS
// counts its seconds). Controllers without modes never report it.
const ModeCompetitive = "competitive"

// Outcome is what the criteria read from one run of a draw under one
// controller.
type Outcome struct {
	CC string `json:"cc"`
	// GoodputBps is the flows under test's goodput, summed, bit/s.
	GoodputBps float64 `json:"goodput_bps"`
	// OWDP95Ms is their p95 one-way delay (the mean over them), ms.
	OWDP95Ms float64 `json:"owd_p95_ms"`
	// Power is GoodputBps ÷ OWDP95Ms in Mbit/s per second of delay.
	Power float64 `json:"power"`
	// CompetitiveS is their seconds in ModeCompetitive, summed.
	CompetitiveS float64 `json:"competitive_s"`
	// Share is their share of the forward bulk flows' bytes from the last
	// bulk flow's start to the end; FairShare is their number over the
	// number of forward bulk flows. Both 0 unless the family is judged on
	// share (fillers, aqm).
	Share     float64 `json:"share,omitempty"`
	FairShare float64 `json:"fair_share,omitempty"`
	// Jain is the simulator's Jain index over the forward bulk flows while
	// all are active (report.Run.Jain).
	Jain float64 `json:"jain"`
	// TelemetryDelivered is the fraction of the return path's own packets
	// delivered (narrowack).
	TelemetryDelivered *float64 `json:"telemetry_delivered,omitempty"`
	// ACP holds the acp family's measures.
	ACP *ACPOutcome `json:"acp,omitempty"`
}

// ACPOutcome compares a draw's ACP sources with the same draw in which
// every source is lazy (one update per RTT): the reference ACP's cost
// budget is stated against.
type ACPOutcome struct {
	// AgeMs and LazyAgeMs are the sources' time-average age of
	// information (the mean over the sources), ms.
	AgeMs     float64 `json:"age_ms"`
	LazyAgeMs float64 `json:"lazy_age_ms"`
	// ElasticBps and LazyElasticBps are every bulk flow's goodput, summed:
	// what the sources leave to the elastic traffic.
	ElasticBps     float64 `json:"elastic_bps"`
	LazyElasticBps float64 `json:"lazy_elastic_bps"`
	// SourcesJain is Jain's index over the sources' delivered update
	// rates (nil with one source).
	SourcesJain *float64 `json:"sources_jain,omitempty"`
	// OracleAgeMs is the constrained oracle's mean age (ConstrainedOracle)
	// and OracleRateHz its fixed rate per source; 0 without an oracle
	// (Config.OracleRates 0, or no grid rate within the cost budget).
	OracleAgeMs  float64 `json:"oracle_age_ms,omitempty"`
	OracleRateHz float64 `json:"oracle_rate_hz,omitempty"`
}

// CostBudget is the most of their goodput the elastic flows may lose to
// the status updates, against the same draw with lazy sources.
const CostBudget = 0.10

// OracleGrid is the fixed update rates the constrained oracle is sought
// among for draw s: n rates spaced geometrically from 0.5 Hz to the rate
// at which one source's updates (size + 82 bytes of headers on the wire)
// would fill the path's mean capacity, the same for every controller.
func OracleGrid(s *scenario.Scenario, n int) []float64 {
	size := 0
	for _, f := range s.Flows {
		if f.Kind == scenario.KindACP {
			size = f.Size
			break
		}
	}
	if n <= 0 || size == 0 {
		return nil
	}
	const lo = 0.5 // Hz
	hi := max(float64(s.Forward.Capacity())/float64((size+82)*8), 2*lo)
	grid := make([]float64, n)
	for k := range grid {
		// To the mHz, so that the rate reported is the rate run.
		grid[k] = math.Round(lo*math.Pow(hi/lo, float64(k)/float64(max(n-1, 1)))*1e3) / 1e3
	}
	return grid
}

// ConstrainedOracle picks, among the runs of an acp draw with every source
// at the fixed rate grid[k] (runs[k]), the lowest mean age among those
// whose elastic flows lost at most CostBudget of lazyElasticBps (every run
// counts when the draw has no elastic traffic). It returns the age and the
// rate, or zeros when no rate keeps to the budget.
func ConstrainedOracle(lazyElasticBps float64, grid []float64, runs []*report.Run) (ageMs, rateHz float64) {
	for k, r := range runs {
		if r == nil {
			continue
		}
		age, elastic, _ := acpMeasures(r)
		if age <= 0 || (lazyElasticBps > 0 && !atMost(1-elastic/lazyElasticBps, CostBudget)) {
			continue
		}
		if ageMs == 0 || age < ageMs {
			ageMs, rateHz = age, grid[k]
		}
	}
	return round4(ageMs), rateHz
}

func isTest(f report.Flow) bool { return strings.HasPrefix(f.Name, testPrefix) }

// Measure reads the outcome of run r of draw d. lazy, for acp draws, is
// the same draw's run with lazy sources (nil otherwise).
func Measure(d *Draw, r, lazy *report.Run) Outcome {
	o := Outcome{CC: r.CC, Jain: r.Jain}
	n := 0
	for _, f := range r.Flows {
		if !isTest(f) {
			continue
		}
		n++
		o.GoodputBps += f.GoodputBps
		o.OWDP95Ms += f.OWDms.P95
		o.CompetitiveS += f.ModeS[ModeCompetitive]
	}
	if n > 0 {
		o.OWDP95Ms /= float64(n)
	}
	if o.OWDP95Ms > 0 {
		o.Power = (o.GoodputBps / 1e6) / (o.OWDP95Ms / 1e3)
	}
	if needsSeries(d.Family) {
		o.Share, o.FairShare = windowShare(d.Scenario, r)
	}
	if f, ok := r.Flow(telemetry); ok && f.Sent > 0 {
		v := float64(f.Delivered) / float64(f.Sent)
		o.TelemetryDelivered = &v
	}
	if d.Family == ACP && lazy != nil {
		a := &ACPOutcome{}
		a.AgeMs, a.ElasticBps, a.SourcesJain = acpMeasures(r)
		a.LazyAgeMs, a.LazyElasticBps, _ = acpMeasures(lazy)
		o.ACP = a
	}
	return o
}

// needsSeries reports whether the family's criteria need the runs' time
// series (a share over a window that starts after the flows' starts).
func needsSeries(family string) bool { return family == Fillers || family == AQM }

// windowShare is the flows under test's share of the forward bulk bytes
// delivered from the last forward bulk flow's start to the end (the
// interval every flow competes in; a latecomer's share over its own
// lifetime would count the others' time alone), and their fair share.
func windowShare(s *scenario.Scenario, r *report.Run) (share, fair float64) {
	var from float64
	var nTest, nBulk int
	for _, f := range s.Flows {
		if f.Kind == scenario.KindBulk && !f.Reverse {
			from = max(from, f.Start.D().Seconds())
			nBulk++
			if strings.HasPrefix(f.Name, testPrefix) {
				nTest++
			}
		}
	}
	var test, all float64
	for i, f := range r.Flows {
		if i >= len(s.Flows) || s.Flows[i].Kind != scenario.KindBulk || s.Flows[i].Reverse || f.Series == nil {
			continue
		}
		b := windowBytes(f.Series, from)
		all += b
		if isTest(f) {
			test += b
		}
	}
	if all > 0 {
		share = test / all
	}
	if nBulk > 0 {
		fair = float64(nTest) / float64(nBulk)
	}
	return share, fair
}

// windowBytes sums a goodput series over the intervals that begin at or
// after from (a sample at T covers (T − step, T]).
func windowBytes(se *report.Series, from float64) float64 {
	var b float64
	for i, t := range se.T {
		step := t
		if i > 0 {
			step = t - se.T[i-1]
		}
		if t-step >= from-1e-9 {
			b += se.GoodputBps[i] * step / 8
		}
	}
	return b
}

// acpMeasures are one run's mean age over the ACP sources, every bulk
// flow's goodput, and Jain over the sources' delivered update rates.
func acpMeasures(r *report.Run) (ageMs, elasticBps float64, jain *float64) {
	var ages, rates []float64
	for _, f := range r.Flows {
		switch {
		case f.Kind == scenario.KindBulk:
			elasticBps += f.GoodputBps
		case strings.HasPrefix(f.Name, acpPrefix) && f.AgeMs != nil:
			ages = append(ages, f.AgeMs.Mean)
			if d := f.EndS - f.StartS; d > 0 {
				rates = append(rates, float64(f.Delivered)/d)
			}
		}
	}
	for _, a := range ages {
		ageMs += a / float64(len(ages))
	}
	if len(rates) > 1 {
		j := report.Jain(rates)
		jain = &j
	}
	return ageMs, elasticBps, jain
}

// Criterion is one of the targets owd is held to, judged per draw.
type Criterion struct {
	Family string `json:"family"`
	Name   string `json:"name"`
	// Title says the per-draw test in words.
	Title string `json:"title"`
	// Need is the fraction of draws that must pass for the target to be
	// met: 1 for "on every draw", 0.9 for "on ≥ 90 % of draws".
	Need float64 `json:"need"`
	// Higher is true when larger values are better (the worst draw is
	// then the smallest value).
	Higher bool `json:"higher"`
	// eval returns the draw's value for controller own among every
	// controller's outcome of the same draw, whether it passes, and false
	// if the criterion does not apply (no reference controller in the
	// run, or own is the reference).
	eval func(own Outcome, all []Outcome) (v float64, pass, ok bool)
}

// Eval judges one controller's outcome of a draw among all of them.
func (c Criterion) Eval(own Outcome, all []Outcome) (v float64, pass, ok bool) {
	return c.eval(own, all)
}

func competitiveZero(family string) Criterion {
	return Criterion{Family: family, Name: "competitive_s", Title: "seconds in competitive mode = 0", Need: 1,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) { return o.CompetitiveS, o.CompetitiveS == 0, true }}
}

func shareAtLeast(family string, min, need float64) Criterion {
	return Criterion{Family: family, Name: "share_fair_" + ftoa(min), Title: "share ÷ fair share ≥ " + ftoa(min), Need: need, Higher: true,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.FairShare == 0 {
				return 0, false, false
			}
			v := o.Share / o.FairShare
			return v, atLeast(v, min), true
		}}
}

func jainAtLeast(min, need float64) Criterion {
	return Criterion{Family: OwnKind, Name: "jain_" + ftoa(min), Title: "Jain's index ≥ " + ftoa(min), Need: need, Higher: true,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) { return o.Jain, atLeast(o.Jain, min), true }}
}

// reference finds controller name's outcome among all; none if own is it.
func reference(name string, own Outcome, all []Outcome) (Outcome, bool) {
	if own.CC == name {
		return Outcome{}, false
	}
	for _, o := range all {
		if o.CC == name {
			return o, true
		}
	}
	return Outcome{}, false
}

func goodputVsBBR(family string) Criterion {
	return Criterion{Family: family, Name: "goodput_vs_bbr", Title: "goodput ÷ bbr's ≥ 0.8", Need: 0.9, Higher: true,
		eval: func(o Outcome, all []Outcome) (float64, bool, bool) {
			b, ok := reference("bbr", o, all)
			if !ok || b.GoodputBps == 0 {
				return 0, false, false
			}
			v := o.GoodputBps / b.GoodputBps
			return v, atLeast(v, 0.8), true
		}}
}

// Criteria lists every criterion, by family in Families order. The
// thresholds and required pass rates are the targets set for owd; where
// they give no rate (aqm, jitter, narrowack) the judge asks 90 % of draws.
var Criteria = []Criterion{
	competitiveZero(Alone),
	{Family: Alone, Name: "power_vs_best", Title: "power ÷ best other controller's ≥ 1.0", Need: 0.9, Higher: true,
		eval: func(o Outcome, all []Outcome) (float64, bool, bool) {
			best := 0.0
			for _, x := range all {
				if x.CC != o.CC {
					best = max(best, x.Power)
				}
			}
			if best == 0 {
				return 0, false, false
			}
			v := o.Power / best
			return v, atLeast(v, 1), true
		}},
	shareAtLeast(Fillers, 0.7, 0.9),
	shareAtLeast(Fillers, 0.5, 1),
	jainAtLeast(0.95, 0.9),
	jainAtLeast(0.8, 1),
	competitiveZero(OwnKind),
	shareAtLeast(AQM, 0.8, 0.9),
	competitiveZero(Jitter),
	goodputVsBBR(Jitter),
	goodputVsBBR(Loss),
	{Family: NarrowACK, Name: "telemetry_delivered", Title: "return path's own packets delivered ≥ 90 %", Need: 0.9, Higher: true,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.TelemetryDelivered == nil {
				return 0, false, false
			}
			return *o.TelemetryDelivered, atLeast(*o.TelemetryDelivered, 0.9), true
		}},
	{Family: NarrowACK, Name: "owd_p95_vs_bbr", Title: "p95 one-way delay ÷ bbr's ≤ 1.0", Need: 0.9,
		eval: func(o Outcome, all []Outcome) (float64, bool, bool) {
			b, ok := reference("bbr", o, all)
			if !ok || b.OWDP95Ms == 0 {
				return 0, false, false
			}
			v := o.OWDP95Ms / b.OWDP95Ms
			return v, atMost(v, 1), true
		}},
	{Family: ACP, Name: "age_vs_lazy", Title: "ACP's mean age ÷ lazy's ≤ 1.0", Need: 1,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.ACP == nil || o.ACP.LazyAgeMs == 0 {
				return 0, false, false
			}
			v := o.ACP.AgeMs / o.ACP.LazyAgeMs
			return v, atMost(v, 1), true
		}},
	{Family: ACP, Name: "age_vs_oracle", Title: "ACP's mean age ÷ the constrained oracle's ≤ 1.15", Need: 1,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.ACP == nil || o.ACP.OracleAgeMs == 0 {
				return 0, false, false
			}
			v := o.ACP.AgeMs / o.ACP.OracleAgeMs
			return v, atMost(v, 1.15), true
		}},
	{Family: ACP, Name: "elastic_cost", Title: "elastic flows' goodput lost beside ACP vs lazy ≤ 10 %", Need: 1,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.ACP == nil || o.ACP.LazyElasticBps == 0 {
				return 0, false, false
			}
			v := 1 - o.ACP.ElasticBps/o.ACP.LazyElasticBps
			return v, atMost(v, CostBudget), true
		}},
	{Family: ACP, Name: "sources_jain", Title: "Jain's index between two sources' update rates ≥ 0.95", Need: 1, Higher: true,
		eval: func(o Outcome, _ []Outcome) (float64, bool, bool) {
			if o.ACP == nil || o.ACP.SourcesJain == nil {
				return 0, false, false
			}
			return *o.ACP.SourcesJain, atLeast(*o.ACP.SourcesJain, 0.95), true
		}},
}

// CriteriaOf returns family's criteria.
func CriteriaOf(family string) []Criterion {
	var out []Criterion
	for _, c := range Criteria {
		if c.Family == family {
			out = append(out, c)
		}
	}
	return out
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// tolerance absorbs the rounding of a ratio computed at a threshold
// (0.16 ÷ 0.2 is 0.7999999999999999): a draw exactly at the target
// passes.
const tolerance = 1e-9

func atLeast(v, min float64) bool { return v >= min-tolerance }
func atMost(v, max float64) bool  { return v <= max+tolerance }
