package quichook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/cmsg"
)

// maxHellos is how many of its first datagrams to a peer the hook sends a
// hello before: enough to survive a lossy start, few enough that a peer
// without the hook sees a handful of tiny datagrams it drops.
const maxHellos = 8

// readBufLen is the reader's buffer: any UDP payload.
const readBufLen = 1 << 16

// pooledPayload is the payload room of a pooled send buffer: quic-go's
// largest datagram (1452 bytes) and then some. Larger ones get their own.
const pooledPayload = 2048

// Conn is the hook: a net.PacketConn to hand to quic.Transport{Conn: …}.
// See the package doc. Its methods are safe for concurrent use.
type Conn struct {
	cfg  Config
	conn *net.UDPConn
	clk  clock.Clock
	v6   bool         // an AF_INET6 socket
	oob  [2][2][]byte // [class: 0 data, 1 feedback][0 v4, 1 v6] per-datagram TOS, nil if unsupported

	// writeMu orders the shimmed datagrams on the socket as their sequence
	// numbers are: whoever numbers a batch (the sender goroutine, or a
	// quic-go write sending directly) holds it until the batch is written.
	// It comes before mu.
	writeMu sync.Mutex
	mu      sync.Mutex
	peers   map[netip.AddrPort]*peer
	closed  bool
	st      counters

	wake chan struct{} // the sender goroutine has work (buffered 1)
	// armed is when the sender goroutine runs next on its own (its timer;
	// 0: not before a kick), under mu. A new deadline earlier than that
	// kicks it (wakeBy); a later one does not: the goroutine finds it when
	// it wakes. At loopback rates this spares a goroutine wakeup per
	// feedback datagram at each end.
	armed      clock.Mono
	done       chan struct{} // closed by Close
	senderDone chan struct{}
	closeOnce  sync.Once

	// Batched socket I/O (recvmmsg/sendmmsg on Linux through x/net; one
	// datagram per call elsewhere): the reader keeps the rest of a batch
	// for quic-go's next reads.
	batch  batchConn
	readMu sync.Mutex // quic-go reads from one goroutine; this guards rms anyway
	rms    []ipv4.Message
	rnext  int // next unread message in rms[:rn]
	rn     int
	wms    []ipv4.Message // the batch being written (under writeMu)
	woob   []byte         // its control messages
	wbufs  [][]byte       // its messages' buffers, one slice for all
	// direct holds the datagrams sendDirect writes (under writeMu, which
	// it holds until they are on the socket): no pool round trip for
	// every datagram of a flow that skips the queue.
	direct      []outBuf
	directBatch []pending
	gso         atomic.Bool // segmentation offload works (cleared when the kernel refuses it)
	// Batching achieved: sendmmsg calls, and the messages in them (one per
	// segmented run or lone datagram).
	batchCalls, batchMsgs atomic.Int64
	// The reader's datagram to send back (feedback, a hello's answer),
	// built under mu, sent after it.
	fbuf     []byte
	replyOOB []byte
	replyTo  *net.UDPAddr
	bufs     sync.Pool
}

// peer is one remote address: whether it has the hook, and the sending and
// receiving halves with their controller and clock state.
type peer struct {
	addr   netip.AddrPort
	udp    *net.UDPAddr
	v6     bool // reached through the IPv6 control messages
	hooked bool
	hellos int
	tx     sender
	rx     *receiver
	queue  ring
	slots  chan struct{} // one token per queued datagram: the queue bound
	// Queue occupancy over time: how long datagrams waited in the queue
	// (the hook's window or pacer binding) against how long it was empty
	// (quic-go, its own window or pacer, or the application binding).
	busy, idle    time.Duration
	lastAccounted clock.Mono
	lastActive    clock.Mono // last datagram to or from it
}

// peerIdle is how long a peer must have been silent, with nothing queued
// or in flight, before its state may make room for a new one.
const peerIdle = 30 * time.Second

// outBuf is one queued datagram: room for the shim header, then quic-go's.
type outBuf struct {
	b []byte // maxHeaderLen + payload capacity
	n int    // payload length
}

