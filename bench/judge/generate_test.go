package judge

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

func draw(t *testing.T, family string, seed int64) *Draw {
	t.Helper()
	d, err := Generate(family, seed, Options{})
	require.NoError(t, err)
	return d
}

// TestGenerateDeterministic: the same family and seed draw the same
// scenario byte for byte; another seed or family draws another.
func TestGenerateDeterministic(t *testing.T) {
	for _, fam := range Families {
		a, err := json.Marshal(draw(t, fam, 42))
		require.NoError(t, err)
		b, err := json.Marshal(draw(t, fam, 42))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), fam)
		c, err := json.Marshal(draw(t, fam, 43))
		require.NoError(t, err)
		require.NotEqual(t, string(a), string(c), fam)
	}
	// fillers and jitter both draw their rate first from logU(2, 50)
	// Mbit/s: one stream for both would give them the same rates.
	same := 0
	for seed := range int64(20) {
		if draw(t, Fillers, seed).Scenario.Forward.Rate == draw(t, Jitter, seed).Scenario.Forward.Rate {
			same++
		}
	}
	require.Less(t, same, 2, "the family seeds the stream too: its draws are not another family's")
}

// TestGenerateRoundTrips: a drawn scenario written as JSON reads back as
// the same scenario (what freshbench judge --json stores reruns exactly).
func TestGenerateRoundTrips(t *testing.T) {
	for _, fam := range Families {
		for seed := range int64(20) {
			d := draw(t, fam, seed)
			b, err := json.Marshal(d.Scenario)
			require.NoError(t, err)
			s, err := scenario.Parse(b)
			require.NoError(t, err, "%s seed %d: %s", fam, seed, b)
			b2, err := json.Marshal(s)
			require.NoError(t, err)
			require.JSONEq(t, string(b), string(b2))
		}
	}
}

func TestGenerateUnknownFamily(t *testing.T) {
	_, err := Generate("bufferbloat", 1, Options{})
	require.ErrorIs(t, err, ErrFamily)
	require.ErrorContains(t, err, "alone,fillers")
}

func mbit(r scenario.Rate) float64 { return float64(r) / 1e6 }

func msOf(d scenario.Duration) float64 { return float64(d.D()) / float64(time.Millisecond) }

func between(t *testing.T, what string, v, lo, hi float64) {
	t.Helper()
	require.True(t, v >= lo-1e-9 && v <= hi+1e-9, "%s = %v outside [%v, %v]", what, v, lo, hi)
}

// bdps is a FIFO's depth in BDP of the path's forward rate and delay.
func bdps(p scenario.Path, rate scenario.Rate) float64 {
	return float64(p.Queue.Limit*1000) / (float64(rate) / 8 * 2 * p.Delay.D().Seconds())
}

// fifoBetween checks a FIFO's depth against [lo, hi] BDP (a limit of 4
// packets is the floor, and rounding to packets moves it by half a one).
func fifoBetween(t *testing.T, p scenario.Path, rate scenario.Rate, lo, hi float64) {
	t.Helper()
	require.Equal(t, "fifo", p.Queue.Discipline)
	if p.Queue.Limit == 4 {
		return // the floor: a drawn depth below 4 packets
	}
	half := 500 / (float64(rate) / 8 * 2 * p.Delay.D().Seconds())
	between(t, "buffer [BDP]", bdps(p, rate), lo-half, hi+half)
}

func testFlows(s *scenario.Scenario) []scenario.Flow {
	var out []scenario.Flow
	for _, f := range s.Flows {
		if strings.HasPrefix(f.Name, testPrefix) {
			out = append(out, f)
		}
	}
	return out
}

