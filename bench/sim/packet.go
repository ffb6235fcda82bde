package sim

import (
	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/clock"
)

// ipUDPOverhead is what IPv4 (20 bytes) and UDP (8) add to every datagram on
// the wire; the session's datagrams carry fresh's own header inside.
const ipUDPOverhead = 28

// packet is the simulator's record of one datagram in the network; the
// netem packet's Handle indexes the pool.
type packet struct {
	flow  int
	toSrv bool       // bound for the flow's server (data direction) or its client
	cbr   bool       // a CBR flow's packet: no session at either end
	data  bool       // carries stream data or an update (measured at arrival)
	sent  clock.Mono // true send time (the sender's clock is the truth)
	dgram []byte     // the session's datagram (reused buffer)
	net   netem.Packet
}

// pool recycles packet records and their buffers, so a long run does not
// allocate per packet.
type pool struct {
	recs []*packet
	free []uint64
}

func (p *pool) get() *packet {
	if n := len(p.free); n > 0 {
		h := p.free[n-1]
		p.free = p.free[:n-1]
		r := p.recs[h]
		*r = packet{dgram: r.dgram[:0]}
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
