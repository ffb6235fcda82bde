package quichook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/cmsg"
)

// PacketConn is the hook: a net.PacketConn to hand to quic.Transport{Conn: …}.
// See the package doc. Its methods are safe for concurrent use.
type PacketConn struct {
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
	// nValidated counts the validated entries of peers (see peers.go).
	nValidated int
	closed     bool
	st         counters
	// mac derives the cookies (cookieFor) from a secret drawn in New;
	// macSum is its output buffer. Under mu.
	mac    hash.Hash
	macSum []byte

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

// New wraps conn, which the PacketConn owns from then on (Close closes it), and
// starts its sender goroutine.
func New(conn *net.UDPConn, cfg Config) (*PacketConn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("quichook: cookie secret: %w", err)
	}
	c := &PacketConn{
		cfg: cfg, conn: conn, clk: cfg.Clock,
		mac:        hmac.New(sha256.New, secret[:]),
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
		for class, d := range [2]uint8{cfg.DSCP.Code(), cfg.AckDSCP.Code()} {
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

// ListenPacket opens a UDP socket on addr ("127.0.0.1:0", ":4433", …) and wraps it.
func ListenPacket(addr string, cfg Config) (*PacketConn, error) {
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
// and closes the socket. Close quic-go's Transport first: the PacketConn does
// not know it. Queued datagrams are discarded.
func (c *PacketConn) Close() error {
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
func (c *PacketConn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// SetDeadline, SetReadDeadline and SetWriteDeadline set the socket's
// deadlines (quic-go sets the read deadline to unblock its reader on Close).
func (c *PacketConn) SetDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

func (c *PacketConn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }

func (c *PacketConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// SetReadBuffer and SetWriteBuffer size the socket's buffers; SyscallConn
// exposes the socket so that quic-go can check them and set the don't-
// fragment bit (path MTU discovery then finds the MTU with the shim's
// header included: a probe too big for it is lost like any other).
func (c *PacketConn) SetReadBuffer(n int) error { return c.conn.SetReadBuffer(n) }

func (c *PacketConn) SetWriteBuffer(n int) error { return c.conn.SetWriteBuffer(n) }

func (c *PacketConn) SyscallConn() (syscall.RawConn, error) { return c.conn.SyscallConn() }

func (c *PacketConn) now() (clock.Mono, int64) {
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *PacketConn) count(f func(*counters)) {
	c.mu.Lock()
	f(&c.st)
	c.mu.Unlock()
}

// The PacketConn is what quic-go's Transport looks for to keep its batched reads
// and segmented writes (on Linux): an OOBCapablePacketConn with ReadBatch.
var _ interface {
	net.PacketConn
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	SetReadBuffer(int) error
	SyscallConn() (syscall.RawConn, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
} = (*PacketConn)(nil)
