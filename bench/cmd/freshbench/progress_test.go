package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRenderBar(t *testing.T) {
	require.Equal(t, "x [>         ]   0%", renderBar("x", 0, 10))
	require.Equal(t, "x [====>     ]  42%", renderBar("x", 0.42, 10))
	require.Equal(t, "x [==========] 100%", renderBar("x", 1.5, 10))
	require.Equal(t, "x [>         ]   0%", renderBar("x", -1, 10))
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1000, 0)
	p := newProgressBar(&b, true, "run")
	p.lines = false // as on a terminal
	p.now = func() time.Time { return now }
	p.start = now

	p.Set(0.1)
	require.Empty(t, b.String(), "short runs draw nothing")
	now = now.Add(progressDelay)
	p.Set(0.5)
	require.Contains(t, b.String(), "\rrun [")
	require.Contains(t, b.String(), " 50%")
	n := b.Len()
	now = now.Add(progressEvery / 2)
	p.Set(0.6)
	require.Equal(t, n, b.Len(), "redraws are rate-limited")
	now = now.Add(progressEvery)
	p.Set(0.7)
	require.Contains(t, b.String(), " 70%")
	p.Done()
	require.True(t, bytes.HasSuffix(b.Bytes(), []byte("\r\x1b[K")))

	// Not a terminal (a log file, CI): a plain line every
	// progressLineEvery, no carriage returns, nothing erased.
	b.Reset()
	l := newProgressBar(&b, true, "run")
	require.True(t, l.lines, "a buffer is not a terminal")
	l.now = func() time.Time { return now }
	l.start = now
	now = now.Add(progressDelay)
	l.Set(0.2)
	require.Equal(t, "run [======>                       ]  20%\n", b.String())
	now = now.Add(progressLineEvery / 2)
	l.Set(0.3)
	require.Equal(t, 1, strings.Count(b.String(), "\n"), "a line every progressLineEvery")
	now = now.Add(progressLineEvery)
	l.Set(0.4)
	l.Done()
	require.Equal(t, 2, strings.Count(b.String(), "\n"))
	require.NotContains(t, b.String(), "\r")

	// Disabled: nothing, ever.
	b.Reset()
	q := newProgressBar(&b, false, "run")
	q.Set(0.5)
	q.Done()
	require.Empty(t, b.String())
	require.False(t, isTerminal(&b))
}
