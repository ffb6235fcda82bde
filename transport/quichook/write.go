package quichook

import (
	"fmt"
	"net"
	"slices"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/cmsg"
)

// The write path: quic-go's writes, shimmed and gated by each peer's
// controller or sent plain, and the batched, segmented socket writes.

// maxHellos is how many of its first datagrams to a peer the hook sends a
// hello before: enough to survive a lossy start, few enough that a peer
// without the hook sees a handful of tiny datagrams it drops.
const maxHellos = 8

// pooledPayload is the payload room of a pooled send buffer: quic-go's
// largest datagram (1452 bytes) and then some. Larger ones get their own.
const pooledPayload = 2048

// outBuf is one queued datagram: room for the shim header, then quic-go's.
type outBuf struct {
	b []byte // maxHeaderLen + payload capacity
	n int    // payload length
}

// write sends one datagram, counting errors. A datagram too big for the
// path (EMSGSIZE with don't-fragment set) is a loss like any other.
func (c *PacketConn) write(b, oob []byte, to *net.UDPAddr) {
	if _, _, err := c.conn.WriteMsgUDP(b, oob, to); err != nil {
		c.mu.Lock()
		c.st.sendErrors++
		c.mu.Unlock()
	}
}

// WriteTo is quic-go's write. To a peer with the hook the datagram is
// queued for the sender goroutine, waiting up to Config.QueueWait for room
// (then dropped and counted); to one without it (or not yet known to have
// it) it goes straight out as plain QUIC, after a hello while the peer is
// new. It never fails for a drop: quic-go recovers from it as from any
// loss.
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ap, ok := addrPort(addr)
	if !ok {
		return 0, fmt.Errorf("quichook: not a UDP address: %v", addr)
	}
	if len(b) > readBufLen {
		return 0, fmt.Errorf("quichook: datagram of %d bytes", len(b))
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	p := c.peerFor(ap)
	if p == nil || !p.hooked() {
		// Plain, after a hello while the peer is new. The hellos are not
		// held to the anti-amplification limit: they ride on quic-go's
		// first datagrams to the address, which quic-go's own limit
		// (RFC 9000 §8.1) bounds, and add at most 22 bytes to each.
		var hb []byte
		ua := net.UDPAddrFromAddrPort(ap)
		if p != nil {
			if p.hellos < maxHellos {
				p.hellos++
				hb = appendHello(make([]byte, 0, helloEchoLen), p.hello())
				c.st.hellosSent++
			}
			ua = p.udp
		}
		c.st.plainSent++
		c.mu.Unlock()
		if hb != nil {
			c.write(hb, nil, ua)
		}
		_, err := c.conn.WriteToUDP(b, ua)
		return len(b), err
	}
	c.mu.Unlock()
	if c.sendDirect(p, b, len(b)) == len(b) {
		return len(b), nil
	}
	select {
	case p.slots <- struct{}{}:
	default:
		t := time.NewTimer(c.cfg.QueueWait)
		select {
		case p.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			c.mu.Lock()
			c.st.queueDrops++
			c.mu.Unlock()
			return len(b), nil
		case <-c.done:
			t.Stop()
			return 0, net.ErrClosed
		}
	}
	ob := c.bufs.Get().(*outBuf)
	if len(b) > len(ob.b)-maxHeaderLen {
		ob = &outBuf{b: make([]byte, maxHeaderLen+len(b))} // rare: quic-go's datagrams fit the pooled size
	}
	ob.n = copy(ob.b[maxHeaderLen:], b)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.bufs.Put(ob)
		return 0, net.ErrClosed
	}
	if c.peers[p.addr] != p { // evicted meanwhile: a loss like any other
		c.st.queueDrops++
		c.mu.Unlock()
		c.bufs.Put(ob)
		return len(b), nil
	}
	first := p.queue.n == 0
	if first {
		c.account(p, c.clk.Now())
	}
	p.queue.push(ob)
	c.mu.Unlock()
	if first {
		// Otherwise the sender goroutine is awake already, or waiting for
		// the window or the pacer, which wake it themselves.
		c.kick()
	}
	return len(b), nil
}