// TestGenerateRanges draws 400 seeds of every family and checks every
// parameter against the range the package doc gives, and that every
// choice is drawn.
func TestGenerateRanges(t *testing.T) {
	const n = 400
	seen := map[string]bool{}
	see := func(fam, what string) { seen[fam+":"+what] = true }
	for seed := range int64(n) {
		for _, fam := range Families {
			d := draw(t, fam, seed)
			s := d.Scenario
			base := fam
			if fam == ACP {
				base = d.Base
				require.Contains(t, acpBases, base)
				see(fam, base)
				var srcs []scenario.Flow
				for _, f := range s.Flows {
					if f.Kind == scenario.KindACP {
						srcs = append(srcs, f)
					}
				}
				between(t, "acp sources", float64(len(srcs)), 1, 2)
				see(fam, "sources"+string(rune('0'+len(srcs))))
				for _, f := range srcs {
					between(t, "update size", float64(f.Size), 64, 1024)
					require.Equal(t, "acp", f.CC)
					require.Zero(t, f.Start)
				}
			}
			checkFamily(t, base, d, see)
			for _, f := range s.Flows {
				if f.Kind == scenario.KindBulk && !f.Pin {
					require.True(t, strings.HasPrefix(f.Name, testPrefix), "an unpinned flow is a flow under test")
				}
			}
			require.NotEmpty(t, testFlows(s))
		}
	}
	for _, want := range []string{
		"alone:trace", "alone:steps", "alone:walk", "alone:outage", "alone:fifo", "alone:codel",
		"fillers:cubic", "fillers:reno", "fillers:bbr", "fillers:rwnd", "fillers:loss", "fillers:late", "fillers:first",
		"fillers:n1", "fillers:n4", "ownkind:n2", "ownkind:n5", "ownkind:trace", "ownkind:rate",
		"aqm:codel", "aqm:fq_codel", "aqm:cake", "aqm:n1", "aqm:n4",
		"acp:sources1", "acp:sources2",
	} {
		require.True(t, seen[want], "no draw of %s in %d seeds", want, n)
	}
	for _, b := range acpBases {
		require.True(t, seen["acp:"+b], "no acp draw over %s", b)
	}
	for _, tr := range Traces {
		for _, dir := range []string{".up", ".down"} {
			require.True(t, seen["trace:"+tr+dir], "trace %s%s never drawn", tr, dir)
		}
	}
}

