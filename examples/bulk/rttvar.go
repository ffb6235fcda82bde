package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/qlog"
)

// rttVars keeps the RTT variation of a test's sending connections: RFC
// 6298's RTTVAR, iperf3's rttvar (TCP's tcpi_rttvar). transport.Stats does
// not carry it; the recovery metrics the transport hands a Config.Tracer
// do (qlog's rtt_variance), so a sending side's data connections are
// traced with it, and every event but those metrics is dropped. Tracing
// costs the sender some CPU on every packet (the transport describes each
// one to the tracer), so only a side that writes JSON traces: the text
// output has no rttvar column.
type rttVars struct {
	mu sync.Mutex
	m  map[uint64]*rttTracer // by the client's connection ID, the same at both ends
}

// tracer is a qlog.NewTracer (Config.Tracer).
func (r *rttVars) tracer(info qlog.ConnInfo) (qlog.Tracer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[uint64]*rttTracer{}
	}
	tr := &rttTracer{}
	r.m[info.ConnID] = tr
	return tr, nil
}

// of returns c's tracer, nil if it has none (r nil: not traced).
func (r *rttVars) of(c *transport.Conn) *rttTracer {
	if r == nil {
		return nil
	}
	id, _ := c.ConnectionIDs()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

// rttTracer is one connection's: the latest RTTVAR.
type rttTracer struct{ v atomic.Int64 } // ns

// get returns the latest RTTVAR, 0 before the first RTT sample.
func (t *rttTracer) get() time.Duration { return time.Duration(t.v.Load()) }

func (t *rttTracer) MetricsUpdated(_ time.Duration, m qlog.Metrics) {
	if m.RTTVariance > 0 { // zero: unknown yet (qlog.Metrics)
		t.v.Store(int64(m.RTTVariance))
	}
}

func (*rttTracer) PacketSent(time.Duration, *qlog.Packet)               {}
func (*rttTracer) PacketReceived(time.Duration, *qlog.Packet)           {}
func (*rttTracer) PacketLost(time.Duration, string, int64, string)      {}
func (*rttTracer) CongestionStateUpdated(time.Duration, string, string) {}
func (*rttTracer) OWDSample(time.Duration, qlog.OWDSample)              {}
func (*rttTracer) ClockOffset(time.Duration, time.Duration, bool, bool) {}
func (*rttTracer) UpdateAge(time.Duration, int64, time.Duration, bool)  {}
func (*rttTracer) Close() error                                         { return nil }
