package quichook

import (
	"encoding/binary"
	"errors"
)

// The shim's datagrams. Every one starts with a type byte whose two top
// bits are clear. A QUIC v1 datagram never starts like that: a long header
// has 0x80 set, and a short header has the fixed bit 0x40 set (RFC 9000
// §17.2 and §17.3.1; RFC 8999 §5.2 lets other versions clear it only in
// long headers). So one socket carries both and the first byte alone
// tells them apart, whatever the peer runs.
const (
	typeData     byte = 0x01 // shim header + one QUIC datagram
	typeDataEcho byte = 0x02 // the same with the echo of the latest feedback
	typeFeedback byte = 0x03 // received sequence ranges and OWD samples
	typeHello    byte = 0x04 // "this end has the hook": asks for a helloAck
	typeHelloAck byte = 0x05 // the answer to a hello
)

// isShim reports whether a datagram's first byte is the shim's (not QUIC).
func isShim(first byte) bool { return first&0xC0 == 0 }

// The cookie. Every shim datagram but a hello carries, after its type, the
// receiver's cookie for the sender's address: 8 bytes the receiver derived
// from a secret of its own and told the sender in a hello or its answer.
// Only someone who receives at that address learns it, so a datagram with
// the right cookie comes from the address it claims or from someone on
// the path between (RFC 9000 §8.1 validates addresses with a token the
// same way). See PacketConn.cookieFor.
const cookieLen = 8

const (
	dataHeaderLen     = 1 + cookieLen + 8 + 8 // type, cookie, sequence, send stamp (µs)
	dataEchoHeaderLen = dataHeaderLen + 16    // + echo T3, T4 (µs)
	// maxHeaderLen is the most the shim adds to a QUIC datagram.
	maxHeaderLen = dataEchoHeaderLen

	// A hello is type, version, 4 bytes of magic, the sender's cookie for
	// the receiver, and, once the sender knows it, the echo of the
	// receiver's cookie for the sender (helloEchoLen; an answer always
	// echoes the hello's cookie). The first hellos to a new address are
	// helloLen: under 21 bytes, so that a QUIC endpoint without the hook,
	// which takes one for a short-header packet of an unknown connection,
	// never answers it with a stateless reset (RFC 9000 §10.3: a reset must
	// be smaller than the packet that triggers it, and at least 21 bytes).
	helloLen     = 1 + 1 + 4 + cookieLen
	helloEchoLen = helloLen + cookieLen
	// version 2 added the cookies; a version-1 hook's 6-byte hello is
	// counted (Stats.VersionMismatch) and unanswered, and it counts ours as
	// malformed: both ends stay plain QUIC.
	version = 2

	// feedbackFixed: type, cookie, T3, flags, ack delay (µs), range and
	// sample counts.
	feedbackFixed = 1 + cookieLen + 8 + 1 + 4 + 1 + 1
	rangeLen      = 8 + 4 // largest, count − 1
	sampleLen     = 8 + 4 // sequence, OWD (µs)
	// maxRanges and maxSamples bound one feedback datagram (and what a
	// decoder accepts): 16·12 + 32·12 + 24 = 600 bytes. Feedback goes at
	// the latest when maxSamples datagrams are waiting, so at loopback
	// rates it sets how many feedback datagrams, each a syscall at both
	// ends, there are: with 32, about as many as quic-go's own ACKs.
	maxRanges  = 16
	maxSamples = 32
	// maxFeedbackLen is the largest feedback datagram.
	maxFeedbackLen = feedbackFixed + maxRanges*rangeLen + maxSamples*sampleLen
)

var helloMagic = [4]byte{'f', 'r', 'h', 'k'}

const flagSynced byte = 0x01 // the receiver trusts its clock-offset estimate

