package session

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// ackReceiver is a plaintext server session taking a client's packets one
// by one on a manual clock, as the receiver whose ACKs are thinned.
type ackReceiver struct {
	t   *testing.T
	s   *Session
	now clock.Mono
	off int64
	buf []byte
	// acks are the ACK frames the receiver sent, in order.
	acks []wire.Ack
}

func newAckReceiver(t *testing.T, cfg Config) *ackReceiver {
	s, err := New(cfg, 3, false, 0)
	require.NoError(t, err)
	r := &ackReceiver{t: t, s: s, buf: make([]byte, 0, 2048)}
	r.poll() // the Accept
	return r
}

func (r *ackReceiver) wall() int64 { return int64(r.now) / 1000 }

// poll sends whatever is due, keeping the ACKs.
func (r *ackReceiver) poll() {
	for {
		d, _, ok := r.s.Poll(r.now, r.wall(), r.buf)
		if !ok {
			return
		}
		h, body, err := wire.ParseHeader(d)
		require.NoError(r.t, err)
		if h.Type == wire.TypeAck {
			var a wire.Ack
			require.NoError(r.t, wire.ParseAck(body, &a))
			r.acks = append(r.acks, a)
		}
	}
}

// data delivers the Data packet pn (100 bytes) and reports whether the
// receiver acknowledged at once; then polls.
func (r *ackReceiver) data(pn int64) bool {
	b := wire.AppendData(wire.AppendHeader(r.buf[:0], wire.Header{Type: wire.TypeData, ConnID: 3, PN: pn, Timestamp: r.wall()}),
		&wire.Data{Offset: r.off, Payload: make([]byte, 100)})
	r.off += 100
	require.True(r.t, r.s.Handle(r.now, r.wall(), b))
	now := r.s.AckNow()
	r.poll()
	return now
}

// freq delivers an AckFrequency frame in packet pn.
func (r *ackReceiver) freq(pn int64, f wire.AckFrequency) {
	b := wire.AppendAckFrequency(wire.AppendHeader(r.buf[:0], wire.Header{Type: wire.TypeAckFrequency, ConnID: 3, PN: pn, Timestamp: r.wall()}), &f)
	r.s.Handle(r.now, r.wall(), b)
	r.poll()
}

// acksAfter delivers packets from..to in order, every gap apart, and
// returns at which of them the receiver acknowledged at once.
func (r *ackReceiver) acksAt(pns ...int64) []int64 {
	var at []int64
	for _, pn := range pns {
		r.now = r.now.Add(time.Millisecond)
		if r.data(pn) {
			at = append(at, pn)
		}
	}
	return at
}

func seq(from, to int64) []int64 {
	var s []int64
	for pn := from; pn <= to; pn++ {
		s = append(s, pn)
	}
	return s
}

