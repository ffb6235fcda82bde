package judge

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/bench/sim"
)

func TestCheckCCs(t *testing.T) {
	require.NoError(t, CheckCCs([]string{"owd", "rttdelay", "bbr", "cubic"}))
	err := CheckCCs([]string{"owd", "nosuchcc"})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, `unknown controller "nosuchcc"`)
	require.ErrorContains(t, err, "registered: ")
	require.ErrorContains(t, err, "owd")
	require.ErrorContains(t, CheckCCs([]string{"owd", "owd"}), "twice")
	require.ErrorContains(t, CheckCCs(nil), "no controller")
	require.ErrorContains(t, CheckFamilies([]string{"alone", "bufferbloat"}), `unknown family "bufferbloat"`)
}

// TestJudgeRunsTheSameDrawUnderEveryController: every controller gets the
// same scenario, only the controller option differs; an acp draw also
// runs with lazy sources in place of its ACP ones.
func TestJudgeRunsTheSameDrawUnderEveryController(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]map[string]string{} // scenario JSON by run label, by scenario name
	fake := func(s *scenario.Scenario, o sim.Options) (*report.Run, error) {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		label := o.CC
		for _, f := range s.Flows {
			if f.Kind == scenario.KindLazy {
				label += "+lazy"
				break
			}
			if f.Kind == scenario.KindFixed {
				label += fmt.Sprintf("+fixed@%g", f.UpdateRate)
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[s.Name] == nil {
			seen[s.Name] = map[string]string{}
		}
		seen[s.Name][label] = string(b)
		r := &report.Run{Scenario: s.Name, CC: o.CC}
		for _, f := range s.Flows {
			r.Flows = append(r.Flows, report.Flow{Name: f.Name, Kind: f.Kind, GoodputBps: 1e6, OWDms: report.Stats{P95: 10}})
		}
		return r, nil
	}
	ccs := []string{"owd", "bbr", "cubic"}
	rep, err := Judge(Config{Families: []string{Alone, ACP}, Seeds: []int64{1, 2}, CCs: ccs, Run: fake, Parallel: 3, OracleRates: 2})
	require.NoError(t, err)
	require.Len(t, rep.Families, 2)
	require.Len(t, seen, 4, "two draws per family")
	for name, byLabel := range seen {
		acp := strings.Contains(name, "acp")
		if !acp {
			require.Len(t, byLabel, len(ccs), name)
		} else {
			require.Len(t, byLabel, 4*len(ccs), "%s: as drawn, lazy, two fixed rates", name)
		}
		for _, cc := range ccs {
			require.Equal(t, byLabel[ccs[0]], byLabel[cc], "%s: the same draw for %s", name, cc)
			if acp {
				require.Equal(t, byLabel[ccs[0]+"+lazy"], byLabel[cc+"+lazy"])
				require.NotEqual(t, byLabel[cc], byLabel[cc+"+lazy"])
				for label, js := range byLabel {
					if rest, ok := strings.CutPrefix(label, ccs[0]+"+fixed@"); ok {
						require.Equal(t, js, byLabel[cc+"+fixed@"+rest], "the same grid for every controller")
					}
				}
			}
		}
	}
	for _, f := range rep.Families {
		for _, dr := range f.Results {
			require.Len(t, dr.Outcomes, len(ccs))
			for i, o := range dr.Outcomes {
				require.Equal(t, ccs[i], o.CC)
				require.Equal(t, 100.0, o.Power, "1 Mbit/s over 10 ms")
			}
		}
	}
}

// TestJudgeIsDeterministic: the report does not depend on how many runs
// go at once.
func TestJudgeIsDeterministic(t *testing.T) {
	cfg := Config{Families: []string{Fillers, NarrowACK}, Seeds: []int64{3}, CCs: []string{"owd", "bbr"}, Scale: 0.1}
	cfg.Parallel = 1
	a, err := Judge(cfg)
	require.NoError(t, err)
	cfg.Parallel = 4
	b, err := Judge(cfg)
	require.NoError(t, err)
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	require.Equal(t, string(ja), string(jb))
}

func TestJudgeRefusesBadConfig(t *testing.T) {
	_, err := Judge(Config{Seeds: []int64{1}, CCs: []string{"copa-not-here"}})
	require.ErrorContains(t, err, "registered")
	_, err = Judge(Config{CCs: []string{"owd"}})
	require.ErrorContains(t, err, "no seed")
}

// TestOracleRuns: with OracleRates, the acp draws' fixed-rate runs go
// through the simulator and yield a constrained oracle the age_vs_oracle
// criterion reads.
func TestOracleRuns(t *testing.T) {
	rep, err := Judge(Config{Families: []string{ACP}, Seeds: []int64{1, 2, 3}, CCs: []string{"owd"}, Scale: 0.2, OracleRates: 4})
	require.NoError(t, err)
	found := false
	for _, dr := range rep.Families[0].Results {
		a := dr.Outcomes[0].ACP
		require.NotNil(t, a)
		if a.OracleAgeMs > 0 {
			found = true
			require.Contains(t, OracleGrid(dr.Draw.Scenario, 4), a.OracleRateHz)
		}
	}
	require.True(t, found, "no draw found an oracle within the budget")
	for _, row := range rep.Families[0].Criteria {
		if row.Name == "age_vs_oracle" {
			require.Positive(t, row.PerCC[0].N)
		}
	}
}
