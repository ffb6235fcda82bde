package quichook

import (
	"net"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// The sender goroutine: it releases queued datagrams as the controllers
// allow and runs the feedback, loss and retransmission timers.

// feedbackOut is a feedback datagram the sender goroutine writes.
type feedbackOut struct {
	b, oob []byte
	to     *net.UDPAddr
}

// run is the sender goroutine: it sends queued datagrams as each peer's
// controller allows (window and pacing), sends feedback that is due, and
// runs the loss and retransmission timers.
func (c *PacketConn) run() {
	defer close(c.senderDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var fbs []feedbackOut // feedback due, written after the lock
	batch := make([]pending, 0, 64)
	for {
		c.writeMu.Lock()
		c.mu.Lock()
		if c.closed {
			for _, p := range c.peers {
				for p.queue.n > 0 {
					c.bufs.Put(p.queue.pop())
				}
			}
			c.mu.Unlock()
			c.writeMu.Unlock()
			return
		}
		now, wallUS := c.now()
		var next clock.Mono
		soonest := func(t clock.Mono) {
			if t != 0 && (next == 0 || t.Before(next)) {
				next = t
			}
		}
		batch, fbs = batch[:0], fbs[:0]
		out := func(p *peer) *feedbackOut {
			if len(fbs) == cap(fbs) {
				fbs = append(fbs, feedbackOut{b: make([]byte, 0, maxFeedbackLen)})
			} else {
				fbs = fbs[:len(fbs)+1]
			}
			f := &fbs[len(fbs)-1]
			f.oob, f.to = c.oobFor(1, p), p.udp
			return f
		}
		for _, p := range c.peers {
			if !p.validated {
				continue // nothing shimmed to it, nothing to time
			}
			if p.haveCookie && p.rx.feedbackDue(now, &c.cfg) {
				f := out(p)
				f.b = p.rx.build(now, wallUS, p.peerCookie, f.b[:0])
				c.st.feedbackSent++
			} else if p.haveCookie {
				soonest(p.rx.nextDue(&c.cfg))
			}
			if t := p.tx.deadline(); t != 0 && !now.Before(t) {
				// After a timeout the peer may have restarted and lost the
				// secret its cookie came from: a hello that echoes it lets a
				// restarted peer answer with its new cookie.
				if p.tx.onTimer(now) && p.hooked() && (p.lastHello == 0 || now.Sub(p.lastHello) >= helloInterval) {
					p.lastHello = now
					f := out(p)
					f.b = appendHello(f.b[:0], p.hello())
					c.st.hellosSent++
				}
			}
			soonest(p.tx.deadline())
			c.account(p, now)
			// Every datagram of one round carries the same header size (the
			// echo, if one is pending, rides on all of them) so that a run
			// of equal-sized ones can go as one segmented send.
			echo := p.tx.echo
			for p.queue.n > 0 && len(batch) < cap(batch) && p.tx.canSend(now) {
				batch = append(batch, c.stamp(p, p.queue.pop(), now, wallUS, echo))
				p.tx.echo = false
			}
			if p.queue.n > 0 && p.tx.ctl.CanSend(p.tx.inFlight()) {
				soonest(p.tx.pace.Next())
			}
		}
		// Until it sleeps again the goroutine runs now (a batch to send: it
		// loops at once) or at next; writers compare their deadlines with it.
		c.armed = next
		if len(batch) > 0 {
			c.armed = now
		}
		c.mu.Unlock()
		for _, f := range fbs {
			c.writeOne(f.b, f.oob, f.to)
		}
		c.sendBatch(batch)
		c.writeMu.Unlock()
		for _, w := range batch {
			c.bufs.Put(w.ob)
			<-w.p.slots
		}
		if len(batch) > 0 {
			continue
		}
		wait := time.Hour
		if next != 0 {
			wait = max(next.Sub(c.clk.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-c.wake:
		case <-timer.C:
		case <-c.done:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// wakeBy makes the sender goroutine run by t (0: no deadline): it kicks
// it unless its timer fires by then anyway. Under c.mu.
func (c *PacketConn) wakeBy(t clock.Mono) {
	if t != 0 && (c.armed == 0 || t.Before(c.armed)) {
		c.armed = t
		c.kick()
	}
}

// kick wakes the sender goroutine.
func (c *PacketConn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// ring is a peer's queue: a fixed ring of Config.QueuePackets slots (the
// slots channel guarantees it never overflows).
type ring struct {
	b       []*outBuf
	head, n int
}

func (r *ring) push(ob *outBuf) {
	r.b[(r.head+r.n)%len(r.b)] = ob
	r.n++
}

func (r *ring) pop() *outBuf {
	ob := r.b[r.head]
	r.b[r.head] = nil
	r.head = (r.head + 1) % len(r.b)
	r.n--
	return ob
}