// New wraps conn, which the Conn owns from then on (Close closes it), and
// starts its sender goroutine.
func New(conn *net.UDPConn, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Conn{
		cfg: cfg, conn: conn, clk: cfg.Clock,
		peers:      map[netip.AddrPort]*peer{},
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		senderDone: make(chan struct{}),
		fbuf:       make([]byte, 0, maxFeedbackLen),
	}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	c.v6 = la != nil && la.IP.To4() == nil
	tos := int(cfg.DSCP.Code()) << 2
	if c.v6 {
		if err := ipv6.NewPacketConn(conn).SetTrafficClass(tos); err != nil && tos != 0 {
			return nil, fmt.Errorf("quichook: set IPv6 traffic class: %w", err)
		}
	}
	if err := ipv4.NewPacketConn(conn).SetTOS(tos); err != nil && tos != 0 && !c.v6 {
		return nil, fmt.Errorf("quichook: set IPv4 TOS: %w", err)
	}
	if cmsg.PerPacketTOS {
		for class, d := range [2]uint8{cfg.DSCP.Code(), cfg.FeedbackDSCP.Code()} {
			c.oob[class][0] = cmsg.TOS(false, int(d)<<2)
			c.oob[class][1] = cmsg.TOS(true, int(d)<<2)
		}
	}
	if c.v6 {
		c.batch = ipv6.NewPacketConn(conn)
	} else {
		c.batch = ipv4.NewPacketConn(conn)
	}
	c.rms = make([]ipv4.Message, readBatch)
	for i := range c.rms {
		c.rms[i].Buffers = [][]byte{make([]byte, readBufLen)}
	}
	c.gso.Store(cmsg.GSO)
	c.bufs.New = func() any { return &outBuf{b: make([]byte, maxHeaderLen+pooledPayload)} }
	c.direct, c.directBatch = make([]outBuf, maxSegments), make([]pending, maxSegments)
	for i, b := 0, make([]byte, maxSegments*(maxHeaderLen+pooledPayload)); i < maxSegments; i++ {
		c.direct[i].b = b[: maxHeaderLen+pooledPayload : maxHeaderLen+pooledPayload]
		b = b[maxHeaderLen+pooledPayload:]
	}
	go c.run()
	return c, nil
}

// Listen opens a UDP socket on addr ("127.0.0.1:0", ":4433", …) and wraps it.
func Listen(addr string, cfg Config) (*Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	c, err := New(uc, cfg)
	if err != nil {
		uc.Close()
		return nil, err
	}
	return c, nil
}

// Close stops the sender goroutine, wakes writers waiting for queue room,
// and closes the socket. Close quic-go's Transport first: the Conn does
// not know it. Queued datagrams are discarded.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
		<-c.senderDone
		err = c.conn.Close()
	})
	return err
}

// LocalAddr is the socket's address.
func (c *Conn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// SetDeadline, SetReadDeadline and SetWriteDeadline set the socket's
// deadlines (quic-go sets the read deadline to unblock its reader on Close).
func (c *Conn) SetDeadline(t time.Time) error      { return c.conn.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.conn.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// SetReadBuffer and SetWriteBuffer size the socket's buffers; SyscallConn
// exposes the socket so that quic-go can check them and set the don't-
// fragment bit (path MTU discovery then finds the MTU with the shim's
// header included: a probe too big for it is lost like any other).
func (c *Conn) SetReadBuffer(n int) error             { return c.conn.SetReadBuffer(n) }
func (c *Conn) SetWriteBuffer(n int) error            { return c.conn.SetWriteBuffer(n) }
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.conn.SyscallConn() }

func (c *Conn) now() (clock.Mono, int64) {
	return c.clk.Now(), c.clk.Wall().UnixMicro()
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	switch a := a.(type) {
	case *net.UDPAddr:
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
	default:
		return netip.AddrPort{}, false
	}
}

// peerFor returns addr's peer, creating it if there is room; nil if not.
// Under c.mu.
func (c *Conn) peerFor(addr netip.AddrPort) *peer {
	now := c.clk.Now()
	if p := c.peers[addr]; p != nil {
		p.lastActive = now
		return p
	}
	if len(c.peers) >= c.cfg.MaxPeers && !c.evictIdle(now) {
		c.st.peersRefused++
		return nil
	}
	ctl, err := c.cfg.NewController(cc.ByteCount(c.cfg.MaxDatagram))
	if err == nil && ctl == nil {
		err = errors.New("NewController returned no controller")
	}
	if err != nil {
		c.cfg.Logger.Error("quichook: controller", "peer", addr, "err", err)
		c.st.peersRefused++
		return nil
	}
	rx, err := newReceiver()
	if err != nil {
		c.st.peersRefused++
		return nil
	}
	ua := net.UDPAddrFromAddrPort(addr)
	if c.v6 && addr.Addr().Is4() {
		// A dual-stack socket reaches IPv4 peers through mapped addresses
		// and marks them with IP_TOS.
		ua = net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(addr.Addr().As16()), addr.Port()))
	}
	p := &peer{addr: addr, lastActive: now, udp: ua, v6: addr.Addr().Is6(), tx: newSender(ctl, c.cfg.FeedbackDelay), rx: rx,
		slots: make(chan struct{}, c.cfg.QueuePackets), queue: ring{b: make([]*outBuf, c.cfg.QueuePackets)}, lastAccounted: now}
	c.peers[addr] = p
	return p
}

