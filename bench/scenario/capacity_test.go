package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// scen is a minimal scenario with the given forward path and changes.
func scen(forward, changes string) string {
	s := `{"name":"x","duration":"10s","forward":` + forward + `,"reverse":{"rate":"1Mbps"},"flows":[{"kind":"bulk"}]`
	if changes != "" {
		s += `,"changes":` + changes
	}
	return s + "}"
}

func TestTracePath(t *testing.T) {
	s, err := Parse([]byte(scen(`{"trace":"bench/traces/TMobile-LTE-short.up","delay":"20ms","trace_start":"random",
		"queue":{"discipline":"fifo","limit":200}}`, `[{"at":"5s","forward":{"rate":"2Mbps"}},
		{"at":"6s","forward":{"trace":"bench/traces/ATT-LTE-driving-2016.up","trace_start":"3s"}}]`)))
	require.NoError(t, err)
	require.NotNil(t, s.Forward.TraceData, "loaded from the repository root (the tests run in bench/scenario)")
	require.Equal(t, 140*time.Second, s.Forward.TraceData.Period())
	require.True(t, s.Forward.TraceStart.Random)
	require.InEpsilon(t, 13.318e6, float64(s.Forward.Capacity()), 1e-3)
	require.NotNil(t, s.Changes[1].Forward.TraceData)
	require.Equal(t, TraceStart{Offset: Duration(3 * time.Second)}, *s.Changes[1].Forward.TraceStart)
	// Validating again (a copy) keeps the loaded trace.
	tr := s.Forward.TraceData
	c := *s
	require.NoError(t, c.Validate())
	require.Same(t, tr, c.Forward.TraceData)
}

func TestTraceRelativeToScenarioFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine.up"), []byte("1\n"), 0o644))
	file := filepath.Join(dir, "s.json")
	require.NoError(t, os.WriteFile(file, []byte(scen(`{"trace":"mine.up"}`, "")), 0o644))
	s, err := Load(file)
	require.NoError(t, err)
	require.Equal(t, 12*cc.MbitPerSecond, s.Forward.Capacity(), "the file's directory first")
	// The same bytes parsed from the working directory do not find it.
	_, err = Parse([]byte(scen(`{"trace":"mine.up"}`, "")))
	require.ErrorIs(t, err, ErrInvalid)
}

