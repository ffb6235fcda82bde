package emu

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// ipv4Packet builds an IPv4 packet: a 20-byte header (TOS tos, protocol
// proto, fragment offset frag, 10.199.0.1 → 10.199.0.2) followed by the
// source and destination ports and pad bytes of payload.
func ipv4Packet(tos, proto uint8, frag uint16, sport, dport uint16, pad int) []byte {
	p := make([]byte, 20+4+pad)
	p[0] = 0x45
	p[1] = tos
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[6:], frag)
	p[8] = 64
	p[9] = proto
	copy(p[12:], []byte{10, 199, 0, 1, 10, 199, 0, 2})
	binary.BigEndian.PutUint16(p[20:], sport)
	binary.BigEndian.PutUint16(p[22:], dport)
	return p
}

func TestIPv4Info(t *testing.T) {
	tcp := ipv4Packet(0xb8, 6, 0, 40000, 5201, 100)
	total, tos, flow, ok := ipv4Info(tcp)
	require.True(t, ok)
	require.Equal(t, len(tcp), total)
	require.Equal(t, uint8(0xb8), tos, "TOS byte: DSCP EF (46) << 2")
	require.Zero(t, flow&1, "low bit left for the direction")

	same := func(a, b []byte) bool {
		_, _, fa, oka := ipv4Info(a)
		_, _, fb, okb := ipv4Info(b)
		require.True(t, oka && okb)
		return fa == fb
	}
	require.True(t, same(tcp, ipv4Packet(0, 6, 0, 40000, 5201, 1400)), "the 5-tuple, not TOS or length, makes the flow")
	require.False(t, same(tcp, ipv4Packet(0, 6, 0, 40001, 5201, 100)), "ports count")
	require.False(t, same(tcp, ipv4Packet(0, 17, 0, 40000, 5201, 100)), "protocol counts")
	require.True(t, same(ipv4Packet(0, 1, 0, 0x0800, 1, 56), ipv4Packet(0, 1, 0, 0x0800, 2, 56)), "ICMP: addresses and protocol only")
	// A later fragment has no ports: it hashes like any port-less packet.
	require.True(t, same(ipv4Packet(0, 17, 185, 1, 2, 100), ipv4Packet(0, 17, 185, 3, 4, 100)))

	padded := append(ipv4Packet(0, 17, 0, 1, 2, 10), 0, 0, 0, 0)
	total, _, _, ok = ipv4Info(padded)
	require.True(t, ok)
	require.Equal(t, len(padded)-4, total, "the header's total length, not the read length")

	v6 := make([]byte, 60)
	v6[0] = 0x60
	for name, p := range map[string][]byte{
		"IPv6":           v6,
		"short":          tcp[:19],
		"bad IHL":        append([]byte{0x44}, tcp[1:]...),
		"total > read":   tcp[:len(tcp)-1],
		"total < header": func() []byte { p := append([]byte(nil), tcp...); binary.BigEndian.PutUint16(p[2:], 19); return p }(),
	} {
		_, _, _, ok := ipv4Info(p)
		require.False(t, ok, name)
	}
}

// TestTUNAccept checks what the router gives the link for a packet: the
// IP length as Size, DSCP from the TOS byte, the direction in FlowKey's
// low bit; and that it drops and counts what is not IPv4.
func TestTUNAccept(t *testing.T) {
	tn := &TUN{}
	tn.pool.largeSize = tunMaxPkt
	p := ipv4Packet(0xb8, 17, 0, 1, 2, 1000)
	it := tn.pool.get(len(p))
	copy(it.buf, p)
	require.True(t, tn.accept(it, len(p), reverse))
	require.Equal(t, len(p), it.pkt.Size)
	require.Equal(t, uint8(46), it.pkt.DSCP)
	require.Equal(t, uint64(1), it.pkt.FlowKey&1)
	require.Equal(t, p, it.pkt.Data)
	require.Equal(t, reverse, it.dir)
	require.Equal(t, uint64(1), tn.revC.in.Load())
	require.Equal(t, uint64(len(p)), tn.revC.inBytes.Load())

	it = tn.pool.get(60)
	it.buf[0] = 0x60
	require.False(t, tn.accept(it, 60, forward))
	require.Equal(t, uint64(1), tn.fwdC.notIPv4.Load())
	require.Zero(t, tn.fwdC.in.Load())
}
