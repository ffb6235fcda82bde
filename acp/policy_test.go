package acp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

func TestLazyRate(t *testing.T) {
	l, err := NewLazy(Config{})
	require.NoError(t, err)
	require.Equal(t, "lazy", l.Name())
	require.Equal(t, Rate(1), l.Rate(), "1/InitialRTT before a sample")
	require.Equal(t, clock.Mono(0), l.NextSendTime())

	l.OnUpdateSent(ms(10), 0, ms(10))
	require.Equal(t, ms(1010), l.NextSendTime())
	l.OnAck(ms(210), cc.AckSample{PacketNumber: 0, RTT: msd(200)})
	require.Equal(t, Rate(5), l.Rate(), "one update per SRTT")
	require.Equal(t, ms(210), l.NextSendTime())
	l.OnUpdateSent(ms(220), 1, ms(100))
	require.Equal(t, ms(420), l.NextSendTime())

	// Loss and timeouts do not move it.
	l.OnLoss(ms(300), cc.LossEvent{PacketNumber: 1})
	l.OnRetransmissionTimeout(ms(400))
	require.Equal(t, Rate(5), l.Rate())
	require.Equal(t, 5.0, float64(l.Rate()))
	require.Equal(t, msd(200), l.rtt.Smoothed())
	require.Equal(t, cc.SignalRTT, l.Signal())
}

