package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/qlog"
)

// traceEvent is one event a recorder saw.
type traceEvent struct {
	t      time.Duration
	name   string
	pkt    qlog.Packet
	m      qlog.Metrics
	pn     int64
	s      string // lost: trigger; state: new
	d      time.Duration
	synced bool
}

// recorder is a qlog.Tracer that keeps every event.
type recorder struct {
	ev     []traceEvent
	closed bool
}

func (r *recorder) add(e traceEvent) { r.ev = append(r.ev, e) }
func (r *recorder) PacketSent(t time.Duration, p *qlog.Packet) {
	q := *p
	q.Frame.AckRanges = append([]qlog.AckRange(nil), p.Frame.AckRanges...)
	r.add(traceEvent{t: t, name: "sent", pkt: q})
}
func (r *recorder) PacketReceived(t time.Duration, p *qlog.Packet) {
	q := *p
	q.Frame.AckRanges = append([]qlog.AckRange(nil), p.Frame.AckRanges...)
	r.add(traceEvent{t: t, name: "received", pkt: q})
}
func (r *recorder) PacketLost(t time.Duration, typ string, pn int64, trigger string) {
	r.add(traceEvent{t: t, name: "lost", pn: pn, s: trigger})
}
func (r *recorder) MetricsUpdated(t time.Duration, m qlog.Metrics) {
	r.add(traceEvent{t: t, name: "metrics", m: m})
}
func (r *recorder) CongestionStateUpdated(t time.Duration, old, new string) {
	r.add(traceEvent{t: t, name: "state", s: new})
}
func (r *recorder) OWDSample(t time.Duration, s qlog.OWDSample) {
	r.add(traceEvent{t: t, name: "owd", pn: s.PacketNumber, d: s.OWD, synced: s.Synced})
}
func (r *recorder) ClockOffset(t time.Duration, offset time.Duration, synced, trusted bool) {
	r.add(traceEvent{t: t, name: "clock", d: offset, synced: synced})
}
func (r *recorder) UpdateAge(t time.Duration, pn int64, age time.Duration, early bool) {
	r.add(traceEvent{t: t, name: "age", pn: pn, d: age})
}
func (r *recorder) Close() error { r.closed = true; return nil }

