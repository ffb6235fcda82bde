package emu

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
)

// item is one datagram inside the relay: a pooled buffer and the netem
// packet that carries it across a link. Items are recycled, never freed,
// until Close: the steady state allocates nothing.
type item struct {
	pkt   netem.Packet // Handle = index in Relay.items; Data = buf[:n]
	buf   []byte
	large bool // buf is from the large free list
	idx   int  // index in Relay.items, -1 until the scheduler registers it
	cl    *client
	dir   direction
	tos   uint8      // the whole TOS / traffic-class byte (DSCP << 2 | ECN)
	at    clock.Mono // when the reader got it
	wall  time.Time  // the same instant in wall time (TUN only: TUNPacket.In)
}

// pool is the free list of items, in two buffer sizes: smallBuf for
// ordinary datagrams, largeSize (MaxDatagram) for the rest. Readers take,
// the scheduler gives back; a mutex is cheap next to the syscalls around
// it. A sync.Pool would do too, but items must stay registered with the
// scheduler (Packet.Handle), which a pool that forgets items at each GC
// would make grow without bound.
type pool struct {
	largeSize int // set before any goroutine starts

	mu           sync.Mutex
	small, large []*item
	dead         bool // after Close: drop instead of keeping
}

func (p *pool) get(n int) *item {
	large := n > smallBuf
	p.mu.Lock()
	list := &p.small
	if large {
		list = &p.large
	}
	if k := len(*list); k > 0 {
		it := (*list)[k-1]
		(*list)[k-1] = nil
		*list = (*list)[:k-1]
		p.mu.Unlock()
		return it
	}
	p.mu.Unlock()
	size := smallBuf
	if large {
		size = p.largeSize
	}
	return &item{buf: make([]byte, size), large: large, idx: -1}
}

func (p *pool) put(it *item) {
	it.cl = nil
	it.pkt.Data = nil
	p.mu.Lock()
	if !p.dead {
		if it.large {
			p.large = append(p.large, it)
		} else {
			p.small = append(p.small, it)
		}
	}
	p.mu.Unlock()
}

// reset releases every buffer; later puts are dropped.
func (p *pool) reset() {
	p.mu.Lock()
	p.dead = true
	p.small, p.large = nil, nil
	p.mu.Unlock()
}

// readFront reads the front socket: datagrams from clients, forward.
func (r *Relay) readFront() {
	defer r.wg.Done()
	hdr := headerBytesV6
	if r.frontV4 {
		hdr = headerBytesV4
	}
	r.readLoop(r.front, forward, hdr, nil)
}

// readBack reads one of a client's back sockets (its current one, until
// Rebind replaces it): the server's replies, reverse.
func (r *Relay) readBack(cl *client, back *net.UDPConn) {
	defer r.wg.Done()
	hdr := headerBytesV6
	if cl.backV4 {
		hdr = headerBytesV4
	}
	r.readLoop(back, reverse, hdr, cl)
}

// readLoop reads datagrams from c until it is closed and hands each, in a
// pooled buffer, to the scheduler. cl is the owner of every datagram (a
// back socket) or nil to look the client up by source address (front).
func (r *Relay) readLoop(c *net.UDPConn, dir direction, hdr int, cl *client) {
	ctr := &r.fwdC
	if dir == reverse {
		ctr = &r.revC
	}
	// One byte more than MaxDatagram, so a larger datagram shows as n >
	// MaxDatagram (the kernel truncates it to the buffer).
	scratch := make([]byte, r.cfg.MaxDatagram+1)
	oob := make([]byte, oobSize)
	for {
		n, oobn, _, from, err := c.ReadMsgUDPAddrPort(scratch, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			ctr.readErr.Add(1)
			r.log.Debug("emu: read", "socket", c.LocalAddr(), "err", err)
			select {
			case <-r.done:
				return
			default:
				continue
			}
		}
		if n > r.cfg.MaxDatagram {
			ctr.oversize.Add(1)
			continue
		}
		now := r.clk.Now()
		owner := cl
		if owner == nil {
			if owner = r.clientFor(from, now); owner == nil {
				continue
			}
		}
		if r.cfg.Filter != nil && !r.cfg.Filter(Datagram{Forward: dir == forward, Client: owner.addr, Data: scratch[:n]}) {
			ctr.filtered.Add(1)
			continue
		}
		ctr.in.Add(1)
		ctr.inBytes.Add(uint64(n))
		it := r.pool.get(n)
		it.pkt.Data = it.buf[:copy(it.buf, scratch[:n])]
		it.pkt.Size = n + hdr
		it.tos = parseTOS(oob[:oobn])
		it.pkt.DSCP = it.tos >> 2
		it.pkt.FlowKey = owner.flow | uint64(dir)
		it.cl, it.dir = owner, dir
		it.at = now
		if !r.submit(it) {
			return
		}
	}
}

