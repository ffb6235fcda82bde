package transport

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/internal/cmsg"
)

// GSO limits (Linux UDP_SEGMENT): at most 64 segments and 64 KiB of payload
// in one send (include/linux/udp.h UDP_MAX_SEGMENTS; the IP length field).
const (
	gsoMaxSegments = 64
	gsoMaxBytes    = 65000
)

// txBatch builds the datagrams of one sendmmsg call. With generic
// segmentation offload (GSO, Linux's UDP_SEGMENT), a run of datagrams of
// one size and DSCP (the last of the run may be shorter) travels as one
// message the kernel cuts into datagrams: one trip through the socket and
// UDP layers for up to 64 datagrams, which is how quic-go sends bulk data.
// Without GSO every datagram is its own message.
//
// A batch is not a connection's: each message has its own destination,
// and its buffers (up to 2 MiB with GSO) are only needed while a send is
// built, so a Listener's driver fills one with the datagrams of every
// connection it runs in a pass (one sendmmsg for the ACKs of many sources)
// and a client Conn takes one from txPool for each send. A slot's buffer is allocated the first time the slot is used, so a
// batch that only ever carries a few small datagrams stays small.
type txBatch struct {
	sock *socket
	msgs []ipv4.Message
	bufs [][]byte
	oobs [][]byte
	seg  []int   // segment size of each message
	segs []int   // datagrams in each message
	dscp []uint8 // DSCP of each message
	peer []*net.UDPAddr
	n    int  // messages in use
	open bool // the last message can take another segment
	// carry holds a datagram that did not fit a full batch; it starts the
	// next one.
	carry     []byte
	carryDSCP uint8
	carryPeer *net.UDPAddr
	hasCarry  bool
	carryOwn  bool // the carried datagram travels alone (addAlone)
	// scratch is where the session writes the datagram being polled.
	scratch []byte
}

func newTxBatch(sock *socket, maxDatagram int) *txBatch {
	b := &txBatch{
		msgs: make([]ipv4.Message, batchSize),
		bufs: make([][]byte, batchSize),
		oobs: make([][]byte, batchSize),
		seg:  make([]int, batchSize),
		segs: make([]int, batchSize),
		dscp: make([]uint8, batchSize),
		peer: make([]*net.UDPAddr, batchSize),
	}
	for i := range b.msgs {
		b.msgs[i].Buffers = [][]byte{nil}
	}
	b.reset(sock, maxDatagram)
	return b
}

// reset binds an empty batch to sock for datagrams of up to maxDatagram
// bytes, keeping the buffers it has.
func (b *txBatch) reset(sock *socket, maxDatagram int) {
	b.sock = sock
	b.n, b.open, b.hasCarry = 0, false, false
	if cap(b.scratch) < maxDatagram {
		b.scratch = make([]byte, 0, maxDatagram)
	}
}

// slotSize is the capacity a message buffer needs: a whole GSO run, or
// one datagram.
func (b *txBatch) slotSize(d []byte) int {
	if b.sock.gso.Load() {
		return gsoMaxBytes
	}
	return max(len(d), cap(b.scratch))
}

// txPool holds the batches of client Conns between sends. sync.Pool
// frees what stays unused across garbage collections, so thousands of
// mostly idle clients in one process share a handful of batches.
var txPool sync.Pool

// getTxBatch returns an empty batch for sock from txPool.
func getTxBatch(sock *socket, maxDatagram int) *txBatch {
	if b, ok := txPool.Get().(*txBatch); ok {
		b.reset(sock, maxDatagram)
		return b
	}
	return newTxBatch(sock, maxDatagram)
}

// putTxBatch returns b, which must hold nothing unsent, to txPool.
func putTxBatch(b *txBatch) {
	b.sock, b.carryPeer = nil, nil
	for i := range b.msgs {
		b.msgs[i].Addr, b.peer[i] = nil, nil // do not keep a peer's address alive
	}
	txPool.Put(b)
}

// full reports whether no further datagram can be taken for sure.
func (b *txBatch) full() bool { return b.hasCarry }

// add takes one datagram (copied) to peer. When every message is used and
// d cannot join the last one, d is carried into the next batch and full()
// turns true.
func (b *txBatch) add(d []byte, dscp uint8, peer *net.UDPAddr) {
	if b.n > 0 && b.open && b.sock.gso.Load() {
		i := b.n - 1
		if peer == b.peer[i] && dscp == b.dscp[i] && len(d) <= b.seg[i] && b.segs[i] < gsoMaxSegments && len(b.bufs[i])+len(d) <= gsoMaxBytes {
			b.bufs[i] = append(b.bufs[i], d...)
			b.segs[i]++
			b.open = len(d) == b.seg[i] // a short segment ends the run
			return
		}
	}
	if b.n == len(b.msgs) {
		b.carry = append(b.carry[:0], d...)
		b.carryDSCP, b.carryPeer, b.hasCarry = dscp, peer, true
		return
	}
	i := b.n
	b.n++
	if b.bufs[i] == nil {
		b.bufs[i] = make([]byte, 0, b.slotSize(d))
	}
	b.bufs[i] = append(b.bufs[i][:0], d...)
	b.seg[i], b.segs[i], b.dscp[i], b.peer[i] = len(d), 1, dscp, peer
	b.open = true
}

// addAlone is add for a datagram that must travel as a message of its
// own: it joins no run, and none joins it.
func (b *txBatch) addAlone(d []byte, dscp uint8, peer *net.UDPAddr) {
	b.open = false
	b.add(d, dscp, peer)
	b.open = false
	b.carryOwn = b.hasCarry
}

// send writes the batch and starts the next one (with the carried
// datagram, if any).
func (b *txBatch) send() error {
	for i := range b.n {
		m := &b.msgs[i]
		m.Buffers[0] = b.bufs[i]
		m.Addr = b.sock.dest(b.peer[i])
		oob := append(b.oobs[i][:0], b.sock.oobFor(b.dscp[i], b.peer[i])...)
		if b.segs[i] > 1 {
			oob = cmsg.AppendSegmentSize(oob, b.seg[i])
		}
		b.oobs[i] = oob
		m.OOB = oob
		if len(oob) == 0 {
			m.OOB = nil
		}
	}
	err := b.sock.writeBatch(b.msgs[:b.n])
	if err != nil && b.sock.gso.Load() && isGSOUnsupported(err) {
		// The device or route cannot segment: send every datagram on
		// its own from now on (quic-go falls back the same way).
		b.sock.gso.Store(false)
		err = b.resendUnsegmented()
	}
	b.n, b.open = 0, false
	if b.hasCarry {
		b.hasCarry = false
		if b.carryOwn {
			b.addAlone(b.carry, b.carryDSCP, b.carryPeer)
		} else {
			b.add(b.carry, b.carryDSCP, b.carryPeer)
		}
		b.carryPeer, b.carryOwn = nil, false
	}
	return err
}

// resendUnsegmented splits every message into single datagrams.
func (b *txBatch) resendUnsegmented() error {
	var one [1]ipv4.Message
	one[0].Buffers = [][]byte{nil}
	for i := range b.n {
		for off := 0; off < len(b.bufs[i]); off += b.seg[i] {
			end := min(off+b.seg[i], len(b.bufs[i]))
			one[0].Buffers[0] = b.bufs[i][off:end]
			one[0].Addr = b.sock.dest(b.peer[i])
			one[0].OOB = b.sock.oobFor(b.dscp[i], b.peer[i])
			if err := b.sock.writeBatch(one[:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// isGSOUnsupported recognises the kernel's refusal of UDP_SEGMENT.
func isGSOUnsupported(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP)
}
