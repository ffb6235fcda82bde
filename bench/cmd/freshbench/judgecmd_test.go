package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/judge"
)

func TestJudgeArgs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		errOut string
	}{
		{[]string{"judge", "-h"}, exitOK, ""},
		{[]string{"judge", "-cc", "owd,copa-missing"}, exitUsage, `unknown controller "copa-missing" (registered: `},
		{[]string{"judge", "-families", "alone,bufferbloat"}, exitUsage, `unknown family "bufferbloat"`},
		{[]string{"judge", "-seeds", "1001-1010", "-draws", "11"}, exitUsage, "has only 10 seeds"},
		{[]string{"judge", "-seeds", "5-1"}, exitUsage, "runs backwards"},
		{[]string{"judge", "-scale", "0"}, exitUsage, "--scale must be positive"},
		{[]string{"judge", "-parallel", "0"}, exitUsage, "--parallel must be at least 1"},
		{[]string{"judge", "-acp-oracle", "-1"}, exitUsage, "--acp-oracle -1: want 0"},
		{[]string{"judge", "scenario.json"}, exitUsage, "unexpected argument"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &out, &errOut), "stderr: %s", errOut.String())
			require.Contains(t, errOut.String(), tc.errOut)
		})
	}
	jc, err := parseJudgeArgs([]string{"-seeds", "1001-1100", "-draws", "5", "-cc", "owd, bbr"})
	require.NoError(t, err)
	require.Equal(t, []int64{1001, 1002, 1003, 1004, 1005}, jc.cfg.Seeds)
	require.Equal(t, []string{"owd", "bbr"}, jc.cfg.CCs)
	require.Equal(t, judge.Families, jc.cfg.Families)
}

// TestJudgeSmoke runs freshbench judge end to end: one short draw of every
// family under two controllers, tables, Markdown and JSON.
func TestJudgeSmoke(t *testing.T) {
	start := time.Now()
	out := filepath.Join(t.TempDir(), "judge.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"judge", "-seeds", "1-2", "-scale", "0.15", "-cc", "owd,bbr", "-json", out}, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	for _, f := range judge.Families {
		require.Contains(t, stdout.String(), "family "+f+": 2 draws × 2 controllers")
	}
	require.Contains(t, stdout.String(), "seconds in competitive mode = 0")
	require.Contains(t, stdout.String(), "cost: ")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep judge.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Families, len(judge.Families))
	for _, f := range rep.Families {
		require.Len(t, f.Results, 2)
		require.NotEmpty(t, f.Criteria)
		require.NotEmpty(t, f.Leaderboard)
	}

	stdout.Reset()
	code = run([]string{"judge", "-families", "loss,acp", "-seeds", "7", "-scale", "0.15", "-cc", "owd,bbr", "-acp-oracle", "3", "-md"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	require.Contains(t, stdout.String(), "Seeds 7, scale 0.15;")
	require.Contains(t, stdout.String(), "#### loss (1 draws)")
	require.Contains(t, stdout.String(), "| goodput ÷ bbr's ≥ 0.8 | ≥ 90% of draws |")
	require.Contains(t, stdout.String(), "| ACP's mean age ÷ the constrained oracle's ≤ 1.15 | every draw |")
	t.Logf("smoke test took %v", time.Since(start))
}
