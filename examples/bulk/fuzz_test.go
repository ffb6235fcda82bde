package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/dscp"
)

// -t and -i: for any input no panic; bare seconds read as iperf3's, within
// the range the parser allows; anything else as a Go duration. `go test`
// replays the corpus in testdata/fuzz.
func FuzzSeconds(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		var s seconds
		err := s.Set(v)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(v))
			return
		}
		if secs, perr := strconv.ParseFloat(v, 64); perr == nil {
			require.LessOrEqual(t, secs, 1e9, "%q", v)
			require.Equal(t, time.Duration(secs*float64(time.Second)), time.Duration(s), "%q", v)
			return
		}
		d, derr := time.ParseDuration(v)
		require.NoError(t, derr, "%q accepted but neither seconds nor a duration", v)
		require.Equal(t, d, time.Duration(s), "%q", v)
	})
}

// -S: for any input no panic; an accepted TOS byte is 0..255 with the ECN
// bits clear, and the DSCP set is its upper six bits.
func FuzzTOS(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		var d dscp.Codepoint
		err := tosFlag{&d}.Set(v)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(v))
			return
		}
		n, perr := strconv.ParseInt(v, 0, 16)
		require.NoError(t, perr, "%q", v)
		require.True(t, n >= 0 && n <= 255 && n&3 == 0, "%q is %d", v, n)
		require.Equal(t, uint8(n>>2), d.Code(), "%q", v)
	})
}

// --rcv-timeout: for any input no panic; an accepted value is positive and
// at most a day, bare digits being milliseconds.
func FuzzMillis(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		var m millis
		err := m.Set(v)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(v))
			return
		}
		d := time.Duration(m)
		require.True(t, d > 0 && d <= 24*time.Hour, "%q is %v", v, d)
		if n, perr := strconv.ParseInt(v, 10, 64); perr == nil {
			require.Equal(t, time.Duration(n)*time.Millisecond, d, "%q", v)
		}
	})
}
