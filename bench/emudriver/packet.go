package emudriver

import "encoding/binary"

// ipUDPHeader is what the relay adds to a UDP payload to get the size it
// serialises (IPv4 20 + UDP 8).
const ipUDPHeader = 28

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
