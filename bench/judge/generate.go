package judge

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
)

// Family names.
const (
	Alone     = "alone"
	Fillers   = "fillers"
	OwnKind   = "ownkind"
	AQM       = "aqm"
	Jitter    = "jitter"
	Loss      = "loss"
	NarrowACK = "narrowack"
	ACP       = "acp"
)

// Families lists every family in the order the judge reports them.
var Families = []string{Alone, Fillers, OwnKind, AQM, Jitter, Loss, NarrowACK, ACP}

// Traces are the cellular traces of bench/traces the alone and ownkind
// families draw from; each has an .up and a .down file.
var Traces = []string{"ATT-LTE-driving-2016", "TMobile-LTE-short", "TMobile-UMTS-driving", "Verizon-EVDO-driving"}

// TraceDir is where Traces live, relative to the repository root (the
// scenario package resolves it from any directory inside the repository).
const TraceDir = "bench/traces"

// Names of the flows a draw holds, so criteria find them.
const (
	testPrefix = "test"      // flows under test: test, or test-1, test-2, … (ownkind)
	telemetry  = "telemetry" // narrowack: the device's own traffic on the return path
	acpPrefix  = "acp"       // acp: the status-update sources, acp-1, acp-2
)

// Draw is one scenario drawn from a family.
type Draw struct {
	Family string `json:"family"`
	Seed   int64  `json:"seed"`
	// Base is the family an acp draw added its sources to ("" otherwise).
	Base string `json:"base,omitempty"`
	// Trace is the trace file a trace-driven draw replays forward
	// ("TMobile-LTE-short.up"), for the per-trace leaderboard; "" for
	// rate-driven paths.
	Trace string `json:"trace,omitempty"`
	// Params are the drawn parameters in the order drawn, "name=value":
	// what a reader needs to rebuild the path in words.
	Params []string `json:"params"`
	// Scenario is the drawn scenario, validated. Its flows under test are
	// its unpinned bulk flows (named test…): sim.Options.CC replaces
	// their controller; everything else is cross traffic and stays.
	Scenario *scenario.Scenario `json:"scenario"`
}

// Options tune the generator.
type Options struct {
	// Scale multiplies every family's duration and the times drawn as
	// fractions of it (starts, changes); absolute spans (an outage's
	// length, a walk's hold time) stay. Default 1.
	Scale float64
}

// ErrFamily is returned for an unknown family name.
var ErrFamily = fmt.Errorf("judge: unknown family (known: %s)", strings.Join(Families, ","))

// Generate draws the scenario of family for seed. The same family, seed
// and options give the same scenario, byte for byte in its JSON; every
// parameter is drawn from the range the package doc gives.
func Generate(family string, seed int64, opts Options) (*Draw, error) {
	if opts.Scale <= 0 {
		opts.Scale = 1
	}
	if !slices.Contains(Families, family) {
		return nil, fmt.Errorf("%w: %q", ErrFamily, family)
	}
	g := newGen(family, seed, opts.Scale)
	d := &Draw{Family: family, Seed: seed}
	s := &scenario.Scenario{Name: fmt.Sprintf("judge-%s-%d", family, seed), Seed: seed}
	g.fill(d, s, family)
	if err := s.Validate(); err != nil {
		// A generator bug, not a user's mistake: every range is ours.
		return nil, fmt.Errorf("judge: %s seed %d drew an invalid scenario: %w", family, seed, err)
	}
	d.Scenario = s
	return d, nil
}

// gen draws one scenario's parameters from one random stream.
type gen struct {
	r     *rand.Rand
	scale float64
	d     *Draw
}

// newGen seeds a PCG stream from the seed and the family's name, so that
// family A's draw for seed 7 is not family B's.
func newGen(family string, seed int64, scale float64) *gen {
	h := fnv.New64a()
	h.Write([]byte(family))
	return &gen{r: rand.New(rand.NewPCG(uint64(seed), h.Sum64())), scale: scale}
}

func (g *gen) param(name string, format string, args ...any) {
	g.d.Params = append(g.d.Params, name+"="+fmt.Sprintf(format, args...))
}

