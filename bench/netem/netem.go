package netem

import (
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Packet is what crosses the link. netem reads FlowKey, Size and DSCP and
// never touches Handle, which belongs to the driver, nor Data, except to
// flip one bit of a packet it corrupts (LinkConfig.Corrupt).
type Packet struct {
	// FlowKey identifies the packet's flow for flow queueing (a 5-tuple
	// hash in emu, a flow index in sim).
	FlowKey uint64
	// Size is the packet's size on the wire in bytes (serialization time).
	Size int
	// DSCP is the 6-bit DiffServ code point (CAKE-like tins).
	DSCP uint8
	// Handle and Data are the driver's (sim: packet record; emu: buffer).
	Handle uint64
	Data   []byte
	// Corrupted is set by the link when it enters: one bit of Data was
	// flipped (LinkConfig.Corrupt, CorruptGE).
	Corrupted bool

	// EnqueuedAt is set by the link when the packet enters the queue, so a
	// discipline can compute sojourn time (CoDel, RFC 8289 §3). Every
	// discipline's Enqueue also sets it, so a discipline used on its own
	// behaves the same.
	EnqueuedAt clock.Mono
	// QueueDelay is set by the link when the transmitter takes the packet
	// from the queue: the time it waited, from EnqueuedAt to the start of
	// its serialization (not counting serialization or propagation).
	QueueDelay time.Duration
	// ArrivedAt is set by the link when the packet leaves the transmitter:
	// the exact instant it reaches the far end (after serialization,
	// propagation delay and jitter). Poll may return the packet later than
	// this if it is called late; ArrivedAt stays exact.
	ArrivedAt clock.Mono
}

// DropReason says why a packet did not make it across.
type DropReason uint8

const (
	DropRandom   DropReason = iota + 1 // Bernoulli or Gilbert–Elliott loss
	DropOverflow                       // queue full (tail drop or FQ's drop from the fattest flow)
	DropAQM                            // CoDel decided to drop at dequeue
)

func (r DropReason) String() string {
	switch r {
	case DropRandom:
		return "random"
	case DropOverflow:
		return "overflow"
	case DropAQM:
		return "aqm"
	}
	return "unknown"
}

// DropFunc is told about every packet the link drops, so a driver can free
// its buffer and count losses. It must not call back into the link.
type DropFunc func(now clock.Mono, p *Packet, why DropReason)

// Queue is a queue discipline: the link enqueues arriving packets and
// dequeues when its transmitter is free. Disciplines that drop (overflow,
// CoDel) report drops through the DropFunc they were built with.
type Queue interface {
	// Enqueue adds p at now. It may drop p or another packet (FQ-CoDel
	// drops from the fattest flow) through the DropFunc.
	Enqueue(now clock.Mono, p *Packet)
	// Dequeue returns the next packet to transmit at now, or nil if the
	// queue is empty (after any AQM drops).
	Dequeue(now clock.Mono) *Packet
	// Len and Bytes are the current backlog.
	Len() int
	Bytes() int
}