func TestCapacityErrors(t *testing.T) {
	walk := `"rate_walk":{"min":"1Mbps","max":"20Mbps","hold_min":"200ms","hold_max":"500ms"}`
	tests := []struct {
		name, forward, changes, want string
	}{
		{"neither", `{"delay":"10ms"}`, "", "forward: no capacity: set one of rate"},
		{"rate and trace", `{"rate":"1Mbps","trace":"bench/traces/TMobile-LTE-short.up"}`, "", "rate and trace are both set"},
		{"trace and walk", `{"trace":"bench/traces/TMobile-LTE-short.up",` + walk + `}`, "", "trace and rate_walk are both set"},
		{"all three", `{"rate":"1Mbps","trace":"a",` + walk + `}`, "", "rate, trace and rate_walk are all set"},
		{"missing file", `{"trace":"bench/traces/nope.up"}`, "", "nope.up"},
		{"trace_start alone", `{"rate":"1Mbps","trace_start":"random"}`, "", "trace_start is set without a trace"},
		{"bad trace_start", `{"trace":"bench/traces/TMobile-LTE-short.up","trace_start":"soon"}`, "", `want "random" or a duration`},
		{"cake on a trace", `{"trace":"bench/traces/TMobile-LTE-short.up","queue":{"discipline":"cake"}}`, "", "cake needs a rate"},
		{"walk min", `{"rate_walk":{"max":"1Mbps","hold_min":"1s","hold_max":"1s"}}`, "", "rate_walk: min must be"},
		{"walk max", `{"rate_walk":{"min":"2Mbps","max":"1Mbps","hold_min":"1s","hold_max":"1s"}}`, "", "max 1Mbps is below min 2Mbps"},
		{"walk hold", `{"rate_walk":{"min":"1Mbps","max":"2Mbps"}}`, "", "hold_min 0s is below 1ms"},
		{"walk hold order", `{"rate_walk":{"min":"1Mbps","max":"2Mbps","hold_min":"2s","hold_max":"1s"}}`, "", "hold_max 1s is below hold_min 2s"},
		{"change: two capacities", `{"rate":"1Mbps"}`, `[{"at":"1s","forward":{"rate":"2Mbps","trace":"bench/traces/TMobile-LTE-short.up"}}]`, "change 0 at 1s: forward: rate and trace are both set"},
		{"change: missing trace", `{"rate":"1Mbps"}`, `[{"at":"1s","reverse":{"trace":"x.down"}}]`, "change 0 at 1s: reverse: trace"},
		{"change: trace_start alone", `{"rate":"1Mbps"}`, `[{"at":"1s","forward":{"trace_start":"1s"}}]`, "trace_start is set without a trace"},
		{"change: cake to trace", `{"rate":"1Mbps","queue":{"discipline":"cake"}}`, `[{"at":"1s","forward":{"trace":"bench/traces/TMobile-LTE-short.up"}}]`, "cake needs a rate"},
		{"change: zero rate", `{"rate":"1Mbps"}`, `[{"at":"1s","forward":{"rate":"0Mbps"}}]`, "rate must be positive"},
		{"change: bad walk", `{"rate":"1Mbps"}`, `[{"at":"1s","forward":{"rate_walk":{"min":"1Mbps","max":"2Mbps"}}}]`, "hold_min"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(scen(tc.forward, tc.changes)))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestMissingTraceSaysWhereItLooked(t *testing.T) {
	_, err := Parse([]byte(scen(`{"trace":"bench/traces/nope.up"}`, "")))
	require.Error(t, err)
	wd, _ := os.Getwd()
	msg := err.Error()
	require.Contains(t, msg, filepath.Join(wd, "bench/traces/nope.up"), "the working directory")
	root := filepath.Dir(filepath.Dir(wd)) // bench/scenario → the repository
	require.Contains(t, msg, filepath.Join(root, "bench/traces/nope.up"), "the repository root")
	require.Contains(t, msg, "relative paths are read from the scenario file's directory, then from the repository root")
	bad := filepath.Join(t.TempDir(), "bad.up")
	require.NoError(t, os.WriteFile(bad, []byte("1\n2\nx\n"), 0o644))
	_, err = Parse([]byte(scen(`{"trace":"`+bad+`"}`, "")))
	require.ErrorContains(t, err, "line 3")
}

func TestRateWalkPath(t *testing.T) {
	s, err := Parse([]byte(scen(`{"rate_walk":{"min":"1Mbps","max":"20Mbps","hold_min":"200ms","hold_max":"500ms"},"delay":"20ms"}`, "")))
	require.NoError(t, err)
	require.Equal(t, Rate(20e6), s.Forward.RateWalk.Max)
	require.InEpsilon(t, 19e6/2.995732, float64(s.Forward.Capacity()), 1e-5, "(max−min)/ln(max/min)")
	require.Equal(t, 1*cc.MbitPerSecond, s.Reverse.Capacity())
}

func TestTraceStartJSON(t *testing.T) {
	var ts TraceStart
	require.NoError(t, ts.UnmarshalJSON([]byte(`"random"`)))
	require.Equal(t, TraceStart{Random: true}, ts)
	require.NoError(t, ts.UnmarshalJSON([]byte(`"1m30s"`)))
	require.Equal(t, TraceStart{Offset: Duration(90 * time.Second)}, ts)
	b, err := TraceStart{Random: true}.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `"random"`, string(b))
	require.Error(t, ts.UnmarshalJSON([]byte(`5`)))
	require.Error(t, ts.UnmarshalJSON([]byte(`"-1s"`)))
	require.True(t, TraceStart{}.IsZero())
	plain, err := json.Marshal(Path{Rate: 1e6})
	require.NoError(t, err)
	require.NotContains(t, string(plain), "trace_start", "the default is left out")
	require.NotContains(t, string(plain), "trace_data", "the loaded trace is not in the JSON")
	random, err := json.Marshal(Path{Trace: "a.up", TraceStart: TraceStart{Random: true}})
	require.NoError(t, err)
	require.Contains(t, string(random), `"trace":"a.up","trace_start":"random"`)
}

// TestTraceScenariosFollowTheirDesign: every trace in bench/traces has a
// fifo and a codel scenario whose forward path replays it and whose
// reverse path replays its pair, 20 ms each way, a random start, a
// 200-packet buffer on both sides and one bulk flow for 60 s.
func TestTraceScenariosFollowTheirDesign(t *testing.T) {
	traceFiles, err := filepath.Glob(filepath.Join("..", "traces", "*.*[pn]"))
	require.NoError(t, err)
	require.Len(t, traceFiles, 8)
	for _, tf := range traceFiles {
		base := filepath.Base(tf)
		pair := strings.TrimSuffix(base, ".up") + ".down"
		if strings.HasSuffix(base, ".down") {
			pair = strings.TrimSuffix(base, ".down") + ".up"
		}
		for _, disc := range []string{"fifo", "codel"} {
			name := "trace-" + strings.ToLower(strings.ReplaceAll(base, ".", "-")) + "-" + disc
			s, err := Load(filepath.Join("..", "scenarios", name+".json"))
			require.NoError(t, err, name)
			require.Equal(t, name, s.Name)
			require.Equal(t, 60*time.Second, s.Duration.D())
			for _, p := range []struct {
				path  Path
				trace string
			}{{s.Forward, base}, {s.Reverse, pair}} {
				require.Equal(t, "bench/traces/"+p.trace, p.path.Trace, name)
				require.True(t, p.path.TraceStart.Random, name)
				require.Equal(t, 20*time.Millisecond, p.path.Delay.D(), name)
				require.Equal(t, disc, p.path.Queue.Discipline, name)
				require.Equal(t, 200, p.path.Queue.Limit, name)
			}
			require.Len(t, s.Flows, 1)
			require.Equal(t, KindBulk, s.Flows[0].Kind)
		}
	}
}
