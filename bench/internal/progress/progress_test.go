package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRenderBar(t *testing.T) {
	require.Equal(t, "x [>         ]   0%", render("x", 0, 10))
	require.Equal(t, "x [====>     ]  42%", render("x", 0.42, 10))
	require.Equal(t, "x [==========] 100%", render("x", 1.5, 10))
	require.Equal(t, "x [>         ]   0%", render("x", -1, 10))
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1000, 0)
	p := New(&b, true, "run")
	p.lines = false // as on a terminal
	p.now = func() time.Time { return now }
	p.start = now

	p.Set(0.1)
	require.Empty(t, b.String(), "short runs draw nothing")
	now = now.Add(delay)
	p.Set(0.5)
	require.Contains(t, b.String(), "\rrun [")
	require.Contains(t, b.String(), " 50%")
	n := b.Len()
	now = now.Add(every / 2)
	p.Set(0.6)
	require.Equal(t, n, b.Len(), "redraws are rate-limited")
	now = now.Add(every)
	p.Set(0.7)
	require.Contains(t, b.String(), " 70%")
	p.Done()
	require.True(t, bytes.HasSuffix(b.Bytes(), []byte("\r\x1b[K")))

	// Not a terminal (a log file, CI): a plain line every
	// lineEvery, no carriage returns, nothing erased.
	b.Reset()
	l := New(&b, true, "run")
	require.True(t, l.lines, "a buffer is not a terminal")
	l.now = func() time.Time { return now }
	l.start = now
	now = now.Add(delay)
	l.Set(0.2)
	require.Equal(t, "run [======>                       ]  20%\n", b.String())
	now = now.Add(lineEvery / 2)
	l.Set(0.3)
	require.Equal(t, 1, strings.Count(b.String(), "\n"), "a line every lineEvery")
	now = now.Add(lineEvery)
	l.Set(0.4)
	l.Done()
	require.Equal(t, 2, strings.Count(b.String(), "\n"))
	require.NotContains(t, b.String(), "\r")

	// Disabled: nothing, ever.
	b.Reset()
	q := New(&b, false, "run")
	q.Set(0.5)
	q.Done()
	require.Empty(t, b.String())
	require.False(t, isTerminal(&b))
}
