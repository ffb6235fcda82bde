package quichook

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// FuzzShim feeds arbitrary datagrams to the shim's decoders and to a
// sender and receiver with state: nothing may panic, a feedback datagram
// that decodes re-encodes to the same bytes (the decoder accepts only
// what the encoder writes), and a sender never counts negative bytes in
// flight whatever the feedback says.
func FuzzShim(f *testing.F) {
	fb := feedback{t3: 1_700_000_000_000_000, synced: true, ackDelay: 250, nRanges: 2, nSamples: 2}
	fb.ranges[0], fb.ranges[1] = seqRange{10, 20}, seqRange{2, 5}
	fb.samples[0], fb.samples[1] = owdSample{20, 1500}, owdSample{19, -3}
	f.Add(fb.append(nil))
	f.Add((&feedback{}).append(nil))
	var h [maxHeaderLen + 4]byte
	(&dataHeader{seq: 7, sent: 1_700_000_000_000_000}).put(h[:])
	f.Add(h[:dataHeaderLen+4])
	(&dataHeader{seq: 8, sent: 1_700_000_000_000_100, echo: true, t3: 5, t4: 6}).put(h[:])
	f.Add(h[:])
	f.Add(appendHello(nil, hello{typ: typeHello, cookie: 7}))
	f.Add(appendHello(nil, hello{typ: typeHello, cookie: 7, hasEcho: true, echo: 9}))
	f.Add(appendHello(nil, hello{typ: typeHelloAck, cookie: 7, hasEcho: true, echo: 9}))
	f.Add([]byte{0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		ctl, err := cc.New("owd", DefaultMaxDatagram)
		require.NoError(t, err)
		s := testSender(ctl)
		for i := range 32 {
			s.onSent(clock.Mono(i)*1000, 1200)
		}
		rx, err := newReceiver()
		require.NoError(t, err)
		cfg, err := Config{}.withDefaults()
		require.NoError(t, err)
		var got feedback
		if parseFeedback(b, &got) == nil {
			require.True(t, bytes.Equal(b, got.append(nil)), "canonical encoding")
			s.onFeedback(1e9, 1_700_000_000_000_000, &got)
			s.onTimer(1e10)
			require.GreaterOrEqual(t, s.inFlight(), cc.ByteCount(0))
		}
		if h, payload, err := parseData(b); err == nil {
			require.NotEmpty(t, payload)
			rx.onData(1e9, 1_700_000_000_000_000, &h, &cfg)
			rx.onData(1e9, 1_700_000_000_000_000, &dataHeader{seq: h.seq ^ 1, sent: h.sent}, &cfg)
			out := rx.build(1e9, 1_700_000_000_000_000, 5, nil)
			var back feedback
			require.NoError(t, parseFeedback(out, &back), "the receiver's feedback decodes")
		}
		if h, err := parseHello(b); err == nil {
			require.Equal(t, b, appendHello(nil, h), "canonical encoding")
		}
	})
}

// The received ranges stay descending, disjoint and bounded whatever the
// arrival order.
func TestReceiverRanges(t *testing.T) {
	r, err := newReceiver()
	require.NoError(t, err)
	seen := map[uint64]bool{}
	order := []uint64{5, 3, 4, 10, 1, 2, 0, 7, 9, 8, 6, 6, 40, 30, 20}
	for _, s := range order {
		require.Equal(t, seen[s], r.insert(s), "dup of %d", s)
		seen[s] = true
	}
	require.Equal(t, []seqRange{{40, 40}, {30, 30}, {20, 20}, {0, 10}}, r.ranges)
	for i := uint64(100); i < 200; i += 2 {
		r.insert(i)
	}
	require.Len(t, r.ranges, maxRanges)
	for i := 1; i < len(r.ranges); i++ {
		require.Greater(t, r.ranges[i-1].lo, r.ranges[i].hi+1)
	}
}
