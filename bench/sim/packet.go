package sim

import (
	"time"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
)

// Wire sizes. A data packet carries MSS payload bytes plus headerBytes
// (IPv4 20 + UDP 8 + our header 12); an ACK frame is ackBytes on the wire
// whatever it carries (ranges and OWD samples compress well; a fixed size
// keeps reverse-path load independent of loss patterns).
const (
	headerBytes = 40
	ackBytes    = 64
)

// Limits of one ACK frame, as a real encoder would have.
const (
	maxAckRanges  = 16
	maxAckSamples = 32
)

type pktKind uint8

const (
	kindData   pktKind = iota // bulk data
	kindUpdate                // status update
	kindCBR                   // unresponsive UDP
	kindAck                   // ACK frame for data or updates
)

type owdSample struct {
	pn  cc.PacketNumber
	owd time.Duration
}

// ackFrame is what an ACK carries (DESIGN "Wire format"): ranges of
// acknowledged packet numbers, newest first; the ACK delay; one
// receiver-stamped OWD sample per newly received packet; whether the
// receiver's clock offset is trustworthy; and the receiver's send stamp T3
// for in-band clock estimation.
type ackFrame struct {
	ranges   [maxAckRanges]recovery.Range
	nRanges  int
	ackDelay time.Duration
	samples  [maxAckSamples]owdSample
	nSamples int
	synced   bool
	t3       clock.Stamp
}

// packet is the simulator's record of one packet in the network; the netem
// packet's Handle indexes the pool.
type packet struct {
	kind     pktKind
	flow     int
	pn       cc.PacketNumber
	payload  int
	chunk    int64       // bulk stream chunk index
	sent     clock.Mono  // true send time (the sender's clock is the truth)
	stamp    clock.Stamp // sender's wall stamp PStime
	gen      clock.Mono  // update generation time
	echoT3   clock.Stamp // latest ACK's T3 echoed on data (0 = none) …
	echoT4   clock.Stamp // … and when the sender received it
	ack      ackFrame
	net      netem.Packet
	inFlight bool
}

// pool recycles packet records so a long run does not allocate per packet.
type pool struct {
	recs []*packet
	free []uint64
}

func (p *pool) get() *packet {
	if n := len(p.free); n > 0 {
		h := p.free[n-1]
		p.free = p.free[:n-1]
		r := p.recs[h]
		*r = packet{}
		r.net.Handle = h
		return r
	}
	r := &packet{}
	r.net.Handle = uint64(len(p.recs))
	p.recs = append(p.recs, r)
	return r
}

func (p *pool) put(r *packet) { p.free = append(p.free, r.net.Handle) }

func (p *pool) byHandle(h uint64) *packet { return p.recs[h] }