// WriteMsgUDP is quic-go's write when it sees an OOBCapablePacketConn
// (as the PacketConn is, so that quic-go packs runs of packets with its
// segmentation-offload path instead of one send per packet). b may hold a
// run of datagrams of one size (UDP_SEGMENT in oob), which the hook takes
// apart: each is a datagram of its own to the controller. The rest of oob
// (quic-go's ECN marks, its source address) is not carried: the hook marks
// datagrams with its own DSCP, so quic-go's ECN validation (RFC 9000
// §13.4.2) finds no marks and turns ECN off.
func (c *PacketConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	seg := cmsg.SegmentSize(oob)
	if seg <= 0 || seg >= len(b) {
		_, err = c.WriteTo(b, addr)
		return len(b), len(oob), err
	}
	off := 0
	if ap, ok := addrPort(addr); ok {
		c.mu.Lock()
		p := c.peers[ap]
		hooked := p != nil && p.hooked()
		c.mu.Unlock()
		if hooked {
			off = c.sendDirect(p, b, seg)
			off += c.enqueueRun(p, b[off:], seg)
		}
	}
	for ; off < len(b); off += seg {
		if _, err := c.WriteTo(b[off:min(off+seg, len(b))], addr); err != nil {
			return off, 0, err
		}
	}
	return len(b), len(oob), nil
}

// enqueueRun queues as many datagrams of a segmented write to a hooked
// peer as there is room for without waiting, under one lock, and returns
// how many bytes of b it took (WriteTo does the rest, waiting as it does).
func (c *PacketConn) enqueueRun(p *peer, b []byte, seg int) int {
	if seg > pooledPayload || len(b) == 0 {
		return 0
	}
	var obs [maxSegments]*outBuf
	k, off := 0, 0
	for ; off < len(b) && k < len(obs); off += seg {
		select {
		case p.slots <- struct{}{}:
		default:
			goto push
		}
		ob := c.bufs.Get().(*outBuf)
		ob.n = copy(ob.b[maxHeaderLen:], b[off:min(off+seg, len(b))])
		obs[k] = ob
		k++
	}
push:
	if k == 0 {
		return 0
	}
	c.mu.Lock()
	if c.closed || c.peers[p.addr] != p {
		c.mu.Unlock()
		for _, ob := range obs[:k] {
			c.bufs.Put(ob)
		}
		return 0 // WriteTo fails or drops them the same way
	}
	first := p.queue.n == 0
	if first {
		c.account(p, c.clk.Now())
	}
	for _, ob := range obs[:k] {
		p.queue.push(ob)
	}
	c.mu.Unlock()
	if first {
		c.kick()
	}
	return min(k*seg, len(b))
}