// TestAckFrequencyReceiver: the receiver acknowledges every second packet
// until the sender asks otherwise; then every threshold+1 packets, with the
// requested delayed-ACK timer; a request with an old sequence number
// changes nothing; a newer one does.
func TestAckFrequencyReceiver(t *testing.T) {
	r := newAckReceiver(t, Config{})
	require.Equal(t, []int64{1, 3, 5}, r.acksAt(seq(0, 5)...), "RFC 9000's default: every second packet")

	r.freq(6, wire.AckFrequency{Seq: 1, Threshold: 9, MaxAckDelayMicros: 40_000, ReorderThreshold: 3})
	r.acks = nil
	// The frame is ack-eliciting itself: the first of the ten.
	require.Equal(t, []int64{15, 25}, r.acksAt(seq(7, 25)...), "every 10th packet")
	// The ACK delay counts from the largest packet's arrival (RFC 9000
	// §13.2.5), here the one that triggered the ACK, not from the first
	// of the ten, 9 ms before: the sender's RTT sample is taken on it.
	require.Zero(t, r.acks[len(r.acks)-1].DelayMicros)

	// The delayed-ACK timer is the requested 40 ms, from the first
	// packet not acknowledged.
	r.now = r.now.Add(time.Millisecond)
	require.False(t, r.data(26))
	first := r.now
	require.Equal(t, first.Add(40*time.Millisecond), r.s.ackAt)
	r.now = first.Add(39 * time.Millisecond)
	r.s.Timeout(r.now)
	r.acks = nil
	r.poll()
	require.Empty(t, r.acks)
	r.now = first.Add(40 * time.Millisecond)
	r.s.Timeout(r.now)
	r.poll()
	require.Len(t, r.acks, 1)
	require.Equal(t, uint32(40_000), r.acks[0].DelayMicros)

	// Old and repeated sequence numbers are ignored (draft §4).
	r.freq(27, wire.AckFrequency{Seq: 1, Threshold: 1, MaxAckDelayMicros: 25_000, ReorderThreshold: 1})
	r.freq(28, wire.AckFrequency{Seq: 0, Threshold: 1, MaxAckDelayMicros: 25_000, ReorderThreshold: 1})
	require.Equal(t, []int64{36}, r.acksAt(seq(29, 38)...), "still every 10th (the two frames counted)")
	// A newer one applies (its own packet under the rule before it).
	r.freq(39, wire.AckFrequency{Seq: 5, Threshold: 3, MaxAckDelayMicros: 25_000, ReorderThreshold: 3})
	require.Equal(t, []int64{40, 44}, r.acksAt(seq(40, 47)...))
	require.Equal(t, 25*time.Millisecond, r.s.ackDelay())
}

// TestAckFrequencyReordering: once thinned, a gap is acknowledged at once
// when it is reordering-threshold packets deep, and a packet that fills a
// gap at once; threshold 0 acknowledges neither early.
func TestAckFrequencyReordering(t *testing.T) {
	r := newAckReceiver(t, Config{})
	r.freq(0, wire.AckFrequency{Seq: 1, Threshold: 19, MaxAckDelayMicros: 100_000, ReorderThreshold: 3})
	// 5 is missing: the ACK goes when 8 arrives (8 − 5 = 3).
	require.Equal(t, []int64{8}, r.acksAt(1, 2, 3, 4, 6, 7, 8, 9))
	require.Equal(t, []int64{5}, r.acksAt(5), "filling a gap: the sender may have declared it lost")
	// A new gap is counted from its start (14 − 11 = 3); once reported
	// it stays quiet.
	require.Equal(t, []int64{14}, r.acksAt(10, 12, 13, 14, 15, 16, 17, 18))

	r = newAckReceiver(t, Config{})
	r.freq(0, wire.AckFrequency{Seq: 1, Threshold: 19, MaxAckDelayMicros: 100_000, ReorderThreshold: 0})
	require.Empty(t, r.acksAt(1, 2, 3, 4, 6, 7, 8, 9, 5), "reordering threshold 0: no early ACK")
}

// TestAckFrequencySamples: a thinned receiver carries at most thinSamples
// OWD samples per ACK, spread over its packets; every one at the default.
func TestAckFrequencySamples(t *testing.T) {
	r := newAckReceiver(t, Config{TrustPeerClock: true})
	r.acksAt(seq(0, 1)...)
	require.Equal(t, 2, r.acks[len(r.acks)-1].NSamples)
	r.freq(2, wire.AckFrequency{Seq: 1, Threshold: 31, MaxAckDelayMicros: 100_000, ReorderThreshold: 3})
	r.acks = nil
	// The delayed-ACK timer armed by the frame's own packet (under the
	// rule before it: 25 ms) sends the first ACK, at packet 27; then
	// every 32nd.
	require.Equal(t, []int64{59, 91}, r.acksAt(seq(3, 91)...))
	require.Len(t, r.acks, 3)
	require.LessOrEqual(t, r.acks[0].NSamples, thinSamples, "never more than thinSamples")
	a := r.acks[1]
	require.Equal(t, thinSamples, a.NSamples)
	require.Equal(t, int64(31), a.Samples[0].PN, "every 4th packet")
	require.Equal(t, int64(59), a.Samples[thinSamples-1].PN, "the last one's")

	// A threshold above what the ACK's samples cover is capped.
	r.freq(92, wire.AckFrequency{Seq: 2, Threshold: 1000, MaxAckDelayMicros: 100_000, ReorderThreshold: 3})
	require.Equal(t, maxAckRatio-1, r.s.afr.threshold)
}