func checkFamily(t *testing.T, fam string, d *Draw, see func(fam, what string)) {
	s := d.Scenario
	D := s.Duration
	checkTrace := func() {
		p := s.Forward
		require.NotEmpty(t, p.Trace)
		name := strings.TrimPrefix(p.Trace, TraceDir+"/")
		base, dir, _ := strings.Cut(name, ".")
		require.Contains(t, Traces, base)
		other := map[string]string{"up": "down", "down": "up"}[dir]
		require.Equal(t, TraceDir+"/"+base+"."+other, s.Reverse.Trace)
		require.True(t, p.TraceStart.Random && s.Reverse.TraceStart.Random)
		require.Equal(t, name, d.Trace)
		see("trace", name)
	}
	switch fam {
	case Alone:
		require.Equal(t, 30*time.Second, D.D())
		between(t, "delay", msOf(s.Forward.Delay), 5, 60)
		require.Len(t, s.Flows[:len(testFlows(s))], 1)
		q := s.Forward.Queue
		see(fam, q.Discipline)
		switch {
		case s.Forward.Trace != "":
			see(fam, "trace")
			checkTrace()
			if q.Discipline == "fifo" {
				between(t, "limit", float64(q.Limit), 50, 400)
			}
		case s.Forward.RateWalk != nil:
			see(fam, "walk")
			w := s.Forward.RateWalk
			between(t, "walk min", mbit(w.Min), 0.5, 5)
			between(t, "walk max/min", float64(w.Max)/float64(w.Min), 2*0.99, 20*1.01)
			between(t, "hold min", msOf(w.HoldMin), 100, 1000)
			between(t, "hold max/min", float64(w.HoldMax)/float64(w.HoldMin), 1, 4.01)
			require.Equal(t, w.Max, s.Reverse.Rate)
			if q.Discipline == "fifo" {
				fifoBetween(t, s.Forward, scenario.Rate(w.MeanRate()), 0.5*0.99, 10*1.01)
			}
		default:
			between(t, "rate", mbit(s.Forward.Rate), 1, 50)
			if q.Discipline == "fifo" {
				fifoBetween(t, s.Forward, s.Forward.Rate, 0.5, 10)
			}
			if len(s.Changes) == 2 && s.Changes[0].Forward.Loss != nil {
				see(fam, "outage")
				c0, c1 := s.Changes[0], s.Changes[1]
				between(t, "outage start [D]", float64(c0.At)/float64(D), 0.3, 0.6)
				between(t, "outage length", msOf(c1.At-c0.At), 500, 3000)
				require.Equal(t, 1.0, *c0.Forward.Loss)
				require.Equal(t, 1.0, *c0.Reverse.Loss)
				require.Equal(t, 0.0, *c1.Forward.Loss)
				break
			}
			see(fam, "steps")
			between(t, "steps", float64(len(s.Changes)), 1, 3)
			for _, c := range s.Changes {
				between(t, "step at [D]", float64(c.At)/float64(D), 0.2, 0.8)
				between(t, "step rate", mbit(*c.Forward.Rate), 0.5, 100)
			}
		}
	case Fillers:
		require.Equal(t, 40*time.Second, D.D())
		rate := s.Forward.Rate
		between(t, "rate", mbit(rate), 2, 50)
		between(t, "delay", msOf(s.Forward.Delay), 5, 50)
		fifoBetween(t, s.Forward, rate, 0.5, 20)
		fillers := s.Flows[:len(s.Flows)-len(testFlows(s))]
		if d.Family == ACP {
			fillers = fillers[:0]
			for _, f := range s.Flows {
				if strings.HasPrefix(f.Name, "filler-") {
					fillers = append(fillers, f)
				}
			}
		}
		between(t, "fillers", float64(len(fillers)), 1, 4)
		see(fam, "n"+string(rune('0'+len(fillers))))
		test := testFlows(s)[0]
		late := test.Start > 0
		see(fam, map[bool]string{true: "late", false: "first"}[late])
		if late {
			between(t, "test start [D]", float64(test.Start)/float64(D), 0.15, 0.35)
		}
		bdp := float64(rate) / 8 * 2 * s.Forward.Delay.D().Seconds()
		buffer := float64(s.Forward.Queue.Limit * 1000)
		for i, f := range fillers {
			require.True(t, f.Pin)
			require.Contains(t, []string{"cubic", "reno", "bbr"}, f.CC)
			see(fam, f.CC)
			if i == 0 {
				if late {
					require.Zero(t, f.Start)
				} else {
					between(t, "first filler start [D]", float64(f.Start)/float64(D), 0.1, 0.3)
				}
			} else {
				between(t, "filler gap [D]", float64(f.Start-fillers[i-1].Start)/float64(D), 0, 0.05)
			}
			if f.MaxWindow > 0 {
				see(fam, "rwnd")
				fill := (float64(f.MaxWindow*len(fillers)) - bdp) / buffer
				if f.MaxWindow > 2000 {
					between(t, "rwnd fill", fill, 0.3-float64(len(fillers))/buffer, 0.9)
				}
			} else {
				see(fam, "loss")
			}
		}
	case OwnKind:
		require.Equal(t, 40*time.Second, D.D())
		between(t, "delay", msOf(s.Forward.Delay), 5, 40)
		if s.Forward.Trace != "" {
			see(fam, "trace")
			checkTrace()
			between(t, "limit", float64(s.Forward.Queue.Limit), 100, 400)
		} else {
			see(fam, "rate")
			between(t, "rate", mbit(s.Forward.Rate), 2, 50)
			fifoBetween(t, s.Forward, s.Forward.Rate, 1, 5)
		}
		fl := testFlows(s)
		between(t, "flows", float64(len(fl)), 2, 5)
		see(fam, "n"+string(rune('0'+len(fl))))
		require.Zero(t, fl[0].Start)
		for i, f := range fl {
			require.False(t, f.Pin)
			between(t, "extra delay", msOf(f.ExtraDelay), 0, 50)
			if i > 0 {
				between(t, "stagger [D]", float64(f.Start-fl[i-1].Start)/float64(D), 0, 0.1)
			}
		}
	case AQM:
		require.Equal(t, 40*time.Second, D.D())
		between(t, "rate", mbit(s.Forward.Rate), 5, 50)
		between(t, "delay", msOf(s.Forward.Delay), 5, 50)
		require.Contains(t, []string{"codel", "fq_codel", "cake"}, s.Forward.Queue.Discipline)
		see(fam, s.Forward.Queue.Discipline)
		var reno int
		for _, f := range s.Flows {
			if f.CC == "reno" && f.Pin {
				reno++
				between(t, "reno start [D]", float64(f.Start)/float64(D), 0, 3*0.025)
			}
		}
		between(t, "reno flows", float64(reno), 1, 4)
		see(fam, "n"+string(rune('0'+reno)))
		between(t, "test start [D]", float64(testFlows(s)[0].Start)/float64(D), 0.1, 0.25)
	case Jitter:
		require.Equal(t, 30*time.Second, D.D())
		between(t, "rate", mbit(s.Forward.Rate), 2, 50)
		between(t, "delay", msOf(s.Forward.Delay), 10, 100)
		between(t, "jitter", msOf(s.Forward.Jitter), 1, 20)
		require.Zero(t, s.Reverse.Jitter)
		fifoBetween(t, s.Forward, s.Forward.Rate, 1, 5)
	case Loss:
		require.Equal(t, 40*time.Second, D.D())
		between(t, "rate", mbit(s.Forward.Rate), 1, 20)
		between(t, "rtt", 2*msOf(s.Forward.Delay), 100, 600)
		between(t, "loss", s.Forward.Loss, 0.01, 0.03)
		fifoBetween(t, s.Forward, s.Forward.Rate, 1, 3)
	case NarrowACK:
		require.Equal(t, 30*time.Second, D.D())
		between(t, "down", mbit(s.Forward.Rate), 1, 5)
		between(t, "up", mbit(s.Reverse.Rate), 0.032, 0.128)
		between(t, "delay", msOf(s.Forward.Delay), 20, 100)
		require.Equal(t, s.Forward.Delay, s.Reverse.Delay)
		fifoBetween(t, s.Forward, s.Forward.Rate, 1, 5)
		between(t, "uplink limit", float64(s.Reverse.Queue.Limit), 10, 50)
		i := slices.IndexFunc(s.Flows, func(f scenario.Flow) bool { return f.Name == telemetry })
		require.GreaterOrEqual(t, i, 0)
		tel := s.Flows[i]
		require.True(t, tel.Reverse)
		require.Equal(t, scenario.KindCBR, tel.Kind)
		between(t, "telemetry size", float64(tel.Size), 50, 200)
		between(t, "telemetry share of uplink", float64(tel.Rate)/float64(s.Reverse.Rate), 0.05-0.002, 0.2+0.002)
	default:
		t.Fatalf("family %s unchecked", fam)
	}
}

