package emudriver

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// ipv4 builds an IPv4 packet of protocol proto from sport to dport with a
// TCP (seq, flags) or UDP header and payload.
func ipv4(proto uint8, sport, dport uint16, seq uint32, flags uint8, payload []byte) []byte {
	l4 := 8
	if proto == protoTCP {
		l4 = 20
	}
	b := make([]byte, 20+l4+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	b[9] = proto
	copy(b[12:16], []byte{10, 199, 0, 1})
	copy(b[16:20], []byte{10, 199, 0, 2})
	h := b[20:]
	binary.BigEndian.PutUint16(h[0:2], sport)
	binary.BigEndian.PutUint16(h[2:4], dport)
	if proto == protoTCP {
		binary.BigEndian.PutUint32(h[4:8], seq)
		h[12] = 5 << 4
		h[13] = flags
	}
	copy(b[20+l4:], payload)
	return b
}

// The router's observer: packets are classified by protocol and ports,
// only the data direction's packets with payload count, the delay is
// Out − In and the queueing delay Queue; telemetry write times are read at
// message boundaries of the TCP stream, each message once.
func TestTUNObserve(t *testing.T) {
	const size = 10
	d := &driver{exact: true}
	n := &tunNet{d: d, byKey: map[flowKey]*flowRun{}}
	tele := &flowRun{spec: scenario.Flow{Kind: scenario.KindTelemetry, Size: size, Protocol: "tcp"}, tunf: &tunFlow{}, end: time.Hour}
	kern := &flowRun{spec: scenario.Flow{Kind: scenario.KindIperf3, Reverse: true}, tunf: &tunFlow{}, end: time.Hour}
	n.register(tele, flowKey{protoTCP, 42000, 9000})
	n.register(kern, flowKey{protoTCP, 42001, 5201})
	d.flows = []*flowRun{tele, kern}
	in := time.Unix(100, 0)
	pkt := func(fwd bool, data []byte) emu.TUNPacket {
		return emu.TUNPacket{Forward: fwd, Data: data, In: in, Out: in.Add(30 * time.Millisecond), Queue: 7 * time.Millisecond}
	}
	// Before time zero: the SYN teaches the ISN, nothing is measured.
	const isn = 1000
	n.observe(pkt(true, ipv4(protoTCP, 42000, 9000, isn, 0x02, nil)))
	d.started.Store(true)

	// Three messages written 1, 2 and 3 ms before in; the first segment
	// carries message 0 and the first 9 bytes of message 1 (its stamp
	// whole), the second the rest of 1 and all of 2.
	stream := make([]byte, 3*size)
	for k := range 3 {
		binary.BigEndian.PutUint64(stream[k*size:], uint64(in.Add(-time.Duration(k+1)*time.Millisecond).UnixNano()))
	}
	n.observe(pkt(true, ipv4(protoTCP, 42000, 9000, isn+1, 0x18, stream[:19])))
	n.observe(pkt(true, ipv4(protoTCP, 42000, 9000, isn+1+19, 0x18, stream[19:])))
	n.observe(pkt(true, ipv4(protoTCP, 42000, 9000, isn+1, 0x18, stream[:19])))     // a retransmission
	n.observe(pkt(false, ipv4(protoTCP, 9000, 42000, 77, 0x10, nil)))               // a pure ACK
	n.observe(pkt(true, ipv4(protoUDP, 42000, 9000, 0, 0, []byte("not the flow")))) // another protocol
	require.Equal(t, []float64{1, 2, 3}, tele.m.w2rMs)
	require.Equal(t, []float64{30, 30, 30}, tele.m.owdMs, "every data segment, the retransmission too")
	require.Equal(t, []float64{7, 7, 7}, tele.m.queueMs)

	// A reverse iperf3 flow: its data comes from the server side; the
	// client's segments to the server are its ACKs.
	n.observe(pkt(true, ipv4(protoTCP, 42001, 5201, 5, 0x10, nil)))
	n.observe(pkt(true, ipv4(protoTCP, 42001, 5201, 5, 0x18, []byte("request"))))
	require.Empty(t, kern.m.owdMs)
	n.observe(pkt(false, ipv4(protoTCP, 5201, 42001, 9, 0x10, make([]byte, 1400))))
	require.Equal(t, []float64{30}, kern.m.owdMs)
	require.Equal(t, int64(1400), kern.m.ivBytes)

	// Malformed and foreign packets are ignored.
	for _, b := range [][]byte{nil, {0x45}, make([]byte, 20), ipv4(protoTCP, 1, 2, 0, 0x18, []byte("x"))[:30]} {
		n.observe(pkt(true, b))
	}
	require.Len(t, tele.m.owdMs, 3)
}
