package traces

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

func parse(t *testing.T, s string) *Trace {
	t.Helper()
	tr, err := Parse(strings.NewReader(s), "test")
	require.NoError(t, err)
	return tr
}

// runs lists the first n runs a cursor from the start returns.
func runs(tr *Trace, n int) [][2]uint64 {
	c, _ := tr.Start(0)
	var out [][2]uint64
	for range n {
		ms, k := c.Next()
		out = append(out, [2]uint64{ms, uint64(k)})
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		period time.Duration
		opps   int64
		runs   [][2]uint64 // the first runs, across the wrap
	}{
		{"one line: 12 Mbit/s", "1\n", time.Millisecond, 1, [][2]uint64{{1, 1}, {2, 1}, {3, 1}}},
		{"no final newline", "1", time.Millisecond, 1, [][2]uint64{{1, 1}, {2, 1}}},
		{"repeats are several opportunities", "2\n2\n2\n5\n", 5 * time.Millisecond, 4, [][2]uint64{{2, 3}, {5, 1}, {7, 3}, {10, 1}}},
		{"a run at 0 recurs with the last line", "0\n0\n4\n", 4 * time.Millisecond, 3, [][2]uint64{{0, 2}, {4, 1}, {4, 2}, {8, 1}}},
		{"spaces and CRLF", " 3\r\n\t7 \r\n", 7 * time.Millisecond, 2, [][2]uint64{{3, 1}, {7, 1}, {10, 1}}},
		{"long gaps encode", "1\n100000\n", 100 * time.Second, 2, [][2]uint64{{1, 1}, {100000, 1}, {100001, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := parse(t, tc.in)
			require.Equal(t, tc.period, tr.Period())
			require.Equal(t, tc.opps, tr.Opportunities())
			require.Equal(t, tc.runs, runs(tr, len(tc.runs)))
		})
	}
}

func TestParseOneLineIs12Mbps(t *testing.T) {
	require.Equal(t, 12*cc.MbitPerSecond, parse(t, "1\n").MeanRate())
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty file", "", "no delivery opportunities (the file is empty)"},
		{"empty line", "1\n\n3\n", "line 2: empty line"},
		{"not a number", "1\n2\nabc\n", `line 3: "abc" is not a time in whole milliseconds`},
		{"negative", "-1\n", `line 1: "-1" is not`},
		{"fraction", "1.5\n", `line 1: "1.5" is not`},
		{"decreasing", "1\n5\n4\n", "line 3: 4 ms is before the previous line's 5 ms"},
		{"zero length", "0\n0\n", "lasts 0 ms"},
		{"too large", "99999999999\n", "line 1: 99999999999 ms is beyond"},
		{"too long a line", "1\n" + strings.Repeat("1", 1000) + "\n", "line 2: too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), "x.up")
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, "x.up")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestStartOffset(t *testing.T) {
	tr := parse(t, "2\n2\n5\n9\n10\n") // period 10 ms
	tests := []struct {
		offset time.Duration
		wantMs uint64 // first run's time
		wantO  int64  // offset within the pass, ns
	}{
		{0, 2, 0},
		{2 * time.Millisecond, 2, int64(2 * time.Millisecond)},
		{2*time.Millisecond + 1, 5, int64(2*time.Millisecond + 1)},
		{9500 * time.Microsecond, 10, int64(9500 * time.Microsecond)},
		{10 * time.Millisecond, 2, 0},                           // a whole period is no offset
		{23 * time.Millisecond, 5, int64(3 * time.Millisecond)}, // modulo the period
	}
	for _, tc := range tests {
		c, o := tr.Start(tc.offset)
		ms, _ := c.Next()
		require.Equal(t, tc.wantMs, ms, "offset %v", tc.offset)
		require.Equal(t, tc.wantO, o, "offset %v", tc.offset)
	}
}

func TestSkipPeriods(t *testing.T) {
	tr := parse(t, "1\n1\n4\n")
	c, _ := tr.Start(0)
	require.Equal(t, int64(6), c.SkipPeriods(2))
	ms, n := c.Next()
	require.Equal(t, uint64(9), ms, "two periods of 4 ms on")
	require.Equal(t, int64(2), n)
}

func TestLoadCachesByAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.up")
	require.NoError(t, os.WriteFile(p, []byte("1\n2\n"), 0o644))
	a, err := Load(p)
	require.NoError(t, err)
	t.Chdir(dir)
	b, err := Load("a.up")
	require.NoError(t, err)
	require.Same(t, a, b, "the same file, by another name")
	require.Equal(t, p, a.Name())

	_, err = Load(filepath.Join(dir, "missing.up"))
	require.ErrorIs(t, err, os.ErrNotExist)
	bad := filepath.Join(dir, "bad.up")
	require.NoError(t, os.WriteFile(bad, []byte("x\n"), 0o644))
	_, err = Load(bad)
	require.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, os.WriteFile(bad, []byte("3\n"), 0o644))
	fixed, err := Load(bad)
	require.NoError(t, err, "a failure is not cached")
	require.Equal(t, 3*time.Millisecond, fixed.Period())
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	scen := filepath.Join(root, "bench", "scenarios")
	require.NoError(t, os.MkdirAll(scen, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bench", "traces"), 0o755))
	inRoot := filepath.Join(root, "bench", "traces", "x.up")
	require.NoError(t, os.WriteFile(inRoot, []byte("1\n"), 0o644))

	got, err := Resolve("bench/traces/x.up", scen, root)
	require.NoError(t, err)
	require.Equal(t, inRoot, got, "not beside the scenario: from the root")

	local := filepath.Join(scen, "bench", "traces", "x.up")
	require.NoError(t, os.MkdirAll(filepath.Dir(local), 0o755))
	require.NoError(t, os.WriteFile(local, []byte("1\n"), 0o644))
	got, err = Resolve("bench/traces/x.up", scen, root)
	require.NoError(t, err)
	require.Equal(t, local, got, "the scenario's directory first")

	got, err = Resolve(inRoot, "/nowhere")
	require.NoError(t, err)
	require.Equal(t, inRoot, got, "absolute: as it is")

	_, err = Resolve("bench/traces/y.up", scen, "", root, root)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, filepath.Join(scen, "bench/traces/y.up")+" and "+filepath.Join(root, "bench/traces/y.up"))
	require.NotContains(t, err.Error(), filepath.Join(root, "bench/traces/y.up")+" and", "repeats are tried once")
	_, err = Resolve("", root)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Resolve("y.up")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Resolve(filepath.Join(root, "nope.up"))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	// A worktree's .git is a file.
	require.NoError(t, os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: elsewhere\n"), 0o644))
	require.Equal(t, root, RepoRoot(deep))
	require.Equal(t, root, RepoRoot(root))
	// This package's own directory is inside the repository.
	here := RepoRoot(".")
	require.NotEmpty(t, here)
	_, err := os.Stat(filepath.Join(here, "bench", "traces", "trace.go"))
	require.NoError(t, err)
}

// TestCommittedTracesMatchREADME parses every committed trace and checks
// the README's table against it: length, mean rate, p10/p90 of the
// per-second rate and the seconds without a delivery.
func TestCommittedTracesMatchREADME(t *testing.T) {
	rows := readmeRows(t)
	require.Len(t, rows, 8)
	for _, row := range rows {
		t.Run(row.file, func(t *testing.T) {
			tr, err := Load(row.file)
			require.NoError(t, err)
			got := Summarize(tr)
			require.Equal(t, row.lengthS, int(math.Round(tr.Period().Seconds())), "length")
			require.InDelta(t, row.meanMbps, got.MeanMbps, 0.006, "mean")
			require.InDelta(t, row.p10, got.P10Mbps, 0.006+row.p10*0.005, "p10")
			require.InDelta(t, row.p90, got.P90Mbps, 0.006+row.p90*0.005, "p90")
			require.Equal(t, row.idle, got.IdleSeconds, "seconds without a delivery")
		})
	}
}

type readmeRow struct {
	file               string
	lengthS            int
	meanMbps, p10, p90 float64
	idle               int
	lines              int64
}

// readmeRows reads the table of README.md: | file | length | lines | mean | p10 / p90 | idle |.
func readmeRows(t *testing.T) []readmeRow {
	f, err := os.Open("README.md")
	require.NoError(t, err)
	defer f.Close()
	re := regexp.MustCompile(`^\| ` + "`" + `([^` + "`" + `]+)` + "`" + ` +\| +(\d+) s +\| +(\d+) +\| +([\d.]+) Mbit/s +\| +([\d.]+) / ([\d.]+) Mbit/s +\| +(\d+) +\|$`)
	var rows []readmeRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err)
			return v
		}
		rows = append(rows, readmeRow{
			file: m[1], lengthS: int(num(m[2])), lines: int64(num(m[3])),
			meanMbps: num(m[4]), p10: num(m[5]), p90: num(m[6]), idle: int(num(m[7])),
		})
	}
	require.NoError(t, sc.Err())
	for _, r := range rows {
		tr, err := Load(r.file)
		require.NoError(t, err)
		require.Equal(t, r.lines, tr.Opportunities(), "%s: lines", r.file)
	}
	return rows
}

func TestSummarize(t *testing.T) {
	// 2 s: 1000 opportunities in the first second (12 Mbit/s), none in
	// the second but for the last line at 2000 ms.
	var b strings.Builder
	for ms := 1; ms <= 1000; ms++ {
		b.WriteString(strconv.Itoa(ms) + "\n")
	}
	b.WriteString("2000\n")
	s := Summarize(parse(t, b.String()))
	require.Equal(t, 2*time.Second, s.Length)
	require.InDelta(t, 6.006, s.MeanMbps, 1e-9)
	require.Equal(t, 0, s.IdleSeconds, "the second second holds the opportunity at 1000 ms")
	require.Equal(t, 1000*12e-3, s.P90Mbps, "the first second: 999 opportunities and the last line's, which recurs at 0")
	require.Equal(t, 12e-3, s.P10Mbps)
	require.True(t, slices.IsSorted([]float64{s.P10Mbps, s.P90Mbps}))
}
