package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/owd"
)

// recordingController is the owd controller, recording the ACK samples it
// is given.
type recordingController struct {
	cc.Controller
	acks []cc.AckSample
}

func (r *recordingController) OnAck(now clock.Mono, a cc.AckSample) {
	r.acks = append(r.acks, a)
	r.Controller.OnAck(now, a)
}

// owdSender is a client session whose peer is the test: it sends data
// packets and the test acknowledges each with the OWD it chooses, on a
// manual clock.
type owdSender struct {
	t   *testing.T
	s   *Session
	ctl *recordingController
	now clock.Mono
	buf []byte
}

func newOWDSender(t *testing.T) *owdSender {
	o := &owdSender{t: t, ctl: &recordingController{}, buf: make([]byte, 0, 2048)}
	cfg := Config{DisablePathMTUDiscovery: true, NewController: func(mss cc.ByteCount) (cc.Controller, error) {
		ctl, err := owd.New(owd.Config{MSS: mss})
		o.ctl.Controller = ctl
		return o.ctl, err
	}}
	var err error
	o.s, err = New(cfg, 3, true, 0)
	require.NoError(t, err)
	_, _, ok := o.s.Poll(0, 0, o.buf) // the Initial
	require.True(t, ok)
	require.True(t, o.s.Handle(0, 0, wire.AppendAccept(wire.AppendHeader(o.buf[:0], wire.Header{Type: wire.TypeAccept, ConnID: 3}), &wire.Accept{})))
	return o
}

// exchange sends one data packet, lets rtt pass and acknowledges it with
// one-way delay owd (flagged as measured against a synced clock if
// synced); it reports whether the controller got the sample.
func (o *owdSender) exchange(rtt, owdSample time.Duration, synced bool) bool {
	o.s.Write(make([]byte, 100))
	d, _, ok := o.s.Poll(o.now, int64(o.now)/1000, o.buf)
	require.True(o.t, ok)
	h, _, err := wire.ParseHeader(d)
	require.NoError(o.t, err)
	require.Equal(o.t, wire.TypeData, h.Type)
	o.now = o.now.Add(rtt)
	var flags uint8
	if synced {
		flags = wire.FlagSynced
	}
	a := wire.Ack{MaxData: 1 << 30, NRanges: 1, NSamples: 1}
	a.Ranges[0] = wire.AckRange{Largest: h.PN, Smallest: h.PN}
	a.Samples[0] = wire.OWDSample{PN: h.PN, OWDMicros: int32(owdSample.Microseconds())}
	b := wire.AppendAck(wire.AppendHeader(o.buf[:0], wire.Header{Type: wire.TypeAck, Flags: flags, ConnID: 3, Timestamp: int64(o.now) / 1000}), &a)
	n := len(o.ctl.acks)
	require.True(o.t, o.s.Handle(o.now, int64(o.now)/1000, b))
	require.False(o.t, o.s.Closed(), "%v", o.s.Err())
	require.Len(o.t, o.ctl.acks, n+1, "the ACK itself reaches the controller")
	last := o.ctl.acks[n]
	require.EqualValues(o.t, h.PN, last.PacketNumber)
	return last.OWDValid
}

func (o *owdSender) discarded() int64 { return o.s.Stats(o.now).OWDDiscarded }

const msD = time.Millisecond

// Each impossible sample is discarded and counted, never given to the
// controller; the possible ones next to it pass. On a 40 ms path the
// uncertainty u is 1 ms + 20 ms.
func TestOWDSampleSanity(t *testing.T) {
	require.Equal(t, 21*msD, recovery.OWDUncertainty(40*msD))

	t.Run("negative beyond u", func(t *testing.T) {
		o := newOWDSender(t)
		require.True(t, o.exchange(40*msD, 20*msD, true))
		require.False(t, o.exchange(40*msD, -22*msD, true))
		require.EqualValues(t, 1, o.discarded())
		require.True(t, o.exchange(40*msD, -15*msD, true), "within u: a clock error")
		require.EqualValues(t, 1, o.discarded())
	})
	t.Run("above the packet's RTT plus u", func(t *testing.T) {
		o := newOWDSender(t)
		require.True(t, o.exchange(40*msD, 20*msD, true))
		require.False(t, o.exchange(40*msD, 62*msD, true))
		require.False(t, o.exchange(60*msD, 82*msD, true), "the packet's own RTT, not the smallest")
		require.True(t, o.exchange(60*msD, 80*msD, true))
		require.EqualValues(t, 2, o.discarded())
	})
	t.Run("below the smallest by more than 2u", func(t *testing.T) {
		o := newOWDSender(t)
		// An asymmetric path: 35 ms of a 40 ms round trip forward.
		require.True(t, o.exchange(40*msD, 35*msD, true))
		require.False(t, o.exchange(40*msD, -8*msD, true), "35 − 2·21 = −7")
		require.True(t, o.exchange(40*msD, -6*msD, true))
		require.EqualValues(t, 1, o.discarded())
	})
	t.Run("a persistent shift becomes the baseline", func(t *testing.T) {
		o := newOWDSender(t)
		require.True(t, o.exchange(40*msD, 35*msD, true))
		// The peer's offset estimate is refitted 45 ms lower: every sample
		// from then on is −10 ms, 3 ms beyond 35 − 2·21. The first few are
		// discarded, then taken as the new baseline.
		for range recovery.OWDShiftSamples - 1 {
			require.False(t, o.exchange(40*msD, -10*msD, true))
		}
		require.True(t, o.exchange(40*msD, -10*msD, true))
		require.True(t, o.exchange(40*msD, -9*msD, true))
		require.EqualValues(t, recovery.OWDShiftSamples-1, o.discarded())
	})
	t.Run("a shorter path moves the floor", func(t *testing.T) {
		o := newOWDSender(t)
		require.True(t, o.exchange(40*msD, 35*msD, true))
		// The round trip drops to 10 ms (u = 6 ms): a 5 ms one-way delay
		// is 30 ms below the floor, which the RTT dropped by as well.
		require.True(t, o.exchange(10*msD, 5*msD, true))
		require.Zero(t, o.discarded())
	})
	t.Run("a drained queue moves the floor", func(t *testing.T) {
		o := newOWDSender(t)
		// A 45 ms path (u = 23.5 ms), whose first trusted samples come
		// with a standing forward queue: 200 ms of a 240 ms round trip.
		require.True(t, o.exchange(45*msD, 3*time.Second, false))
		require.True(t, o.exchange(240*msD, 200*msD, true))
		// The queue drains by 100 ms, seen in this packet's RTT too: 117
		// ms is below 200 − 2u, but not by more than the RTT fell.
		require.True(t, o.exchange(140*msD, 117*msD, true))
		require.Zero(t, o.discarded())
	})
	t.Run("unsynced samples are left alone", func(t *testing.T) {
		o := newOWDSender(t)
		// Raw offsets: the controller ignores them until synced.
		require.True(t, o.exchange(40*msD, -5*time.Second, false))
		require.True(t, o.exchange(40*msD, 5*time.Second, false))
		require.Zero(t, o.discarded())
	})
}