// evictIdle forgets the peer silent for longest if it has been for
// peerIdle with nothing queued or in flight, and reports whether it did.
// A forgotten peer that comes back starts over: plain until its next hello
// or shimmed datagram, with a fresh controller. Under c.mu.
func (c *Conn) evictIdle(now clock.Mono) bool {
	var oldest *peer
	for _, p := range c.peers {
		if p.queue.n == 0 && p.tx.inFlight() == 0 && now.Sub(p.lastActive) >= peerIdle &&
			(oldest == nil || p.lastActive.Before(oldest.lastActive)) {
			oldest = p
		}
	}
	if oldest == nil {
		return false
	}
	delete(c.peers, oldest.addr)
	c.st.peersEvicted++
	return true
}

func (c *Conn) oobFor(class int, p *peer) []byte {
	if p.v6 {
		return c.oob[class][1]
	}
	return c.oob[class][0]
}

// write sends one datagram, counting errors. A datagram too big for the
// path (EMSGSIZE with don't-fragment set) is a loss like any other.
func (c *Conn) write(b, oob []byte, to *net.UDPAddr) {
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
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
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
	if p == nil || !p.hooked {
		hello := p != nil && p.hellos < maxHellos
		ua := net.UDPAddrFromAddrPort(ap)
		if p != nil {
			p.hellos += btoi(hello)
			ua = p.udp
		}
		c.st.plainSent++
		c.st.hellosSent += int64(btoi(hello))
		c.mu.Unlock()
		if hello {
			c.write(appendHello(make([]byte, 0, helloLen), typeHello), nil, ua)
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// account adds the time since the last call to the peer's busy or idle
// total. Under c.mu.
func (c *Conn) account(p *peer, now clock.Mono) {
	d := now.Sub(p.lastAccounted)
	if d <= 0 {
		return
	}
	if p.queue.n > 0 {
		p.busy += d
	} else if p.tx.inFlight() > 0 {
		p.idle += d
	}
	p.lastAccounted = now
}

// WriteMsgUDP is quic-go's write when it sees an OOBCapablePacketConn
// (as the Conn is, so that quic-go packs runs of packets with its
// segmentation-offload path instead of one send per packet). b may hold a
// run of datagrams of one size (UDP_SEGMENT in oob), which the hook takes
// apart: each is a datagram of its own to the controller. The rest of oob
// (quic-go's ECN marks, its source address) is not carried: the hook marks
// datagrams with its own DSCP, so quic-go's ECN validation (RFC 9000
// §13.4.2) finds no marks and turns ECN off.
func (c *Conn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	seg := cmsg.SegmentSize(oob)
	if seg <= 0 || seg >= len(b) {
		_, err = c.WriteTo(b, addr)
		return len(b), len(oob), err
	}
	off := 0
	if ap, ok := addrPort(addr); ok {
		c.mu.Lock()
		p := c.peers[ap]
		hooked := p != nil && p.hooked
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
func (c *Conn) enqueueRun(p *peer, b []byte, seg int) int {
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
func (c *Conn) sendDirect(p *peer, b []byte, seg int) int {
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
func (c *Conn) stamp(p *peer, ob *outBuf, now clock.Mono, wallUS int64, echo bool) pending {
	h := dataHeader{sent: wallUS, echo: echo, t3: p.tx.t3, t4: p.tx.t4}
	off := maxHeaderLen - h.len()
	h.seq = p.tx.onSent(now, h.len()+ob.n)
	h.put(ob.b[off:])
	c.st.shimSent++
	return pending{ob: ob, off: off, oob: c.oobFor(0, p), to: p.udp, p: p}
}

// ReadMsgUDP is ReadFrom for quic-go's OOBCapablePacketConn (no control
// messages are passed on).
func (c *Conn) ReadMsgUDP(b, _ []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, a, err := c.ReadFrom(b)
	addr, _ = a.(*net.UDPAddr)
	return n, 0, 0, addr, err
}

// ReadBatch is quic-go's batched read: it fills ms with the QUIC
// datagrams of one recvmmsg (shim headers taken off, shim datagrams
// handled on the way), blocking only while it has none.
func (c *Conn) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	k := 0
	for k < len(ms) {
		if c.rnext == c.rn {
			if k > 0 {
				return k, nil
			}
			n, err := c.batch.ReadBatch(c.rms, 0)
			if err != nil {
				return 0, err
			}
			c.rnext, c.rn = 0, n
		}
		m := &c.rms[c.rnext]
		c.rnext++
		from, ok := addrPort(m.Addr)
		if !ok || len(ms[k].Buffers) == 0 {
			continue
		}
		if n, ua, ok := c.handle(m.Buffers[0][:m.N], from, ms[k].Buffers[0]); ok {
			ms[k].N, ms[k].NN, ms[k].Flags, ms[k].Addr = n, 0, 0, ua
			k++
		}
	}
	return k, nil
}

// ReadFrom is quic-go's read: it returns the next QUIC datagram, with the
// shim header taken off, and handles shim datagrams (feedback, hellos) on
// the way. A malformed shim datagram is dropped and counted, never handed
// to quic-go.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.rnext == c.rn {
			n, err := c.batch.ReadBatch(c.rms, 0)
			if err != nil {
				return 0, nil, err
			}
			c.rnext, c.rn = 0, n
		}
		m := &c.rms[c.rnext]
		c.rnext++
		from, ok := addrPort(m.Addr)
		if !ok {
			continue
		}
		if k, ua, ok := c.handle(m.Buffers[0][:m.N], from, b); ok {
			return k, ua, nil
		}
	}
}

// handle processes one received datagram d from addr. For a QUIC datagram
// (plain, or shimmed with the header taken off) it copies it into b and
// returns its length, the peer's address and true. The datagram is stamped
// now, as quic-go takes it, not once per batch read: the feedback's timing
// (and its ACK delay) runs on these stamps, and one stamp per batch, tried,
// cost the hook a fifth of its goodput through the emulated bottleneck in
// the first seconds while the race detector slowed quic-go's reads.
func (c *Conn) handle(d []byte, from netip.AddrPort, b []byte) (int, net.Addr, bool) {
	now, wallUS := c.now()
	c.mu.Lock()
	if len(d) == 0 || !isShim(d[0]) {
		c.st.plainReceived++
		var ua net.Addr
		if p := c.peers[from]; p != nil {
			ua = p.udp
		}
		c.mu.Unlock()
		if ua == nil {
			ua = net.UDPAddrFromAddrPort(from)
		}
		if len(d) > len(b) {
			c.count(func(s *counters) { s.oversize++ })
			return 0, nil, false
		}
		return copy(b, d), ua, true
	}
	k, ua, ok := c.handleShim(d, from, b, now, wallUS)
	c.mu.Unlock()
	if c.replyTo != nil {
		// Feedback and hello answers go from the reading goroutine, outside
		// the lock so that the sender goroutine and quic-go's writes do
		// not wait for the syscall.
		c.writeOne(c.fbuf, c.replyOOB, c.replyTo)
		c.replyTo = nil
	}
	return k, ua, ok
}

// handleShim is handle's part for shim datagrams, under c.mu. A datagram
// to send back is left in c.fbuf, c.replyOOB, c.replyTo.
func (c *Conn) handleShim(d []byte, from netip.AddrPort, b []byte, now clock.Mono, wallUS int64) (int, net.Addr, bool) {
	switch d[0] {
	case typeData, typeDataEcho:
		h, payload, err := parseData(d)
		if err != nil {
			c.st.malformed++
			return 0, nil, false
		}
		if len(payload) > len(b) {
			c.st.oversize++
			return 0, nil, false
		}
		p := c.peerFor(from)
		if p == nil {
			return 0, nil, false
		}
		p.hooked = true
		c.st.shimReceived++
		if p.rx.onData(now, wallUS, &h, &c.cfg) {
			c.st.duplicates++
		}
		if p.rx.feedbackDue(now, &c.cfg) {
			c.sendFeedback(p, now, wallUS)
		} else if p.rx.pending == 1 || p.rx.pending == c.cfg.FeedbackEvery {
			c.wakeBy(p.rx.nextDue(&c.cfg)) // a new feedback deadline for the sender goroutine's timer
		}
		return copy(b, payload), p.udp, true
	case typeFeedback:
		var f feedback
		if err := parseFeedback(d, &f); err != nil {
			c.st.malformed++
			return 0, nil, false
		}
		p := c.peers[from]
		if p == nil {
			c.st.malformed++ // feedback for datagrams never sent
			return 0, nil, false
		}
		p.lastActive = now
		p.hooked = true
		if p.tx.onFeedback(now, wallUS, &f) > 0 {
			c.st.malformed++ // ranges acknowledging what was never sent
		}
		c.st.feedbackReceived++
		if p.queue.n > 0 {
			c.wakeBy(now) // the window may have opened for what waits
		}
		c.wakeBy(p.tx.deadline()) // a time-threshold loss may be due sooner
	case typeHello, typeHelloAck:
		if parseHello(d) != nil {
			c.st.malformed++
			return 0, nil, false
		}
		p := c.peerFor(from)
		if p == nil {
			return 0, nil, false
		}
		p.hooked = true
		c.st.hellosReceived++
		if d[0] == typeHello {
			// Answered without a limit of its own: a hello is 6 bytes, the
			// answer no bigger, so it amplifies nothing.
			c.fbuf = appendHello(c.fbuf[:0], typeHelloAck)
			c.replyOOB, c.replyTo = c.oobFor(1, p), p.udp
		}
	default:
		c.st.malformed++
	}
	return 0, nil, false
}

func (c *Conn) count(f func(*counters)) {
	c.mu.Lock()
	f(&c.st)
	c.mu.Unlock()
}

// sendFeedback builds p's feedback for the reader to send. Under c.mu.
func (c *Conn) sendFeedback(p *peer, now clock.Mono, wallUS int64) {
	c.fbuf = p.rx.build(now, wallUS, c.fbuf[:0])
	c.replyOOB, c.replyTo = c.oobFor(1, p), p.udp
	c.st.feedbackSent++
}

// wakeBy makes the sender goroutine run by t (0: no deadline): it kicks
// it unless its timer fires by then anyway. Under c.mu.
func (c *Conn) wakeBy(t clock.Mono) {
	if t != 0 && (c.armed == 0 || t.Before(c.armed)) {
		c.armed = t
		c.kick()
	}
}

// kick wakes the sender goroutine.
func (c *Conn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// readBatch is how many datagrams one recvmmsg reads.
const readBatch = 16

// batchConn is what x/net's ipv4 and ipv6 PacketConns share.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// writeBatch writes every message; one that fails (too big for the path,
// say) is counted and skipped, the rest still go. A segmented message the
// kernel refuses turns segmentation off and goes again one datagram at a
// time.
func (c *Conn) writeBatch(ms []ipv4.Message) {
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
func (c *Conn) oobWithoutGSO(oob []byte) []byte {
	if cmsg.PerPacketTOS && len(oob) > 0 {
		return oob[:len(c.oob[0][0])]
	}
	return nil
}

func (c *Conn) writeOne(b, oob []byte, to net.Addr) {
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
func (c *Conn) sendBatch(batch []pending) {
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

// feedbackOut is a feedback datagram the sender goroutine writes.
type feedbackOut struct {
	b, oob []byte
	to     *net.UDPAddr
}

// pending is one datagram the sender goroutine writes outside the lock.
type pending struct {
	ob  *outBuf
	off int // where the header starts in ob.b
	oob []byte
	to  *net.UDPAddr
	p   *peer
}

// run is the sender goroutine: it sends queued datagrams as each peer's
// controller allows (window and pacing), sends feedback that is due, and
// runs the loss and retransmission timers.
func (c *Conn) run() {
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
		for _, p := range c.peers {
			if p.rx.feedbackDue(now, &c.cfg) {
				if len(fbs) == cap(fbs) {
					fbs = append(fbs, feedbackOut{b: make([]byte, 0, maxFeedbackLen)})
				} else {
					fbs = fbs[:len(fbs)+1]
				}
				f := &fbs[len(fbs)-1]
				f.b, f.oob, f.to = p.rx.build(now, wallUS, f.b[:0]), c.oobFor(1, p), p.udp
				c.st.feedbackSent++
			} else {
				soonest(p.rx.nextDue(&c.cfg))
			}
			if t := p.tx.deadline(); t != 0 && !now.Before(t) {
				p.tx.onTimer(now)
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

// The Conn is what quic-go's Transport looks for to keep its batched reads
// and segmented writes (on Linux): an OOBCapablePacketConn with ReadBatch.
var _ interface {
	net.PacketConn
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	SetReadBuffer(int) error
	SyscallConn() (syscall.RawConn, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
} = (*Conn)(nil)