// dataHeader is the shim header in front of one QUIC datagram.
type dataHeader struct {
	cookie uint64 // the receiver's cookie for the sender
	seq    uint64 // shim sequence number: one per datagram, never reused
	sent   int64  // send stamp, sender's wall clock, µs since the epoch
	echo   bool   // t3, t4 are set
	t3, t4 int64  // the latest feedback's send stamp (receiver clock) and arrival (sender clock)
}

func (h *dataHeader) len() int {
	if h.echo {
		return dataEchoHeaderLen
	}
	return dataHeaderLen
}

// put writes h into b, which must have room for h.len() bytes.
func (h *dataHeader) put(b []byte) {
	b[0] = typeData
	if h.echo {
		b[0] = typeDataEcho
		binary.BigEndian.PutUint64(b[25:], uint64(h.t3))
		binary.BigEndian.PutUint64(b[33:], uint64(h.t4))
	}
	binary.BigEndian.PutUint64(b[1:], h.cookie)
	binary.BigEndian.PutUint64(b[9:], h.seq)
	binary.BigEndian.PutUint64(b[17:], uint64(h.sent))
}

var (
	errShort   = errors.New("quichook: datagram too short")
	errType    = errors.New("quichook: unknown shim type")
	errRanges  = errors.New("quichook: bad feedback ranges")
	errVersion = errors.New("quichook: bad hello")
)

// parseData reads a data datagram's header and returns the QUIC payload.
// An empty payload is malformed: the shim never sends one.
func parseData(b []byte) (dataHeader, []byte, error) {
	var h dataHeader
	if len(b) == 0 {
		return h, nil, errShort
	}
	n := dataHeaderLen
	switch b[0] {
	case typeData:
	case typeDataEcho:
		n, h.echo = dataEchoHeaderLen, true
	default:
		return h, nil, errType
	}
	if len(b) <= n {
		return h, nil, errShort
	}
	h.cookie = binary.BigEndian.Uint64(b[1:])
	h.seq = binary.BigEndian.Uint64(b[9:])
	h.sent = int64(binary.BigEndian.Uint64(b[17:]))
	if h.echo {
		h.t3 = int64(binary.BigEndian.Uint64(b[25:]))
		h.t4 = int64(binary.BigEndian.Uint64(b[33:]))
	}
	return h, b[n:], nil
}

// seqRange is the closed range [lo, hi] of received sequence numbers.
type seqRange struct{ lo, hi uint64 }

// owdSample is the one-way delay the receiver measured for one datagram.
type owdSample struct {
	seq uint64
	owd int32 // µs; may be negative while the clocks are unsynchronised
}

// feedback is what the receiving shim reports to the sending one.
type feedback struct {
	cookie   uint64 // the data sender's cookie for the feedback's sender
	t3       int64  // send stamp, receiver's wall clock, µs
	synced   bool   // the receiver trusts its offset estimate
	ackDelay uint32 // µs between the largest reported arrival and t3
	nRanges  int
	ranges   [maxRanges]seqRange // descending, disjoint, not adjacent
	nSamples int
	samples  [maxSamples]owdSample
}

// sample returns seq's OWD sample, if f carries one. The samples come in
// arrival order, mostly ascending, and the sender asks in ascending order,
// so *cursor (start at 0) makes the usual lookup one comparison; a sample
// out of order costs a scan.
func (f *feedback) sample(seq uint64, cursor *int) (owdSample, bool) {
	if i := *cursor; i < f.nSamples && f.samples[i].seq == seq {
		*cursor = i + 1
		return f.samples[i], true
	}
	for i, o := range f.samples[:f.nSamples] {
		if o.seq == seq {
			*cursor = i + 1
			return o, true
		}
	}
	return owdSample{}, false
}