// uniform draws from [lo, hi).
func (g *gen) uniform(lo, hi float64) float64 { return lo + (hi-lo)*g.r.Float64() }

// logUniform draws from [lo, hi) uniformly on a log scale: rates and
// buffer depths are felt as ratios.
func (g *gen) logUniform(lo, hi float64) float64 {
	return math.Exp(g.uniform(math.Log(lo), math.Log(hi)))
}

// intIn draws an integer from [lo, hi].
func (g *gen) intIn(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g *gen) choose(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) coin() bool { return g.r.IntN(2) == 0 }

// rate draws a rate log-uniformly from [lo, hi) bit/s, rounded to
// 1 kbit/s so that it reads back from its JSON exactly.
func (g *gen) rate(lo, hi float64) scenario.Rate {
	return scenario.Rate(math.Round(g.logUniform(lo, hi)/1e3) * 1e3)
}

// ms draws a duration uniformly from [lo, hi) milliseconds, rounded to
// the millisecond.
func (g *gen) ms(lo, hi float64) scenario.Duration {
	return scenario.Duration(time.Duration(math.Round(g.uniform(lo, hi))) * time.Millisecond)
}

// at is fraction f of duration d, rounded to the millisecond.
func at(d scenario.Duration, f float64) scenario.Duration {
	return scenario.Duration(time.Duration(float64(d) * f).Round(time.Millisecond))
}

// seconds is the family's duration scaled, rounded to the millisecond.
func (g *gen) seconds(s float64) scenario.Duration {
	return scenario.Duration(time.Duration(s * g.scale * float64(time.Second)).Round(time.Millisecond))
}

// fifoLimit is a FIFO of bdps × the path's BDP in packets of mss bytes
// (at least 4: a queue must hold a burst).
func fifoLimit(rate scenario.Rate, delay scenario.Duration, bdps float64, mss int) int {
	bdp := float64(rate) / 8 * 2 * delay.D().Seconds()
	return max(4, int(math.Round(bdps*bdp/float64(mss))))
}

// fixedPath is a symmetric rate-limited path (both directions alike, as
// the repository's scenario files are).
func fixedPath(s *scenario.Scenario, rate scenario.Rate, delay scenario.Duration, q scenario.Queue) {
	s.Forward = scenario.Path{Rate: rate, Delay: delay, Queue: q}
	s.Reverse = scenario.Path{Rate: rate, Delay: delay, Queue: q}
}

func testFlow(name string, start scenario.Duration) scenario.Flow {
	return scenario.Flow{Name: name, Kind: scenario.KindBulk, CC: "owd", Start: start}
}

func (g *gen) fill(d *Draw, s *scenario.Scenario, family string) {
	g.d = d
	switch family {
	case Alone:
		g.alone(s)
	case Fillers:
		g.fillers(s)
	case OwnKind:
		g.ownKind(s)
	case AQM:
		g.aqm(s)
	case Jitter:
		g.jitter(s)
	case Loss:
		g.loss(s)
	case NarrowACK:
		g.narrowACK(s)
	case ACP:
		g.acp(s)
	}
}

// tracePath replays a trace forward (its direction drawn) and the other
// direction of the same trace backward, both from a point the link's seed
// draws, as the repository's trace scenarios do.
func (g *gen) tracePath(s *scenario.Scenario, delay scenario.Duration, q scenario.Queue) {
	name := g.choose(Traces...)
	fwd, rev := ".up", ".down"
	if g.coin() {
		fwd, rev = rev, fwd
	}
	g.param("trace", "%s%s", name, fwd)
	g.d.Trace = name + fwd
	s.MSS = 1400 // Mahimahi's opportunities are 1500-byte packets
	s.Forward = scenario.Path{Trace: TraceDir + "/" + name + fwd, TraceStart: scenario.TraceStart{Random: true}, Delay: delay, Queue: q}
	s.Reverse = scenario.Path{Trace: TraceDir + "/" + name + rev, TraceStart: scenario.TraceStart{Random: true}, Delay: delay, Queue: q}
}