// TestGenerateScale: Scale stretches the duration and the times drawn as
// fractions of it.
func TestGenerateScale(t *testing.T) {
	for _, fam := range Families {
		a := draw(t, fam, 9)
		b, err := Generate(fam, 9, Options{Scale: 0.5})
		require.NoError(t, err)
		require.Equal(t, a.Scenario.Duration/2, b.Scenario.Duration, fam)
	}
	a := draw(t, Fillers, 3)
	b, err := Generate(Fillers, 3, Options{Scale: 0.5})
	require.NoError(t, err)
	ta, tb := testFlows(a.Scenario)[0].Start, testFlows(b.Scenario)[0].Start
	fa := a.Scenario.Flows[0].Start
	require.InDelta(t, float64(ta+fa)/2, float64(tb+b.Scenario.Flows[0].Start), float64(time.Millisecond))
}

// TestEveryFamilyRuns: each family's draws run in the simulator under
// the registered controllers (shortened to a tenth).
func TestEveryFamilyRuns(t *testing.T) {
	for _, fam := range Families {
		for seed := range int64(3) {
			d, err := Generate(fam, seed, Options{Scale: 0.1})
			require.NoError(t, err)
			for _, name := range []string{"owd", "bbr"} {
				r, err := sim.Run(d.Scenario, sim.Options{CC: name})
				require.NoError(t, err, "%s seed %d", fam, seed)
				require.Positive(t, math.Max(r.Utilization.Forward, 0), "%s seed %d %s: nothing crossed the path", fam, seed, name)
			}
		}
	}
}