func TestFixedRate(t *testing.T) {
	f, err := NewFixed(20, Config{UpdateSize: 100})
	require.NoError(t, err)
	require.Equal(t, "fixed", f.Name())
	require.Equal(t, Rate(20), f.Rate())
	require.Equal(t, clock.Mono(0), f.NextSendTime())
	f.OnUpdateSent(ms(3), 0, ms(3))
	require.Equal(t, ms(53), f.NextSendTime(), "every 50 ms")
	f.OnAck(ms(100), cc.AckSample{PacketNumber: 0, RTT: msd(97)})
	f.OnLoss(ms(100), cc.LossEvent{PacketNumber: 1})
	f.OnRetransmissionTimeout(ms(100))
	require.Equal(t, Rate(20), f.Rate(), "ACKs, loss and timeouts do not move a fixed rate")
	require.Equal(t, cc.SignalNone, f.Signal())
	require.Equal(t, msd(97), f.rtt.Smoothed())

	for _, bad := range []Rate{0, -1} {
		_, err := NewFixed(bad, Config{})
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
	_, err = NewFixed(1, Config{UpdateSize: -1})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewLazy(Config{InitialRTT: -1})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// A late driver (timer wake-ups behind schedule) keeps the fixed rate on
// average; a stall longer than an interval restarts the schedule without a
// catch-up burst.
func TestFixedKeepsScheduleWhenSendsAreLate(t *testing.T) {
	tests := []struct {
		name string
		sent float64 // ms: the send time of each update
		due  float64 // ms: NextSendTime after it
	}{
		{"first send sets the schedule", 0, 50},
		{"7 ms late: next slot still 100", 57, 100},
		{"on time", 100, 150},
		{"49 ms late: next slot 200 (sent at once)", 199, 200},
		{"on time again", 200, 250},
		{"a stall of 80 ms: restart at now, no burst", 330, 380},
	}
	f, err := NewFixed(20, Config{})
	require.NoError(t, err)
	for _, tc := range tests {
		f.OnUpdateSent(ms(tc.sent), 0, ms(tc.sent))
		require.Equal(t, ms(tc.due), f.NextSendTime(), tc.name)
	}
	// A thousand sends each 3 ms late still average 20 Hz.
	g, err := NewFixed(20, Config{})
	require.NoError(t, err)
	var now clock.Mono
	for range 1000 {
		g.OnUpdateSent(now, 0, now)
		now = g.NextSendTime().Add(3 * time.Millisecond)
	}
	require.InDelta(t, 50*1000, float64(now.Sub(0).Milliseconds()), 10)
}

func TestRateInterval(t *testing.T) {
	require.Equal(t, 50*time.Millisecond, Rate(20).Interval())
	require.Equal(t, 10*time.Second, Rate(0.1).Interval())
	require.Zero(t, Rate(0).Interval())
	require.Zero(t, Rate(-3).Interval())
}

func TestNewPolicy(t *testing.T) {
	tests := []struct {
		name, want string
		size       cc.ByteCount
		wantSize   cc.ByteCount
	}{
		{"acp", "acp", 0, DefaultUpdateSize},
		{"", "acp", 500, 500}, // "" is the default, "acp"
		{"acp-literal", "acp-literal", 0, DefaultUpdateSize},
		{"lazy", "lazy", 1400, 1400},
	}
	for _, tc := range tests {
		p, err := NewPolicy(tc.name, Config{UpdateSize: tc.size})
		require.NoError(t, err)
		require.Equal(t, tc.want, p.Name())
		require.Equal(t, tc.wantSize, updateSize(p), "%q size %d", tc.name, tc.size)
	}
	require.Equal(t, []string{"acp", "acp-literal", "lazy"}, PolicyNames())

	// "acp" is the recommended regulator, "acp-literal" the rule alone.
	a, err := NewPolicy("acp", Config{})
	require.NoError(t, err)
	l, err := NewPolicy("acp-literal", Config{})
	require.NoError(t, err)
	require.Equal(t, RecommendedTuning().MinUpdatesPerRTT, a.(*Regulator).Config().Tuning.MinUpdatesPerRTT)
	require.Zero(t, l.(*Regulator).Config().Tuning.MinUpdatesPerRTT)

	_, err = NewPolicy("acp-literal", Config{Tuning: &Tuning{}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	for _, bad := range []string{"fixed", "owd", "cubic", "ACP"} {
		_, err := NewPolicy(bad, Config{})
		require.ErrorIs(t, err, ErrUnknownPolicy, bad)
		require.ErrorContains(t, err, "acp, acp-literal, lazy", "the error names the valid policies")
	}
}

// TestZeroConfigIsRecommended pins the zero Config to the refinements the
// regulator was benchmarked with: changing one changes every "acp" result.
func TestZeroConfigIsRecommended(t *testing.T) {
	r, err := NewRegulator(Config{})
	require.NoError(t, err)
	require.Equal(t, Tuning{
		Kappa: 1, ZGain: 1.0 / 8, AgeSource: AgeFromOWD,
		MinEpoch: 200 * time.Millisecond, MinUpdatesPerRTT: 1, ExploreOnHold: true,
		Gradient: true, StepMin: 0.02, StepMax: 0.5, RateBand: 0.01,
		ExcessAge: true, NoiseBand: 1, EpochUpdates: 20,
		QueueBound: 4, BacklogBound: 10, DeliveryBound: true, SourceHeadroom: 1, StartBurst: 10,
	}, *r.Config().Tuning)
	require.Equal(t, "acp", r.Name())

	// Config hands out a copy: changing it changes nothing in use.
	r.Config().Tuning.QueueBound = 0
	require.Equal(t, 4.0, r.Config().Tuning.QueueBound)
	tun := RecommendedTuning()
	r2, err := NewRegulator(Config{Tuning: &tun})
	require.NoError(t, err)
	tun.DeliveryBound = false
	require.True(t, r2.Config().Tuning.DeliveryBound, "the caller's Tuning is copied at construction")

	lit, err := NewLiteral(Config{})
	require.NoError(t, err)
	require.Equal(t, Tuning{Kappa: 1, ZGain: 1.0 / 8, StepMin: 0.02, StepMax: 0.5, RateBand: 0.01},
		*lit.Config().Tuning, "the literal rule: no refinement, no bound (the step constants are unused)")
	require.Equal(t, "acp-literal", lit.Name())
}

func BenchmarkLazyOnAck(b *testing.B) {
	l, err := NewLazy(Config{})
	require.NoError(b, err)
	b.ReportAllocs()
	for i := range b.N {
		l.OnAck(clock.Mono(i), cc.AckSample{PacketNumber: cc.PacketNumber(i), RTT: 50 * time.Millisecond})
	}
}

func TestSeedRTT(t *testing.T) {
	r, err := NewRegulator(Config{})
	require.NoError(t, err)
	require.InDelta(t, 1.0, float64(r.Rate()), 1e-9, "one update per initial RTT (1 s)")
	r.SeedRTT(50 * time.Millisecond)
	require.InDelta(t, 20.0, float64(r.Rate()), 1e-9, "one update per seeded RTT")
	r.SeedRTT(10 * time.Millisecond)
	require.InDelta(t, 20.0, float64(r.Rate()), 1e-9, "only the first seed counts")

	l, err := NewLazy(Config{})
	require.NoError(t, err)
	l.SeedRTT(100 * time.Millisecond)
	require.InDelta(t, 10.0, float64(l.Rate()), 1e-9)
	r2, err := NewRegulator(Config{})
	require.NoError(t, err)
	r2.OnAck(0, cc.AckSample{PacketNumber: 0, RTT: 40 * time.Millisecond})
	r2.SeedRTT(500 * time.Millisecond)
	require.InDelta(t, 25.0, float64(r2.Rate()), 1e-9, "its own sample wins")
}

// updateSize is the Config.UpdateSize p was built with.
func updateSize(p Policy) cc.ByteCount {
	switch p := p.(type) {
	case *Regulator:
		return p.Config().UpdateSize
	case *Lazy:
		return p.cfg.UpdateSize
	case *Fixed:
		return p.cfg.UpdateSize
	}
	return 0
}