// queue draws FIFO (limit from buffer, packets) or CoDel (RFC 8289's
// defaults, Linux's 1000-packet limit).
func (g *gen) fifoOrCoDel(limit int) scenario.Queue {
	if g.coin() {
		g.param("queue", "codel")
		return scenario.Queue{Discipline: "codel"}
	}
	g.param("queue", "fifo")
	g.param("limit", "%dpkt", limit)
	return scenario.Queue{Discipline: "fifo", Limit: limit}
}

func (g *gen) alone(s *scenario.Scenario) {
	s.Duration = g.seconds(30)
	delay := g.ms(5, 60)
	g.param("delay", "%v", delay.D())
	variant := g.choose("trace", "steps", "walk", "outage")
	g.param("variant", "%s", variant)
	s.Flows = []scenario.Flow{testFlow(testPrefix, 0)}
	if variant == "trace" {
		limit := g.intIn(50, 400)
		g.tracePath(s, delay, g.fifoOrCoDel(limit))
		return
	}
	var rate scenario.Rate
	var walk *scenario.RateWalk
	if variant == "walk" {
		lo := g.rate(0.5e6, 5e6)
		hi := scenario.Rate(math.Round(float64(lo)*g.logUniform(2, 20)/1e3) * 1e3)
		hold := g.ms(100, 1000)
		holdMax := scenario.Duration(time.Duration(float64(hold) * g.uniform(1, 4)).Round(time.Millisecond))
		walk = &scenario.RateWalk{Min: lo, Max: hi, HoldMin: hold, HoldMax: holdMax}
		g.param("walk", "%s–%s hold %v–%v", scenario.FormatRate(lo.Bandwidth()), scenario.FormatRate(hi.Bandwidth()), walk.HoldMin.D(), walk.HoldMax.D())
		rate = scenario.Rate(math.Round(float64(walk.MeanRate())/1e3) * 1e3)
	} else {
		rate = g.rate(1e6, 50e6)
		g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
	}
	bdps := g.logUniform(0.5, 10)
	g.param("buffer", "%.2fBDP", bdps)
	fixedPath(s, rate, delay, g.fifoOrCoDel(fifoLimit(rate, delay, bdps, 1000)))
	switch variant {
	case "walk":
		s.Forward.Rate, s.Forward.RateWalk = 0, walk
		s.Reverse.Rate = walk.Max // ACKs never the bottleneck
	case "steps":
		n := g.intIn(1, 3)
		var times []float64
		for range n {
			times = append(times, g.uniform(0.2, 0.8))
		}
		slices.Sort(times)
		r := float64(rate)
		for _, f := range times {
			r = min(max(r*math.Pow(2, g.uniform(-3, 3)), 0.5e6), 100e6)
			nr := scenario.Rate(math.Round(r/1e3) * 1e3)
			s.Changes = append(s.Changes, scenario.Change{At: at(s.Duration, f), Forward: &scenario.PathChange{Rate: &nr}})
			g.param("step", "%v→%s", at(s.Duration, f).D(), scenario.FormatRate(nr.Bandwidth()))
		}
	case "outage":
		from := at(s.Duration, g.uniform(0.3, 0.6))
		span := g.ms(500, 3000) // not scaled: ends with the run at a small Scale
		g.param("outage", "%v+%v", from.D(), span.D())
		all, none := 1.0, 0.0
		// A radio outage takes both directions.
		s.Changes = append(s.Changes,
			scenario.Change{At: from, Forward: &scenario.PathChange{Loss: &all}, Reverse: &scenario.PathChange{Loss: &all}},
			scenario.Change{At: min(from+span, s.Duration), Forward: &scenario.PathChange{Loss: &none}, Reverse: &scenario.PathChange{Loss: &none}})
	}
}

