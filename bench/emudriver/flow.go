package emudriver

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/bench/report"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport"
)

// flowRun is one scenario flow in a run: its endpoints and measurements.
type flowRun struct {
	idx        int
	spec       scenario.Flow
	dscp       uint8
	start, end time.Duration // since the origin

	// Bulk and update flows: the two Conns, and which one sends the
	// flow's data (the server side for a reverse flow).
	client, server   *transport.Conn
	sender, receiver *transport.Conn
	tap              *tap // reverse flows: the client side's tap

	// Cbr flows: the client side's socket (a forward flow's source, a
	// reverse flow's sink) and, for a reverse flow, the relay back socket
	// the shim sends to, learned from a hello.
	cbr     *net.UDPConn
	revAddr netip.AddrPort
	// cbrSend sends one datagram from the flow's source; cbrIn, if set, is
	// the sink socket the driver reads (else the network counts arrivals).
	cbrSend   func([]byte) error
	cbrIn     *net.UDPConn
	learned   chan struct{}
	learnOnce sync.Once

	stopOnce sync.Once
	// onStop, if set, ends what the network runs for the flow (at its end).
	onStop func()
	// tunf is the TUN router's state of the flow (emu --tun).
	tunf *tunFlow

	mu  sync.Mutex // guards m and fin
	m   measures
	fin struct {
		sender, receiver transport.Stats // at the flow's end
		ok               bool
	}
}

// measures accumulates what report.Flow needs.
type measures struct {
	owdMs  []float64 // per delivered packet
	baseMs []float64 // the path's propagation delay when it was sent
	// queueMs is each packet's queueing delay when the path measures it
	// (the TUN router); then baseMs is empty.
	queueMs []float64
	bytes   int64 // application bytes delivered within the flow's time
	// jainBytes: bytes delivered in Jain's window (forward bulk flows).
	jainBytes int64
	// Telemetry: messages written and read; per message, the latency
	// from its write to the router and to its read (ms).
	msgSent, msgRecv int64
	// link counts the flow's packets and bytes at the TUN router, [0]
	// in the data direction, [1] in the return direction.
	linkPkts, linkBytes [2]int64
	w2rMs, e2eMs        []float64
	rttMs               []float64 // request/response: write → response read
	// Cbr counters (the fresh flows' come from transport.Stats).
	cbrSent, cbrSentBytes, cbrDelivered int64
	age                                 acp.AgeMeter
	// Controller samples every statsEvery while active (bulk).
	samples, slowStart int64
	signals            map[string]int64
	modes              map[string]int64 // samples per Stats.Mode
	clockErrSum        float64          // ms
	clockErrN          int64
	// The current time-series interval, and the series.
	ivBytes  int64
	ivOWDSum float64
	ivOWDN   int64
	series   report.Series
}

// datagramSize is the MaxDatagram the flow's own end needs: the stream's
// segment (the scenario's mss) or the update (its size) plus fresh's
// 54 bytes of header and frame, at least transport's minimum of 256.
func (f *flowRun) datagramSize(s *scenario.Scenario) int {
	payload := s.MSS
	if f.spec.IsUpdates() {
		payload = f.spec.Size
	}
	if f.spec.Kind == scenario.KindCBR {
		return 256
	}
	// The AEAD tag on top, so that the stream's payload per packet is the
	// scenario's MSS as in the (plaintext) simulator.
	return min(max(payload+wire.HeaderLen+wire.DataOverhead+wire.ProtectedOverhead, 256), 65000)
}

// putNS and getNS carry a run time in the first 8 bytes of a payload.
func putNS(b []byte, t time.Duration) { binary.BigEndian.PutUint64(b, uint64(t)) }
func getNS(b []byte) time.Duration    { return time.Duration(binary.BigEndian.Uint64(b)) }

// monoOf maps a run time to the AgeMeter's time base.
func monoOf(t time.Duration) clock.Mono { return clock.Mono(0).Add(t) }