func (r *recorder) named(name string) []traceEvent {
	var out []traceEvent
	for _, e := range r.ev {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// A traced pair moving stream data over a 10 ms path, one data packet
// dropped, and one update: the client's tracer sees its packets sent in
// order, the drop declared lost by the packet threshold, metrics with
// the path's RTT, OWD samples of the path's delay; the server's sees the
// same packet numbers arrive and the update's age.
func TestTracerSeesSessionEvents(t *testing.T) {
	const delay = 10 * time.Millisecond
	cfg := Config{TrustPeerClock: true, DisablePathMTUDiscovery: true}
	p := NewPair(t, cfg, cfg, Link{Delay: delay})
	cli, srv := &recorder{}, &recorder{}
	p.Cli.SetTracer(p.Now, cli)
	p.Srv.SetTracer(p.Now, srv)
	dropped := int64(-1)
	p.Filter = func(from *Session, d []byte) bool {
		h, _, err := wire.ParseHeader(d)
		if from == p.Cli && err == nil && h.Type == wire.TypeData && h.PN >= 10 && dropped < 0 {
			dropped = h.PN
			return false
		}
		return true
	}
	p.Open()
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("reading")))
	data := make([]byte, 200_000)
	rd := make([]byte, 64<<10)
	w, got := 0, 0
	for i := 0; i < 5000 && got < len(data); i++ {
		if w < len(data) {
			w += p.Cli.out.write(data[w:])
		}
		p.Run(time.Millisecond)
		n, _ := p.Srv.Read(rd)
		got += n
	}
	require.Equal(t, len(data), got)
	require.GreaterOrEqual(t, dropped, int64(10), "a data packet was dropped")

	for _, r := range []*recorder{cli, srv} {
		for i := 1; i < len(r.ev); i++ {
			require.GreaterOrEqual(t, r.ev[i].t, r.ev[i-1].t, "event %d (%s) goes back in time", i, r.ev[i].name)
		}
	}
	// The client's first packet is its Initial; its stream packets go out
	// in increasing packet-number order and arrive at the server.
	sent := cli.named("sent")
	require.NotEmpty(t, sent)
	require.Equal(t, "initial", sent[0].pkt.Frame.Type)
	require.Equal(t, "initial", sent[0].pkt.Type)
	received := map[int64]bool{}
	for _, e := range srv.named("received") {
		if e.pkt.Frame.Type == "stream" {
			received[e.pkt.Number] = true
		}
	}
	last, streams := int64(-1), 0
	for _, e := range sent {
		require.Positive(t, e.pkt.Length)
		if e.pkt.Frame.Type != "stream" {
			continue
		}
		streams++
		require.Greater(t, e.pkt.Number, last, "stream packet numbers increase")
		last = e.pkt.Number
		require.Equal(t, e.pkt.Number != dropped, received[e.pkt.Number], "packet %d", e.pkt.Number)
		require.Equal(t, "1RTT", e.pkt.Type)
	}
	require.Greater(t, streams, 100)
	// The server's ACKs arrive at the client with their ranges.
	acks := 0
	for _, e := range cli.named("received") {
		if e.pkt.Frame.Type == "ack" {
			acks++
			require.NotEmpty(t, e.pkt.Frame.AckRanges)
		}
	}
	require.Positive(t, acks)

	lost := cli.named("lost")
	require.Len(t, lost, 1, "only the dropped packet is lost")
	require.Equal(t, dropped, lost[0].pn)
	require.Equal(t, qlog.TriggerReordering, lost[0].s)

	metrics := cli.named("metrics")
	require.NotEmpty(t, metrics)
	var final qlog.Metrics
	for i, e := range metrics {
		if i > 0 {
			require.NotEqual(t, metrics[i-1].m, e.m, "metrics reported only on change")
		}
		final = e.m
	}
	require.Positive(t, final.CongestionWindow)
	require.InDelta(t, float64(2*delay), float64(final.MinRTT), float64(5*time.Millisecond))
	require.GreaterOrEqual(t, final.SmoothedRTT, final.MinRTT)
	require.NotEmpty(t, cli.named("state"), "the controller's state is named")

	owd := cli.named("owd")
	streamPN := map[int64]bool{}
	for _, e := range sent {
		if e.pkt.Frame.Type == "stream" {
			streamPN[e.pkt.Number] = true
		}
	}
	sampled := 0
	for _, e := range owd {
		if streamPN[e.pn] {
			sampled++
		}
	}
	require.Greater(t, sampled, streams/2, "most stream packets come back with an OWD sample")
	for _, e := range owd {
		require.True(t, e.synced)
		require.GreaterOrEqual(t, e.d, delay-time.Millisecond)
		require.Less(t, e.d, delay+200*time.Millisecond)
	}
	clk := srv.named("clock")
	require.NotEmpty(t, clk)
	require.True(t, clk[0].synced)

	age := srv.named("age")
	require.Len(t, age, 1)
	require.InDelta(t, float64(delay), float64(age[0].d), float64(2*time.Millisecond))
}

// With TLS the packet types follow the keys: the handshake's packets are
// "initial" and "handshake", the rest "1RTT".
func TestTracerPacketTypesWithTLS(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: time.Millisecond})
	cli := &recorder{}
	p.Cli.SetTracer(p.Now, cli)
	p.Open()
	p.Run(100 * time.Millisecond)
	types := map[string]bool{}
	for _, e := range cli.named("sent") {
		types[e.pkt.Type] = true
	}
	for _, e := range cli.named("received") {
		types[e.pkt.Type] = true
	}
	require.True(t, types["initial"] && types["handshake"] && types["1RTT"], "%v", types)
}

// A session without a tracer, and one whose tracer was removed, emits
// nothing.
func TestTracerRemoved(t *testing.T) {
	p := NewPair(t, Config{}, Config{}, Link{Delay: time.Millisecond})
	r := &recorder{}
	p.Cli.SetTracer(p.Now, r)
	require.Equal(t, qlog.Tracer(r), p.Cli.Tracer())
	p.Cli.SetTracer(p.Now, nil)
	require.Nil(t, p.Cli.Tracer())
	p.Open()
	require.Empty(t, r.ev)
}

// nopTracer is a qlog.Tracer that drops everything: what the session's
// own tracing work costs, without a writer's.
type nopTracer struct{}