// TestAckFrequencyRefused: a request from a peer we never consented to,
// one asking for less than our min_ack_delay, and one with a value out of
// range close the connection with a protocol violation that says why;
// none panics.
func TestAckFrequencyRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		body []byte
		want string
	}{
		{"no consent", Config{MinAckDelay: -1}, wire.AppendAckFrequency(nil, &wire.AckFrequency{Seq: 1, Threshold: 3, MaxAckDelayMicros: 25_000}), "never sent min_ack_delay"},
		{"below min_ack_delay", Config{MinAckDelay: 5 * time.Millisecond}, wire.AppendAckFrequency(nil, &wire.AckFrequency{Seq: 1, Threshold: 3, MaxAckDelayMicros: 4_999}), "below the min_ack_delay of 5ms"},
		{"delay 2^14 ms", Config{}, wire.AppendAckFrequency(nil, &wire.AckFrequency{Seq: 1, Threshold: 3, MaxAckDelayMicros: wire.MaxAckDelayLimit}), "2^14 ms"},
		{"sequence 2^62", Config{}, wire.AppendAckFrequency(nil, &wire.AckFrequency{Seq: wire.MaxPacketNumber + 1}), "2^62"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAckReceiver(t, tc.cfg)
			b := append(wire.AppendHeader(r.buf[:0], wire.Header{Type: wire.TypeAckFrequency, ConnID: 3, PN: 1}), tc.body...)
			r.s.Handle(r.now, r.wall(), b)
			r.poll() // the CLOSE
			require.True(t, r.s.Closed())
			require.True(t, errors.Is(r.s.Err(), ErrProtocol), "%v", r.s.Err())
			require.ErrorContains(t, r.s.Err(), tc.want)
		})
	}
	// A truncated frame is malformed: counted and dropped, as any.
	r := newAckReceiver(t, Config{})
	b := wire.AppendHeader(r.buf[:0], wire.Header{Type: wire.TypeAckFrequency, ConnID: 3, PN: 1})
	r.s.Handle(r.now, r.wall(), append(b, 1, 2, 3))
	require.False(t, r.s.Closed())
	require.Equal(t, int64(1), r.s.Stats(r.now).Malformed)
}

// TestAckFrequencyConsent: min_ack_delay travels in the transport
// parameters with TLS and in the Accept without; only a peer that sent it
// can be asked (the sender's state exists only then).
func TestAckFrequencyConsent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tls     bool
		srvMin  time.Duration
		consent bool
	}{
		{"plaintext", false, 0, true},
		{"plaintext, server refuses", false, -1, false},
		{"TLS", true, 3 * time.Millisecond, true},
		{"TLS, server refuses", true, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := Config{}, Config{MinAckDelay: tc.srvMin}
			if tc.tls {
				cli.TLS, srv.TLS = loopbackTLS(t), loopbackTLS(t)
			}
			p := NewPair(t, cli, srv, Link{Delay: 10 * time.Millisecond})
			p.Open()
			require.Equal(t, tc.consent, p.Cli.afs != nil)
			if tc.consent {
				want := tc.srvMin
				if want == 0 {
					want = time.Millisecond
				}
				require.Equal(t, want, p.Cli.afs.peerMin)
			}
			if tc.tls {
				require.NotNil(t, p.Srv.afs, "the client consents with TLS")
			} else {
				require.Nil(t, p.Srv.afs, "a plaintext client has nowhere to say it")
			}
		})
	}
}