func (g *gen) fillers(s *scenario.Scenario) {
	s.Duration = g.seconds(40)
	rate := g.rate(2e6, 50e6)
	delay := g.ms(5, 50)
	bdps := g.logUniform(0.5, 20)
	limit := fifoLimit(rate, delay, bdps, 1000)
	g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
	g.param("delay", "%v", delay.D())
	g.param("buffer", "%.2fBDP=%dpkt", bdps, limit)
	fixedPath(s, rate, delay, scenario.Queue{Discipline: "fifo", Limit: limit})
	n := g.intIn(1, 4)
	late := g.coin()
	g.param("fillers", "%d", n)
	g.param("order", "%s", map[bool]string{true: "test-late", false: "test-first"}[late])
	bdpBytes := float64(rate) / 8 * 2 * delay.D().Seconds()
	buffer := float64(limit * 1000)
	var start, test scenario.Duration
	if late {
		test = at(s.Duration, g.uniform(0.15, 0.35))
	} else {
		start = at(s.Duration, g.uniform(0.1, 0.3))
	}
	for i := range n {
		f := scenario.Flow{Name: fmt.Sprintf("filler-%d", i+1), Kind: scenario.KindBulk, CC: g.choose("cubic", "reno", "bbr"), Pin: true, Start: start}
		limited := "loss"
		if g.coin() {
			// A window above the pipe and below pipe + buffer: the
			// fillers together keep a standing queue of fill × buffer
			// and never overflow it.
			fill := g.uniform(0.3, 0.9)
			f.MaxWindow = max(2000, int((bdpBytes+fill*buffer)/float64(n)))
			limited = fmt.Sprintf("rwnd=%dB(fill %.2f)", f.MaxWindow, fill)
		}
		g.param(f.Name, "%s,%s,start=%v", f.CC, limited, start.D())
		s.Flows = append(s.Flows, f)
		start += at(s.Duration, g.uniform(0, 0.05))
	}
	g.param("test-start", "%v", test.D())
	s.Flows = append(s.Flows, testFlow(testPrefix, test))
}

func (g *gen) ownKind(s *scenario.Scenario) {
	s.Duration = g.seconds(40)
	delay := g.ms(5, 40)
	g.param("delay", "%v", delay.D())
	if g.coin() {
		g.tracePath(s, delay, scenario.Queue{Discipline: "fifo", Limit: g.intIn(100, 400)})
		g.param("limit", "%dpkt", s.Forward.Queue.Limit)
	} else {
		rate := g.rate(2e6, 50e6)
		bdps := g.logUniform(1, 5)
		limit := fifoLimit(rate, delay, bdps, 1000)
		g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
		g.param("buffer", "%.2fBDP=%dpkt", bdps, limit)
		fixedPath(s, rate, delay, scenario.Queue{Discipline: "fifo", Limit: limit})
	}
	n := g.intIn(2, 5)
	g.param("flows", "%d", n)
	var start scenario.Duration
	for i := range n {
		f := testFlow(fmt.Sprintf("%s-%d", testPrefix, i+1), start)
		f.ExtraDelay = g.ms(0, 50)
		g.param(f.Name, "start=%v,extra=%v", start.D(), f.ExtraDelay.D())
		s.Flows = append(s.Flows, f)
		start += at(s.Duration, g.uniform(0, 0.1))
	}
}

func (g *gen) aqm(s *scenario.Scenario) {
	s.Duration = g.seconds(40)
	rate := g.rate(5e6, 50e6)
	delay := g.ms(5, 50)
	disc := g.choose("codel", "fq_codel", "cake")
	g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
	g.param("delay", "%v", delay.D())
	g.param("aqm", "%s", disc)
	fixedPath(s, rate, delay, scenario.Queue{Discipline: disc})
	n := g.intIn(1, 4)
	g.param("reno", "%d", n)
	var start scenario.Duration
	for i := range n {
		s.Flows = append(s.Flows, scenario.Flow{Name: fmt.Sprintf("reno-%d", i+1), Kind: scenario.KindBulk, CC: "reno", Pin: true, Start: start})
		start += at(s.Duration, g.uniform(0, 0.025))
	}
	test := at(s.Duration, g.uniform(0.1, 0.25))
	g.param("test-start", "%v", test.D())
	s.Flows = append(s.Flows, testFlow(testPrefix, test))
}

