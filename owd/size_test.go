package owd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// A 72-byte packet crosses a 1.4 Mbit/s bottleneck 5.6 ms faster than a
// full one: its delay must not become OWDmin, or every full packet reads
// a standing queue of one packet time.
func TestSmallPacketGivesNoDelaySample(t *testing.T) {
	const full, small = 56 * time.Millisecond, 50400 * time.Microsecond
	for _, filter := range []bool{true, false} {
		cfg := noProbe()
		cfg.Tuning.DisableSizeFilter = !filter
		h := newHarness(mustNew(New(cfg)))
		h.ackN(20, full, 2*full)
		h.ackSample(cc.AckSample{Bytes: 72, OWD: small, OWDValid: true, ClockSynced: true, RTT: 2 * small})
		if filter {
			require.Equal(t, full, h.c.owdA.Min(), "OWDmin from full-size packets only")
			require.Equal(t, full, h.c.rttA.Min(), "RTT/2 likewise")
			require.Equal(t, full, h.c.owdA.Current())
		} else {
			require.Equal(t, small, h.c.owdA.Min())
		}
	}
}

// A flow whose packets are all small (status updates) compares small
// with small once they fill the size history.
func TestSmallPacketsAloneAreSamples(t *testing.T) {
	h := newHarness(mustNew(New(noProbe())))
	h.ackN(4, 56*time.Millisecond, 112*time.Millisecond) // the handshake's full-size packets
	for range sizeHistory {
		h.ackSample(cc.AckSample{Bytes: 72, OWD: 51 * time.Millisecond, OWDValid: true, ClockSynced: true, RTT: 102 * time.Millisecond})
	}
	require.Equal(t, 51*time.Millisecond, h.c.owdA.Min())
}
