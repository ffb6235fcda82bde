package session

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// updateSink is a server session fed hand-made Update packets.
type updateSink struct {
	t   *testing.T
	s   *Session
	buf []byte
}

func newUpdateSink(t *testing.T, cfg Config) *updateSink {
	s, err := New(cfg, 9, false, 0)
	require.NoError(t, err)
	return &updateSink{t: t, s: s, buf: make([]byte, 0, 256)}
}

// recv delivers an update numbered pn, stamped sentUS by the sender's
// clock and generated at genUS, arriving at now with our wall clock wallUS.
func (u *updateSink) recv(now clock.Mono, wallUS int64, pn, sentUS, genUS int64) {
	b := wire.AppendHeader(u.buf[:0], wire.Header{Type: wire.TypeUpdate, ConnID: 9, PN: pn, Timestamp: sentUS})
	b = wire.AppendUpdate(b, &wire.Update{Generated: genUS, Payload: []byte{byte(pn)}})
	require.True(u.t, u.s.Handle(now, wallUS, b))
}

// take returns the payload of the update delivered since the last take
// (-1: none) and its age.
func (u *updateSink) take() (int, time.Duration) {
	up, ok := u.s.TakeUpdate()
	if !ok {
		return -1, 0
	}
	return int(up.Payload[0]), up.Age
}

const wall0 = int64(1_700_000_000_000_000) // a wall clock, µs

// A forged update stamped an hour ahead is rejected and counted; before,
// it was delivered and made every real update "stale" for an hour. Real
// updates around it are delivered.
func TestFutureUpdateRejected(t *testing.T) {
	u := newUpdateSink(t, Config{TrustPeerClock: true})
	ms := int64(1000)
	u.recv(0, wall0, 0, wall0-5*ms, wall0-6*ms)
	got, age := u.take()
	require.Equal(t, 0, got)
	require.Equal(t, 6*time.Millisecond, age)

	u.recv(0, wall0+10*ms, 1, wall0+3600_000*ms, wall0+3600_000*ms) // forged
	got, _ = u.take()
	require.Equal(t, -1, got, "an hour ahead: not delivered")
	u.recv(0, wall0+20*ms, 2, wall0+15*ms, wall0+14*ms)
	got, _ = u.take()
	require.Equal(t, 2, got, "the next real update is not stale")

	// Within MaxUpdateFuture (5 s): clock error, not an attack; delivered
	// with age 0.
	u.recv(0, wall0+30*ms, 3, wall0+30*ms, wall0+4000*ms)
	got, age = u.take()
	require.Equal(t, 3, got)
	require.Zero(t, age)
	st := u.s.Stats(0)
	require.EqualValues(t, 1, st.UpdatesRejected)
	require.Zero(t, st.UpdatesStale)

	// Without the bound the forged update is delivered.
	open := newUpdateSink(t, Config{TrustPeerClock: true, MaxUpdateFuture: 1 << 62})
	open.recv(0, wall0, 1, wall0+3600_000*ms, wall0+3600_000*ms)
	got, _ = open.take()
	require.Equal(t, 1, got)
}

// Generation times at the ends of int64 neither wrap the age around nor
// panic: MaxInt64 is rejected, MinInt64 delivered with a bounded age.
func TestUpdateGenerationExtremes(t *testing.T) {
	for _, cfg := range []Config{{TrustPeerClock: true}, {}} {
		u := newUpdateSink(t, cfg)
		now := clock.Mono(0).Add(time.Hour)
		u.recv(now, wall0, 0, wall0, math.MaxInt64)
		got, _ := u.take()
		require.Equal(t, -1, got)
		u.recv(now, wall0, 1, wall0, math.MinInt64)
		up, ok := u.s.TakeUpdate()
		require.True(t, ok)
		require.Positive(t, up.Age)
		require.LessOrEqual(t, up.Age, time.Duration(maxAgeMicros)*time.Microsecond)
		require.Less(t, up.GeneratedMicros, wall0, "far in the past, not wrapped into the future")
		u.recv(now, wall0, 2, math.MinInt64, math.MaxInt64-1)
		got, _ = u.take()
		require.Equal(t, -1, got)
		require.EqualValues(t, 2, u.s.Stats(now).UpdatesRejected)
		require.NotPanics(t, func() { u.s.Stats(now.Add(time.Second)) })
	}
}

// Before the clocks are synchronised the offset is unknown: a receiver
// whose clock is 10 s behind the sender's still takes honest updates (the
// check compares with the packet's own stamp, from the same clock), and
// still rejects one generated an hour after its packet left.
func TestFutureUpdateUnsynced(t *testing.T) {
	u := newUpdateSink(t, Config{NoInband: true})
	behind := 10 * int64(time.Second/time.Microsecond)
	u.recv(0, wall0-behind, 0, wall0, wall0-1000)
	got, _ := u.take()
	require.Equal(t, 0, got, "an honest update from a clock 10 s ahead")
	u.recv(0, wall0-behind, 1, wall0+1000, wall0+3600_000_000)
	got, _ = u.take()
	require.Equal(t, -1, got)
	require.EqualValues(t, 1, u.s.Stats(0).UpdatesRejected)
}

// Freshness is the packet number: a sender whose wall clock steps back 2 s
// keeps having its updates delivered (by generation time, 2 s of them
// would be "stale"), while an update overtaken by a fresher one is stale.
func TestUpdateFreshnessSurvivesClockStep(t *testing.T) {
	u := newUpdateSink(t, Config{TrustPeerClock: true})
	var now clock.Mono
	step := int64(0)
	for pn := range int64(100) {
		now = now.Add(10 * time.Millisecond)
		w := wall0 + int64(now)/1000
		if pn == 50 {
			step = -2_000_000 // the sender's clock steps back 2 s
		}
		u.recv(now, w+5000, pn, w+step, w+step)
		got, _ := u.take()
		require.Equal(t, int(pn), got, "update %d", pn)
	}
	require.Zero(t, u.s.Stats(now).UpdatesStale)
	// Reordered: 101 overtakes 100; 100 is stale when it comes.
	w := wall0 + int64(now)/1000
	u.recv(now, w, 101, w, w)
	u.recv(now, w, 100, w, w)
	got, _ := u.take()
	require.Equal(t, 101, got)
	require.EqualValues(t, 1, u.s.Stats(now).UpdatesStale)
}