func (g *gen) jitter(s *scenario.Scenario) {
	s.Duration = g.seconds(30)
	rate := g.rate(2e6, 50e6)
	delay := g.ms(10, 100)
	jit := g.ms(1, 20)
	bdps := g.logUniform(1, 5)
	limit := fifoLimit(rate, delay, bdps, 1000)
	g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
	g.param("delay", "%v", delay.D())
	g.param("jitter", "%v", jit.D())
	g.param("buffer", "%.2fBDP=%dpkt", bdps, limit)
	fixedPath(s, rate, delay, scenario.Queue{Discipline: "fifo", Limit: limit})
	s.Forward.Jitter = jit
	s.Flows = []scenario.Flow{testFlow(testPrefix, 0)}
}

func (g *gen) loss(s *scenario.Scenario) {
	s.Duration = g.seconds(40)
	rate := g.rate(1e6, 20e6)
	delay := g.ms(50, 300) // RTT 100–600 ms
	loss := math.Round(g.uniform(0.01, 0.03)*1e4) / 1e4
	bdps := g.logUniform(1, 3)
	limit := fifoLimit(rate, delay, bdps, 1000)
	g.param("rate", "%s", scenario.FormatRate(rate.Bandwidth()))
	g.param("rtt", "%v", 2*delay.D())
	g.param("loss", "%.2f%%", 100*loss)
	g.param("buffer", "%.2fBDP=%dpkt", bdps, limit)
	fixedPath(s, rate, delay, scenario.Queue{Discipline: "fifo", Limit: limit})
	s.Forward.Loss = loss
	s.Flows = []scenario.Flow{testFlow(testPrefix, 0)}
}

func (g *gen) narrowACK(s *scenario.Scenario) {
	s.Duration = g.seconds(30)
	down := g.rate(1e6, 5e6)
	up := g.rate(32e3, 128e3)
	delay := g.ms(20, 100)
	bdps := g.logUniform(1, 5)
	limit := fifoLimit(down, delay, bdps, 1000)
	upLimit := g.intIn(10, 50)
	size := g.intIn(50, 200)
	share := g.uniform(0.05, 0.2)
	tele := scenario.Rate(math.Round(float64(up)*share/1e2) * 1e2)
	g.param("down", "%s", scenario.FormatRate(down.Bandwidth()))
	g.param("up", "%s", scenario.FormatRate(up.Bandwidth()))
	g.param("delay", "%v", delay.D())
	g.param("buffer", "%.2fBDP=%dpkt", bdps, limit)
	g.param("up-limit", "%dpkt", upLimit)
	g.param("telemetry", "%s,%dB", scenario.FormatRate(tele.Bandwidth()), size)
	s.Forward = scenario.Path{Rate: down, Delay: delay, Queue: scenario.Queue{Discipline: "fifo", Limit: limit}}
	s.Reverse = scenario.Path{Rate: up, Delay: delay, Queue: scenario.Queue{Discipline: "fifo", Limit: upLimit}}
	s.Flows = []scenario.Flow{
		testFlow(testPrefix, 0),
		// The device's own traffic, sharing the uplink with the
		// download's ACKs: unresponsive, as a sensor's readings are.
		{Name: telemetry, Kind: scenario.KindCBR, Rate: tele, Size: size, Reverse: true},
	}
}

// acpBases are the families an acp draw adds its sources to.
var acpBases = []string{Alone, Fillers, OwnKind, AQM, Jitter, Loss, NarrowACK}

func (g *gen) acp(s *scenario.Scenario) {
	base := g.choose(acpBases...)
	g.d.Base = base
	g.param("base", "%s", base)
	g.fill(g.d, s, base)
	n := g.intIn(1, 2)
	size := g.intIn(64, 1024)
	g.param("sources", "%d", n)
	g.param("update-size", "%dB", size)
	for i := range n {
		s.Flows = append(s.Flows, scenario.Flow{Name: fmt.Sprintf("%s-%d", acpPrefix, i+1), Kind: scenario.KindACP, CC: "acp", Size: size})
	}
}