// TestAckFrequencyEndToEnd: over a Pair, a sender whose return path holds
// a standing queue asks its peer for fewer ACKs, and the peer's ACKs come
// thinned; a lost request is sent again with a new sequence number.
func TestAckFrequencyEndToEnd(t *testing.T) {
	p := OpenPair(t, Config{TrustPeerClock: true, MaxAckDelay: 20 * time.Millisecond}, Link{Delay: 20 * time.Millisecond, Rate: 20e6})
	// Stand in for the policy: it wants 8 packets per ACK (and is not
	// evaluated again within the test).
	p.Cli.afs.ratio, p.Cli.afs.delay, p.Cli.afs.pending = 8, 30*time.Millisecond, true
	p.Cli.afs.evalAt = p.Now.Add(time.Hour)
	var freqs []wire.AckFrequency
	drop := true
	p.Filter = func(from *Session, d []byte) bool {
		h, body, err := wire.ParseHeader(d)
		require.NoError(t, err)
		if h.Type == wire.TypeAckFrequency {
			var f wire.AckFrequency
			require.NoError(t, wire.ParseAckFrequency(body, &f))
			freqs = append(freqs, f)
			// Sent, not yet acknowledged: the timer allows for the
			// larger of the old delay and the new.
			require.Equal(t, 30*time.Millisecond, p.Cli.tr.MaxAckDelay())
			if drop {
				drop = false
				return false // lost: sent again
			}
		}
		return true
	}
	p.Cli.Write(make([]byte, 400_000))
	p.Run(3 * time.Second)
	require.Len(t, freqs, 2)
	require.Equal(t, []int64{1, 2}, []int64{freqs[0].Seq, freqs[1].Seq}, "sent again with a new sequence number")
	require.Equal(t, uint32(7), freqs[1].Threshold)
	require.Equal(t, uint32(30_000), freqs[1].MaxAckDelayMicros)
	require.Equal(t, uint32(thinReorder), freqs[1].ReorderThreshold)
	require.NotNil(t, p.Srv.afr)
	require.Equal(t, int64(2), p.Srv.afr.seq)
	require.Equal(t, 7, p.Srv.afr.threshold)
	require.Equal(t, int64(2), p.Cli.afs.acked)
	require.Equal(t, 30*time.Millisecond, p.Cli.tr.MaxAckDelay(), "the retransmission timer allows for the new delay")
	st := p.Cli.Stats(p.Now)
	require.Equal(t, 8, st.AckRatio)
	require.Equal(t, int64(2), st.AckFrequencySent)
}

// policyRound feeds one round trip of ACK stamps to a: n ACKs whose
// reverse delay exceeds the base by q(i), then evaluates.
func policyRound(a *ackFreqSender, now *clock.Mono, rtt time.Duration, window int, q func(i int) time.Duration) {
	const n = 10
	base := int64(30_000) // µs, plus an arbitrary clock offset
	for i := range n {
		*now = now.Add(rtt / n)
		t4 := int64(*now)/1000 + 123_456
		a.onSample(*now, t4-base-q(i).Microseconds(), t4)
	}
	a.evaluate(*now, rtt, rtt, window, 2, 25*time.Millisecond)
}