// append appends f's encoding to b.
func (f *feedback) append(b []byte) []byte {
	var flags byte
	if f.synced {
		flags |= flagSynced
	}
	b = append(b, typeFeedback)
	b = binary.BigEndian.AppendUint64(b, f.cookie)
	b = binary.BigEndian.AppendUint64(b, uint64(f.t3))
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, f.ackDelay)
	b = append(b, byte(f.nRanges), byte(f.nSamples))
	for _, r := range f.ranges[:f.nRanges] {
		b = binary.BigEndian.AppendUint64(b, r.hi)
		b = binary.BigEndian.AppendUint32(b, uint32(r.hi-r.lo))
	}
	for _, s := range f.samples[:f.nSamples] {
		b = binary.BigEndian.AppendUint64(b, s.seq)
		b = binary.BigEndian.AppendUint32(b, uint32(s.owd))
	}
	return b
}

// parseFeedback decodes a feedback datagram into f. It rejects anything
// the encoder cannot produce: counts over the bounds, a length that does
// not match them, ranges out of order, overlapping or wrapping below 0.
// The sender acts on what it accepts, so a malformed datagram must change
// nothing.
func parseFeedback(b []byte, f *feedback) error {
	if len(b) < feedbackFixed {
		return errShort
	}
	if b[0] != typeFeedback {
		return errType
	}
	nr, ns := int(b[22]), int(b[23])
	if b[17]&^flagSynced != 0 || nr > maxRanges || ns > maxSamples || len(b) != feedbackFixed+nr*rangeLen+ns*sampleLen {
		return errRanges
	}
	f.cookie = binary.BigEndian.Uint64(b[1:])
	f.t3 = int64(binary.BigEndian.Uint64(b[9:]))
	f.synced = b[17]&flagSynced != 0
	f.ackDelay = binary.BigEndian.Uint32(b[18:])
	f.nRanges, f.nSamples = nr, ns
	p := b[feedbackFixed:]
	for i := range nr {
		hi := binary.BigEndian.Uint64(p)
		n := uint64(binary.BigEndian.Uint32(p[8:]))
		p = p[rangeLen:]
		if n > hi {
			return errRanges
		}
		r := seqRange{lo: hi - n, hi: hi}
		// Descending and separated by at least one missing number.
		if i > 0 && (r.hi >= f.ranges[i-1].lo || f.ranges[i-1].lo-r.hi < 2) {
			return errRanges
		}
		f.ranges[i] = r
	}
	for i := range ns {
		f.samples[i] = owdSample{seq: binary.BigEndian.Uint64(p), owd: int32(binary.BigEndian.Uint32(p[8:]))}
		p = p[sampleLen:]
	}
	return nil
}

// hello is a hello or its answer (typeHelloAck).
type hello struct {
	typ     byte
	cookie  uint64 // the sender's cookie for the receiver
	hasEcho bool
	echo    uint64 // the receiver's cookie for the sender, as the sender learned it
}

// appendHello appends h to b.
func appendHello(b []byte, h hello) []byte {
	b = append(b, h.typ, version)
	b = append(b, helloMagic[:]...)
	b = binary.BigEndian.AppendUint64(b, h.cookie)
	if h.hasEcho {
		b = binary.BigEndian.AppendUint64(b, h.echo)
	}
	return b
}

// errOldVersion is a hello from a hook of another version.
var errOldVersion = errors.New("quichook: hello of another shim version")

// parseHello decodes a hello or its answer. An answer without the echo is
// malformed: it always echoes the hello it answers.
func parseHello(b []byte) (hello, error) {
	var h hello
	if len(b) < 6 || (b[0] != typeHello && b[0] != typeHelloAck) || [4]byte(b[2:6]) != helloMagic {
		return h, errVersion
	}
	if b[1] != version {
		return h, errOldVersion
	}
	switch len(b) {
	case helloLen:
	case helloEchoLen:
		h.hasEcho, h.echo = true, binary.BigEndian.Uint64(b[helloLen:])
	default:
		return h, errVersion
	}
	h.typ, h.cookie = b[0], binary.BigEndian.Uint64(b[6:])
	if h.typ == typeHelloAck && !h.hasEcho {
		return h, errVersion
	}
	return h, nil
}
