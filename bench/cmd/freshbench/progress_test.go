package main

import (
	"bytes"
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

	// Disabled (not a terminal): nothing, ever.
	b.Reset()
	q := newProgressBar(&b, false, "run")
	q.Set(0.5)
	q.Done()
	require.Empty(t, b.String())
	require.False(t, isTerminal(&b))
}