// TestAckFrequencyPolicy: the sender thins when the return path holds a
// standing queue, by doubling, up to the window's quarter and the
// samples' cap; never on a symmetric path (no standing queue, however
// bursty); steps back by a quarter only after quietRounds quiet rounds;
// follows a shrinking window at once.
func TestAckFrequencyPolicy(t *testing.T) {
	const rtt = 100 * time.Millisecond
	empty := func(int) time.Duration { return 0 }
	standing := func(i int) time.Duration { return 50*time.Millisecond + time.Duration(i)*time.Millisecond }
	// A wide return path: most ACKs find it empty, some queue behind a
	// burst (up to 40 ms); the smallest over the round is 0.
	bursty := func(i int) time.Duration { return time.Duration(i%2) * 40 * time.Millisecond }

	t.Run("symmetric path: never", func(t *testing.T) {
		a, now := &ackFreqSender{}, clock.Mono(0)
		for range 600 {
			policyRound(a, &now, rtt, 200, bursty)
		}
		require.Equal(t, 2, a.ratio)
		require.False(t, a.pending)
		require.Zero(t, a.seq)
	})
	t.Run("standing queue: doubles to the bounds", func(t *testing.T) {
		a, now := &ackFreqSender{}, clock.Mono(0)
		policyRound(a, &now, rtt, 200, empty)
		var ratios []int
		for range 6 {
			policyRound(a, &now, rtt, 200, standing)
			ratios = append(ratios, a.ratio)
		}
		require.Equal(t, []int{2, 4, 8, 16, 32, 32}, ratios, "from the second round in a row, doubles, at most maxAckRatio")
		require.True(t, a.pending)
		require.Equal(t, 25*time.Millisecond, a.delay, "max(MaxAckDelay, min RTT / 4)")

		a, now = &ackFreqSender{}, clock.Mono(0)
		policyRound(a, &now, rtt, 40, empty)
		for range 6 {
			policyRound(a, &now, rtt, 40, standing)
		}
		require.Equal(t, 10, a.ratio, "4 ACKs per window at least")
		policyRound(a, &now, rtt, 12, standing)
		require.Equal(t, 3, a.ratio, "the window shrank: the bound follows at once")
		policyRound(a, &now, rtt, 4, standing)
		require.Equal(t, 2, a.ratio, "never below AckEvery")
		require.Equal(t, 25*time.Millisecond, a.delay, "back to the default delay")

		// A long path: the delay is a quarter of the minimum RTT.
		a, now = &ackFreqSender{}, clock.Mono(0)
		policyRound(a, &now, 400*time.Millisecond, 200, empty)
		for range 2 {
			policyRound(a, &now, 400*time.Millisecond, 200, func(int) time.Duration { return 150 * time.Millisecond })
		}
		require.Equal(t, 100*time.Millisecond, a.delay)
	})
	t.Run("quiet: a quarter back after quietRounds", func(t *testing.T) {
		a, now := &ackFreqSender{}, clock.Mono(0)
		policyRound(a, &now, rtt, 200, empty)
		for range 5 {
			policyRound(a, &now, rtt, 200, standing)
		}
		require.Equal(t, 32, a.ratio)
		for range quietRounds - 1 {
			policyRound(a, &now, rtt, 200, empty)
		}
		require.Equal(t, 32, a.ratio, "not before quietRounds")
		policyRound(a, &now, rtt, 200, empty)
		require.Equal(t, 24, a.ratio)
		// A round with a standing queue between resets the count.
		for range quietRounds - 1 {
			policyRound(a, &now, rtt, 200, empty)
		}
		policyRound(a, &now, rtt, 200, func(int) time.Duration { return 20 * time.Millisecond }) // between high/2 and high
		for range quietRounds - 1 {
			policyRound(a, &now, rtt, 200, empty)
		}
		require.Equal(t, 24, a.ratio)
	})
	t.Run("one round of queue, or a queue under a quarter RTT: never", func(t *testing.T) {
		a, now := &ackFreqSender{}, clock.Mono(0)
		policyRound(a, &now, rtt, 200, empty)
		for range 50 {
			policyRound(a, &now, rtt, 200, standing) // an outage's worth
			policyRound(a, &now, rtt, 200, empty)
			policyRound(a, &now, rtt, 200, func(int) time.Duration { return rtt/4 - time.Millisecond })
		}
		require.Equal(t, 2, a.ratio)
		require.False(t, a.pending)
	})
	t.Run("a peer whose min_ack_delay is above ours: never asked", func(t *testing.T) {
		a, now := &ackFreqSender{peerMin: 26 * time.Millisecond}, clock.Mono(0)
		policyRound(a, &now, rtt, 200, empty)
		for range 6 {
			policyRound(a, &now, rtt, 200, standing)
		}
		require.False(t, a.pending)
	})
}