// sendDirect sends what it can of b, a run of datagrams of size seg (one
// datagram if seg >= len(b)), straight from the caller's goroutine, and
// returns how many bytes it took: when nothing is queued for p, as many
// as the controller's window and pacer allow now. Most datagrams of an
// unhurried flow, and every ACK-only one, so skip the queue and the hop
// to the sender goroutine.
func (c *PacketConn) sendDirect(p *peer, b []byte, seg int) int {
	seg = min(seg, len(b))
	if seg == 0 || seg > pooledPayload {
		return 0
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	now, wallUS := c.now()
	if c.closed || c.peers[p.addr] != p || p.queue.n > 0 || !p.tx.canSend(now) {
		c.mu.Unlock()
		return 0
	}
	c.account(p, now)
	batch := c.directBatch[:maxSegments]
	k, off, echo := 0, 0, p.tx.echo
	for off < len(b) && k < len(batch) && p.tx.canSend(now) {
		ob := &c.direct[k]
		ob.n = copy(ob.b[maxHeaderLen:], b[off:min(off+seg, len(b))])
		batch[k] = c.stamp(p, ob, now, wallUS, echo)
		batch[k].p = nil // holds no queue slot
		k++
		off += ob.n
	}
	p.tx.echo = false
	c.wakeBy(p.tx.deadline()) // the retransmission timeout of what is now in flight
	c.mu.Unlock()
	c.sendBatch(batch[:k])
	return off
}

// stamp numbers one datagram for p, records it in flight and writes its
// header; echo says whether it carries the echo of the latest feedback.
// Under c.mu (and c.writeMu, until the datagram is written).
func (c *PacketConn) stamp(p *peer, ob *outBuf, now clock.Mono, wallUS int64, echo bool) pending {
	h := dataHeader{cookie: p.peerCookie, sent: wallUS, echo: echo, t3: p.tx.t3, t4: p.tx.t4}
	off := maxHeaderLen - h.len()
	h.seq = p.tx.onSent(now, h.len()+ob.n)
	h.put(ob.b[off:])
	c.st.shimSent++
	return pending{ob: ob, off: off, oob: c.oobFor(0, p), to: p.udp, p: p}
}

// batchConn is what x/net's ipv4 and ipv6 PacketConns share.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// writeBatch writes every message; one that fails (too big for the path,
// say) is counted and skipped, the rest still go. A segmented message the
// kernel refuses turns segmentation off and goes again one datagram at a
// time.
func (c *PacketConn) writeBatch(ms []ipv4.Message) {
	for len(ms) > 0 {
		n, err := c.batch.WriteBatch(ms, 0)
		if err != nil {
			n = max(n, 0)
			if n < len(ms) && len(ms[n].Buffers) > 1 {
				c.gso.Store(false)
				m := ms[n]
				for _, b := range m.Buffers {
					c.writeOne(b, c.oobWithoutGSO(m.OOB), m.Addr)
				}
			} else {
				c.count(func(s *counters) { s.sendErrors++ })
			}
			n++
		}
		ms = ms[min(n, len(ms)):]
	}
}

// oobWithoutGSO returns a segmented message's control messages without
// the segment size (the TOS message, if any, comes first).
func (c *PacketConn) oobWithoutGSO(oob []byte) []byte {
	if cmsg.PerPacketTOS && len(oob) > 0 {
		return oob[:len(c.oob[0][0])]
	}
	return nil
}

func (c *PacketConn) writeOne(b, oob []byte, to net.Addr) {
	ua, _ := to.(*net.UDPAddr)
	if _, _, err := c.conn.WriteMsgUDP(b, oob, ua); err != nil {
		c.count(func(s *counters) { s.sendErrors++ })
	}
}

// maxSegments bounds one segmented send (the kernel's UDP_MAX_SEGMENTS
// is 64, and the whole must fit one 64 KiB UDP datagram).
const maxSegments = 64

// sendBatch writes a batch (under c.writeMu): runs of datagrams to one
// peer of one size (the last may be shorter) as one segmented message
// where the kernel can, the rest one message each, all in one sendmmsg.
func (c *PacketConn) sendBatch(batch []pending) {
	c.wms, c.woob = c.wms[:0], c.woob[:0]
	gso := c.gso.Load()
	// The control messages of every message go into one buffer, which must
	// not move while the messages point into it.
	c.woob = slices.Grow(c.woob, len(batch)*64)
	// The same for the messages' buffers: one backing array for every
	// batch, not a slice allocated per message.
	c.wbufs = slices.Grow(c.wbufs[:0], len(batch))
	for i := 0; i < len(batch); {
		w := batch[i]
		seg := maxHeaderLen + w.ob.n - w.off
		j, total := i+1, seg
		for gso && j < len(batch) && j-i < maxSegments && batch[j].to == w.to {
			n := maxHeaderLen + batch[j].ob.n - batch[j].off
			if n > seg || total+n > readBufLen-1024 {
				break
			}
			total += n
			j++
			if n < seg {
				break // a shorter one ends the run
			}
		}
		m := ipv4.Message{Addr: w.to, OOB: w.oob}
		n := len(c.wbufs)
		for _, x := range batch[i:j] {
			c.wbufs = append(c.wbufs, x.ob.b[x.off:maxHeaderLen+x.ob.n])
		}
		m.Buffers = c.wbufs[n:len(c.wbufs):len(c.wbufs)]
		if j-i > 1 {
			n := len(c.woob)
			c.woob = cmsg.AppendSegmentSize(append(c.woob, w.oob...), seg)
			m.OOB = c.woob[n:len(c.woob):len(c.woob)]
		}
		c.wms = append(c.wms, m)
		i = j
	}
	if len(c.wms) > 0 {
		c.batchCalls.Add(1)
		c.batchMsgs.Add(int64(len(c.wms)))
	}
	c.writeBatch(c.wms)
}

// pending is one datagram the sender goroutine writes outside the lock.
type pending struct {
	ob  *outBuf
	off int // where the header starts in ob.b
	oob []byte
	to  *net.UDPAddr
	p   *peer
}
