package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func at(ms int) clock.Mono { return clock.Mono(0).Add(time.Duration(ms) * time.Millisecond) }

func TestPacketThreshold(t *testing.T) {
	tr := New()
	for i := range 5 {
		tr.OnSent(at(i), 1000, 0, int64(i), 1)
	}
	var lost []cc.PacketNumber
	rec := func(_ clock.Mono, pn cc.PacketNumber, _ *Packet) { lost = append(lost, pn) }
	_, ok := tr.Ack(3)
	require.True(t, ok)
	tr.DetectLost(at(10), rec)
	require.Equal(t, []cc.PacketNumber{0}, lost, "3 later packets acknowledged: only pn 0")
	require.Equal(t, cc.ByteCount(3000), tr.InFlight(0))
	_, ok = tr.Ack(3)
	require.False(t, ok, "no double ack")
}

func TestTimeThreshold(t *testing.T) {
	tr := New()
	tr.RTT().Update(100 * time.Millisecond)
	tr.OnSent(at(0), 1000, 0, 0, 1)
	tr.OnSent(at(1), 1000, 0, 1, 1)
	tr.Ack(1)
	var lost []cc.PacketNumber
	tr.DetectLost(at(50), func(_ clock.Mono, pn cc.PacketNumber, _ *Packet) { lost = append(lost, pn) })
	require.Empty(t, lost)
	require.Equal(t, at(0).Add(112500*time.Microsecond), tr.LossTime(), "9/8 · 100 ms after sending")
	tr.DetectLost(at(113), func(_ clock.Mono, pn cc.PacketNumber, _ *Packet) { lost = append(lost, pn) })
	require.Equal(t, []cc.PacketNumber{0}, lost)
}

func TestRTOBackoffAndKinds(t *testing.T) {
	tr := New()
	require.Equal(t, InitialRTO, tr.RTO())
	tr.OnSent(at(0), 1000, 0, 0, 1)
	tr.OnSent(at(0), 200, 1, 0, 0)
	require.Equal(t, cc.ByteCount(1000), tr.InFlight(0))
	require.Equal(t, cc.ByteCount(200), tr.InFlight(1))
	require.Equal(t, at(1000), tr.RTOAt())
	n := 0
	tr.OnRTO(at(60), func(clock.Mono, cc.PacketNumber, *Packet) { n++ })
	require.Equal(t, 2, n)
	require.Zero(t, tr.TotalInFlight())
	require.Equal(t, 2*InitialRTO, tr.RTO(), "backoff doubles")
	tr.RTT().Update(10 * time.Millisecond)
	tr.ArmRTO(at(2000))
	require.Equal(t, MinRTO, tr.RTO(), "reset and floored at 200 ms")
}

// A steady long path: RTTVAR decays to ~0, yet the RTO must outlast the
// peer's delayed ACK of a lone packet (RFC 9002 §6.2.1).
func TestRTOIncludesAckDelay(t *testing.T) {
	tr := New()
	for range 50 {
		tr.RTT().Update(600 * time.Millisecond)
	}
	require.Less(t, tr.RTT().Var(), time.Millisecond)
	require.GreaterOrEqual(t, tr.RTO(), 600*time.Millisecond+DefaultMaxAckDelay+granularity)
	require.Equal(t, 600*time.Millisecond+time.Millisecond, NewWithAckDelay(0).rtoAfter(600*time.Millisecond))
}

// rtoAfter is the RTO of a fresh tracker after one steady sample train.
func (t *Tracker) rtoAfter(rtt time.Duration) time.Duration {
	for range 200 {
		t.RTT().Update(rtt)
	}
	return t.RTO()
}

// The backoff stops at MaxBackoffRTO, or at the un-backed-off RTO when
// that is longer: a silent path is probed at least that often.
func TestRTOBackoffBounded(t *testing.T) {
	tr := New()
	tr.rtt.Update(50 * time.Millisecond)
	for range 10 {
		tr.OnRTO(0, func(clock.Mono, cc.PacketNumber, *Packet) {})
	}
	require.Equal(t, MaxBackoffRTO, tr.RTO())
	slow := New()
	slow.rtt.Update(3 * time.Second) // a path slower than the bound
	base := slow.RTO()
	for range 10 {
		slow.OnRTO(0, func(clock.Mono, cc.PacketNumber, *Packet) {})
	}
	require.Equal(t, base, slow.RTO(), "never below the un-backed-off RTO")
}