func (nopTracer) PacketSent(time.Duration, *qlog.Packet)               {}
func (nopTracer) PacketReceived(time.Duration, *qlog.Packet)           {}
func (nopTracer) PacketLost(time.Duration, string, int64, string)      {}
func (nopTracer) MetricsUpdated(time.Duration, qlog.Metrics)           {}
func (nopTracer) CongestionStateUpdated(time.Duration, string, string) {}
func (nopTracer) OWDSample(time.Duration, qlog.OWDSample)              {}
func (nopTracer) ClockOffset(time.Duration, time.Duration, bool, bool) {}
func (nopTracer) UpdateAge(time.Duration, int64, time.Duration, bool)  {}
func (nopTracer) Close() error                                         { return nil }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

// BenchmarkSessionStreamTrace is BenchmarkSessionStream with no tracer
// (what every untraced connection runs), a tracer that drops the events
// (the session's describing work) and the qlog writer into a discarding
// sink (JSON encoding too), both ends traced.
func BenchmarkSessionStreamTrace(b *testing.B) {
	for _, bc := range []struct {
		name string
		t    func() qlog.Tracer
	}{
		{"off", func() qlog.Tracer { return nil }},
		{"nop", func() qlog.Tracer { return nopTracer{} }},
		{"qlog", func() qlog.Tracer { return qlog.NewWriter(discard{}, qlog.ConnInfo{Role: qlog.Client}, qlog.Title) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := OpenPair(b, Config{}, Link{})
			p.Cli.SetTracer(p.Now, bc.t())
			p.Srv.SetTracer(p.Now, bc.t())
			chunk := make([]byte, p.Cli.cfg.MSS())
			rd := make([]byte, 64<<10)
			b.ReportAllocs()
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for range b.N {
				p.Cli.out.write(chunk)
				p.Run(100 * time.Microsecond)
				p.Srv.in.read(rd)
			}
		})
	}
}

// A path that drops everything the client sends for a second: the
// retransmission timeout declares the flight lost (trigger pto_expired)
// and the metrics show the window it leaves.
func TestTracerSeesTimeoutLosses(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 5 * time.Millisecond})
	r := &recorder{}
	p.Cli.SetTracer(p.Now, r)
	cut := true
	p.Filter = func(from *Session, d []byte) bool { return !(cut && from == p.Cli) }
	p.Cli.out.write(make([]byte, 20_000))
	p.Run(time.Second)
	cut = false
	p.Run(5 * time.Second) // the backed-off timeout resends, and the flight drains
	// Then one data packet dropped among many: the packet threshold's,
	// not the timeout's.
	dropped, seen := int64(-1), 0
	p.Filter = func(from *Session, d []byte) bool {
		h, _, err := wire.ParseHeader(d)
		if from == p.Cli && err == nil && h.Type == wire.TypeData && dropped < 0 {
			if seen++; seen == 40 { // the window has grown back: packets follow it
				dropped = h.PN
				return false
			}
		}
		return true
	}
	for i, w := 0, 0; w < 200_000 && i < 1000; i++ { // a stream: packets follow the dropped one
		w += p.Cli.out.write(make([]byte, 200_000-w))
		p.Run(10 * time.Millisecond)
		p.Srv.in.read(make([]byte, 1<<20))
	}
	p.Run(time.Second)
	require.GreaterOrEqual(t, dropped, int64(0))
	lost := r.named("lost")
	require.Equal(t, dropped, lost[len(lost)-1].pn)
	require.Equal(t, qlog.TriggerReordering, lost[len(lost)-1].s, "a loss after the timeout is not the timeout's")
	var timeouts []traceEvent
	for _, e := range r.named("lost") {
		if e.s == qlog.TriggerTimeout {
			timeouts = append(timeouts, e)
		}
	}
	require.NotEmpty(t, timeouts, "losses declared by the timeout")
	last := r.named("metrics")
	require.NotEmpty(t, last)
	var sawZeroInFlight bool
	for _, e := range last {
		if e.t >= timeouts[0].t && e.m.BytesInFlight == 0 {
			sawZeroInFlight = true // the timeout emptied the flight
		}
	}
	require.True(t, sawZeroInFlight, "metrics after the timeout show nothing in flight")
}
