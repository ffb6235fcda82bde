package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// TestDemoSmoke runs the whole demo, shortened to 2 s per phase, through the
// embedded relay and checks that the final table compares both controllers
// and that each moved data and delivered updates.
func TestDemoSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"-duration", "2s"}, &out))
	t.Log("\n" + out.String())

	rows := tableRows(t, out.String())
	for _, name := range []string{"owd", "cubic"} {
		row, ok := rows[name]
		require.True(t, ok, "the table has a row for %s", name)
		goodput, err := strconv.ParseFloat(row[1], 64)
		require.NoError(t, err)
		require.Greater(t, goodput, 0.0, "%s moved data", name)
		require.Less(t, goodput, 2.0, "%s stayed under the 2 Mbit/s bottleneck", name)
		updates, err := strconv.ParseFloat(row[4], 64)
		require.NoError(t, err)
		require.Greater(t, updates, 0.0, "%s delivered updates", name)
		require.Contains(t, out.String(), name+": readings ", "%s: readings offered/sent/superseded", name)
	}
	// The numbers come with their truth and their meaning.
	require.Contains(t, out.String(), "true minimum one-way delay of a full datagram: 20.0 ms propagation + 5.9 ms serialisation = 25.9 ms")
	require.Contains(t, out.String(), "clock est.")
	require.Contains(t, out.String(), "TLS 1.3", "the demo runs secure, as fresh does by default")
	require.Contains(t, out.String(), "superseded, never queued")
}

// -rate takes the spellings every example takes (internal/units).
func TestDemoRate(t *testing.T) {
	for in, want := range map[string]cc.Bandwidth{"2Mbps": 2e6, "10M": 10e6, "500k": 500e3, "10 Mbit/s": 10e6, "1e6": 1e6} {
		o, err := parseFlags([]string{"-rate", in})
		require.NoError(t, err, in)
		require.Equal(t, want, o.rate, in)
	}
}

func TestDemoUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-cc", "nosuch"},
		{"-rate", "fast"},
		{"-rate", "0"},
		{"-rate", "10MB"},
		{"-duration", "0s"},
		{"extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.ErrorIs(t, err, errUsage, "%q", args)
	}
}

// tableRows returns the final table's rows by controller name, each split
// into fields.
func tableRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	_, table, ok := strings.Cut(out, "controller")
	require.True(t, ok, "output has the final table")
	rows := map[string][]string{}
	for line := range strings.SplitSeq(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= 11 {
			rows[f[0]] = f
		}
	}
	return rows
}
