package emudriver

import "encoding/binary"

// The fresh datagram header, version 1 (transport/internal/wire, which
// bench cannot import): ver(1) type(1) flags(1) rsvd(1) connID(8) pn(8)
// sender timestamp µs(8). The format is versioned and fixed; the driver
// reads only these fields, and only to measure.
const (
	wireVersion     = 1
	wireHeaderLen   = 28
	wireTypeInitial = 0x01
	wireTypeData    = 0x03
	wireTypeUpdate  = 0x04
	// frameOverhead is what a Data or Update frame adds to its payload
	// (wire.DataOverhead = wire.UpdateOverhead = 26 bytes): a datagram of
	// MaxDatagram bytes carries MaxDatagram − 54 payload bytes.
	frameOverhead = 26
	// ipUDPHeader is what the relay adds to a UDP payload to get the
	// size it serialises (IPv4 20 + UDP 8).
	ipUDPHeader = 28
)

// freshHeader is what the driver reads of a fresh datagram.
type freshHeader struct {
	typ     uint8
	connID  uint64
	stampUS int64 // sender's wall clock, µs since the Unix epoch
}

func parseFresh(b []byte) (freshHeader, bool) {
	if len(b) < wireHeaderLen || b[0] != wireVersion {
		return freshHeader{}, false
	}
	return freshHeader{
		typ:     b[1],
		connID:  binary.BigEndian.Uint64(b[4:12]),
		stampUS: int64(binary.BigEndian.Uint64(b[20:28])),
	}, true
}

// The driver's cbr datagrams: magic(2) kind(1) flow(1) seq(4) sent(8),
// then padding to the flow's size. sent is nanoseconds since the run's
// origin on the process's monotonic clock. The first byte can never start
// a fresh datagram (version 1).
const (
	cbrMagic0, cbrMagic1 = 0xFB, 0xCB
	cbrHeaderLen         = 16
	cbrData              = 0
	cbrHello             = 1
)

type cbrHeader struct {
	kind   uint8
	flow   int
	seq    uint32
	sentNS int64
}

func isCBR(b []byte) bool {
	return len(b) >= cbrHeaderLen && b[0] == cbrMagic0 && b[1] == cbrMagic1
}

func parseCBR(b []byte) (cbrHeader, bool) {
	if !isCBR(b) {
		return cbrHeader{}, false
	}
	return cbrHeader{
		kind:   b[2],
		flow:   int(b[3]),
		seq:    binary.BigEndian.Uint32(b[4:8]),
		sentNS: int64(binary.BigEndian.Uint64(b[8:16])),
	}, true
}

// putCBR writes the header into b (len(b) ≥ cbrHeaderLen).
func putCBR(b []byte, h cbrHeader) {
	b[0], b[1], b[2], b[3] = cbrMagic0, cbrMagic1, h.kind, uint8(h.flow)
	binary.BigEndian.PutUint32(b[4:8], h.seq)
	binary.BigEndian.PutUint64(b[8:16], uint64(h.sentNS))
}

// cbrPayload is the UDP payload of a cbr flow's datagrams: the scenario's
// size counts the whole IP packet (as bench/sim puts size bytes on the
// link), so 28 bytes of IPv4+UDP header come off, down to the driver's
// own 16-byte header.
func cbrPayload(size int) int { return max(size-ipUDPHeader, cbrHeaderLen) }
