package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A line per case: the verdict, the time to a tenth of a second, the
// bytes and what was measured; a failure's error follows what was
// measured, a known failure says so and why; Markdown cells escape "|".
func TestMatrix(t *testing.T) {
	c := Case{Name: "resumption", Promise: "no certificate | resumed"}
	res := Result{Status: Pass, Measured: "20000 server handshake bytes", Bytes: 42, Took: 1540 * time.Millisecond}

	var b strings.Builder
	m := NewMatrix(&b, false)
	require.False(t, m.Add(c, res))
	res.Status, res.Err, res.Known = Fail, errors.New("it broke"), "a weakness not fixed yet"
	require.True(t, m.Add(Case{Name: "zerortt"}, res))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^case\s+result\s+time\s+bytes  measured$`, lines[0])
	require.Regexp(t, `^resumption\s+pass\s+1.5s\s+42  20000 server handshake bytes$`, lines[1])
	require.Regexp(t, `^zerortt\s+fail \(known\)\s+1.5s\s+42  20000 server handshake bytes; it broke; known: a weakness not fixed yet$`, lines[2])

	b.Reset()
	m = NewMatrix(&b, true)
	res.Known = ""
	require.True(t, m.Add(c, res), "an unknown failure fails too")
	require.Equal(t, "| case | result | time | bytes | promise | measured |\n|---|---|---:|---:|---|---|\n"+
		"| `resumption` | fail | 1.5s | 42 | no certificate \\| resumed | 20000 server handshake bytes; it broke |\n", b.String())

	b.Reset()
	require.False(t, NewMatrix(&b, false).Add(c, Result{Status: Skip, Err: errors.New("not root")}))
	require.Contains(t, b.String(), "skip")
	require.Contains(t, b.String(), "  not root\n", "a skip says why, with nothing measured")
}

// RunMatrix runs every case asked for, in order, and counts the failures.
func TestRunMatrix(t *testing.T) {
	var ran []string
	run := func(_ context.Context, c Case, opts Options) Result {
		require.True(t, opts.Full)
		ran = append(ran, c.Name)
		if c.Name == "b" {
			return Result{Status: Fail}
		}
		return Result{Status: Pass}
	}
	var b strings.Builder
	failed := RunMatrix(context.Background(), &b, false, []Case{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Options{Full: true}, run)
	require.Equal(t, 1, failed)
	require.Equal(t, []string{"a", "b", "c"}, ran)
	require.Len(t, strings.Split(strings.TrimSpace(b.String()), "\n"), 4, "the header and a line per case")
}