// sched is the single-threaded scheduler both drivers share: readers send
// items on in, one goroutine (schedule) enqueues them on the forward or
// reverse link, polls both and hands every packet that crossed to out. The
// driver embeds it, sets clk, spin, out and the links, and starts
// schedule on wg.
type sched struct {
	clk  clock.Clock
	spin time.Duration // busy-wait this long before each link event
	// out writes one item that crossed its link; called by the scheduler
	// under mu. The scheduler recycles the item when out returns.
	out func(it *item)

	pool pool

	in   chan *item    // readers → scheduler
	wake chan struct{} // SetPath → scheduler: re-arm the timer
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	// mu guards the links, the item registry and the driver's write
	// state; the scheduler holds it while it works, SetPath and Stats
	// briefly.
	mu       sync.Mutex
	fwd, rev *netem.Link
	items    []*item // by Packet.Handle
}

// initSched makes the channels and builds both links from their paths
// (forward seed·2+1, reverse seed·2+2, as bench/sim). Errors are the
// links' validation errors, wrapped in ErrInvalidConfig.
func (s *sched) initSched(clk clock.Clock, spin time.Duration, fwd, rev scenario.Path, seed uint64) error {
	s.clk, s.spin = clk, spin
	s.in = make(chan *item, 1024)
	s.wake = make(chan struct{}, 1)
	s.done = make(chan struct{})
	drop := func(_ clock.Mono, p *netem.Packet, _ netem.DropReason) {
		s.release(p) // called under s.mu, from inside a link call
	}
	var err error
	if s.fwd, err = netem.NewLink(netem.LinkConfigFromPath(fwd, seed*2+1), drop); err != nil {
		return fmt.Errorf("%w: forward: %w", ErrInvalidConfig, err)
	}
	if s.rev, err = netem.NewLink(netem.LinkConfigFromPath(rev, seed*2+2), drop); err != nil {
		return fmt.Errorf("%w: reverse: %w", ErrInvalidConfig, err)
	}
	// A trace or a rate walk starts at its link's first now: make that
	// the driver's start, not whenever the first datagram comes.
	now := clk.Now()
	s.fwd.Poll(now)
	s.rev.Poll(now)
	return nil
}

// applyChange applies SetPath's changes under mu and wakes the scheduler.
// closed reports (under mu) whether the driver is closed.
func (s *sched) applyChange(forward, reverse *scenario.PathChange, closed func() bool) error {
	for _, c := range []struct {
		name string
		c    *scenario.PathChange
	}{{"forward", forward}, {"reverse", reverse}} {
		if err := checkChange(c.c); err != nil {
			return fmt.Errorf("emu: set path: %s: %w", c.name, err)
		}
	}
	s.mu.Lock()
	if closed() {
		s.mu.Unlock()
		return ErrClosed
	}
	// Both checked before either is applied (a trace may not load, or
	// meet a queue that refuses it).
	for _, c := range []struct {
		name string
		l    *netem.Link
		c    *scenario.PathChange
	}{{"forward", s.fwd, forward}, {"reverse", s.rev, reverse}} {
		if c.c == nil {
			continue
		}
		if err := c.l.CheckChange(*c.c); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("emu: set path: %s: %w", c.name, err)
		}
	}
	now := s.clk.Now()
	var err error
	if forward != nil {
		err = s.fwd.ApplyChange(now, *forward)
	}
	if reverse != nil && err == nil {
		err = s.rev.ApplyChange(now, *reverse)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if err != nil {
		return fmt.Errorf("emu: set path: %w", err)
	}
	return nil
}

// submit hands it to the scheduler; false (and it recycled) after Close.
func (s *sched) submit(it *item) bool {
	select {
	case s.in <- it:
		return true
	case <-s.done:
		s.pool.put(it)
		return false
	}
}

// discard drops, after every goroutine has stopped, the packets still in
// the links and the arrival channel, and releases the buffers. Call under
// mu (for items) after wg.Wait.
func (s *sched) discard() {
	s.items = nil
	for len(s.in) > 0 {
		<-s.in
	}
	s.pool.reset()
}

// maxBatch bounds how many queued arrivals the scheduler admits before it
// polls the links again.
const maxBatch = 256

// schedule is the scheduler goroutine: it owns the links (under r.mu)
// and runs enqueue arrivals → poll due packets and write them → sleep
// until the next link event or arrival.
func (r *sched) schedule() {
	defer r.wg.Done()
	timer := time.NewTimer(never)
	defer timer.Stop()
	spinning := false
	for {
		var first *item
		if spinning {
			select {
			case <-r.done:
				return
			case first = <-r.in:
			case <-r.wake:
			default:
				runtime.Gosched()
			}
		} else {
			select {
			case <-r.done:
				return
			case first = <-r.in:
			case <-r.wake:
			case <-timer.C:
			}
		}
		wait, ok := r.service(first)
		spinning = false
		switch {
		case !ok:
			timer.Stop()
		case wait <= r.spin:
			timer.Stop()
			spinning = true
		default:
			// Go ≥ 1.23 timers: Reset needs no drain and never delivers
			// a stale tick.
			timer.Reset(wait - r.spin)
		}
	}
}

// service enqueues first and whatever else has arrived, writes every
// packet the links have delivered by now, and returns how long until the
// links' next event (ok false: both idle and empty).
func (r *sched) service(first *item) (wait time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if first != nil {
		r.enqueue(first)
	admit:
		for range maxBatch {
			select {
			case it := <-r.in:
				r.enqueue(it)
			default:
				break admit
			}
		}
	}
	now := r.clk.Now()
	r.drain(now, r.fwd)
	r.drain(now, r.rev)
	next, ok := r.fwd.NextEvent()
	if at, rok := r.rev.NextEvent(); rok && (!ok || at.Before(next)) {
		next, ok = at, true
	}
	if !ok {
		return 0, false
	}
	return next.Sub(now), true
}

// enqueue registers it (first time only) and offers it to its link.
func (r *sched) enqueue(it *item) {
	if it.idx < 0 {
		it.idx = len(r.items)
		r.items = append(r.items, it)
	}
	it.pkt.Handle = uint64(it.idx)
	l := r.fwd
	if it.dir == reverse {
		l = r.rev
	}
	l.Enqueue(it.at, &it.pkt)
}

// release returns the item behind p to the pool (under r.mu).
func (r *sched) release(p *netem.Packet) {
	if p.Handle < uint64(len(r.items)) {
		r.pool.put(r.items[p.Handle])
	}
}

// drain writes every packet l has delivered by now.
func (r *sched) drain(now clock.Mono, l *netem.Link) {
	for p := l.Poll(now); p != nil; p = l.Poll(now) {
		if p.Handle >= uint64(len(r.items)) {
			continue // not ours: impossible, but never panic
		}
		it := r.items[p.Handle]
		r.out(it)
		r.pool.put(it)
	}
}

// send writes one datagram that crossed its link: forward through the
// client's back socket to the server, reverse through the front socket to
// the client, re-marked with the TOS it arrived with.
func (r *Relay) send(it *item) {
	ctr, v4 := &r.fwdC, it.cl.backV4
	if it.dir == reverse {
		ctr, v4 = &r.revC, it.cl.v4
	}
	if r.blackout.Load() {
		ctr.blackout.Add(1)
		return
	}
	if r.cfg.Observe != nil {
		r.cfg.Observe(Datagram{Forward: it.dir == forward, Client: it.cl.addr, Data: it.pkt.Data, Corrupted: it.pkt.Corrupted})
	}
	var oob []byte
	if it.tos != 0 && !r.noMark {
		oob = tosOOB(r.oob, it.tos, v4)
	}
	err := r.write(it, oob)
	if err != nil && oob != nil && errors.Is(err, syscall.EINVAL) {
		r.noMark = true
		r.log.Warn("emu: the kernel refused a TOS control message; DSCP is no longer re-marked on egress", "err", err)
		err = r.write(it, nil)
	}
	if err != nil {
		ctr.writeErr.Add(1)
		r.log.Debug("emu: write", "client", it.cl.addr, "err", err)
		return
	}
	ctr.out.Add(1)
	ctr.outBytes.Add(uint64(len(it.pkt.Data)))
}

func (r *Relay) write(it *item, oob []byte) error {
	var err error
	switch {
	case it.dir == forward && oob == nil:
		_, err = it.cl.back.Load().Write(it.pkt.Data)
	case it.dir == forward:
		_, _, err = it.cl.back.Load().WriteMsgUDPAddrPort(it.pkt.Data, oob, netip.AddrPort{})
	case oob == nil:
		_, err = r.front.WriteToUDPAddrPort(it.pkt.Data, it.cl.addr)
	default:
		_, _, err = r.front.WriteMsgUDPAddrPort(it.pkt.Data, oob, it.cl.addr)
	}
	return err
}
