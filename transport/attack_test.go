package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// An on-path attacker who knows the connection ID (it is in every header)
// and can send from the peer's own address forges every kind of packet in
// the clear and in the protected format. Before packet protection these
// truncated the stream silently, delivered forged bytes, blocked updates
// for an hour, or made Close report unacknowledged data as delivered. Now
// each is dropped and counted, and the stream arrives byte-exact.
func TestForgedPacketsFromThePeersAddressAreDropped(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	cli.mu.Lock()
	connID := cli.s.ConnID()
	cli.mu.Unlock()

	// Forgeries, sent from the client's own socket (the server sees the
	// right source address) and from the listener's (the client does).
	wall := time.Now().UnixMicro()
	hdr := func(t wire.Type, flags uint8, pn int64) []byte {
		return wire.AppendHeader(nil, wire.Header{Type: t, Flags: flags, ConnID: connID, PN: pn, Timestamp: wall})
	}
	var ack wire.Ack
	ack.NRanges = 1
	ack.Ranges[0] = wire.AckRange{Largest: 1 << 20, Smallest: 0}
	ack.MaxData = 1 << 40
	toServer := [][]byte{
		wire.AppendClose(hdr(wire.TypeClose, 0, 0), &wire.Close{}),                                                      // clean close: silent truncation
		wire.AppendData(hdr(wire.TypeData, wire.FlagFIN, 3), &wire.Data{Offset: 0, Payload: []byte("EVIL")}),            // data and FIN
		wire.AppendUpdate(hdr(wire.TypeUpdate, 0, 1<<30), &wire.Update{Generated: wall + 3600e6, Payload: []byte("x")}), // an hour ahead
		wire.AppendUpdate(hdr(wire.TypeUpdate, 0, 1<<31), &wire.Update{Generated: math.MaxInt64, Payload: []byte("y")}),
		append(hdr(wire.TypeClose, wire.FlagProtected, 1<<40), make([]byte, 40)...), // protected-looking, made-up tag
	}
	toServer[4][3] = wire.EpochApp0
	toClient := [][]byte{
		wire.AppendAck(hdr(wire.TypeAck, 0, 0), &ack), // "everything acknowledged"
		wire.AppendClose(hdr(wire.TypeClose, 0, 0), &wire.Close{}),
	}

	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	want := sha256.Sum256(data)
	got := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		_, _ = io.Copy(h, srv)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		got <- sum
	}()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, b := range toServer {
				_, _ = cli.tr.sock.udp.Write(b)
			}
			for _, b := range toClient {
				_, _ = l.t.sock.udp.WriteToUDP(b, cli.tr.sock.udp.LocalAddr().(*net.UDPAddr))
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); cli.Close() }()
	_, err := io.Copy(cli, bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, cli.Close(), "Close must report real acknowledgments only")
	select {
	case sum := <-got:
		require.Equal(t, want, sum, "the stream must arrive byte-exact, nothing forged in it")
	case <-ctx.Done():
		t.Fatal("stream did not complete")
	}
	require.Zero(t, srv.Stats().UpdatesReceived, "no forged update may be delivered")
	require.Positive(t, srv.Stats().Unauthenticated, "forgeries must be counted")
	require.Positive(t, cli.Stats().Unauthenticated)
}

// An attacker on the path forges a VersionNegotiation (RFC 9000 §6) from
// the client's Initial, sent ahead of the server's answer, and another
// just after the server's first datagram: neither fails the Dial (the
// first is taken only until the server answers, the second comes after
// it), both are counted, and the connection works.
func TestForgedVersionNegotiationOnPathIgnored(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer front.Close()
	back, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer back.Close()

	// The path: client → front → back → listener, and back. It forges
	// from what it forwards.
	var client atomic.Pointer[net.UDPAddr]
	var id atomic.Uint64
	forge := func() []byte {
		return wire.AppendVersionNegotiation(nil, &wire.VersionNegotiation{ConnID: id.Load(), Versions: []uint8{1}})
	}
	var forged atomic.Int32
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if client.Swap(from) == nil {
				_, cid, _ := wire.PeekVersion(buf[:n])
				id.Store(cid)
				_, _ = front.WriteToUDP(forge(), from) // ahead of the server's answer
				forged.Add(1)
			}
			_, _ = back.WriteTo(buf[:n], l.Addr())
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		first := true
		for {
			n, _, err := back.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = front.WriteToUDP(buf[:n], client.Load())
			if first {
				first = false
				_, _ = front.WriteToUDP(forge(), client.Load()) // after it
				forged.Add(1)
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	cli, err := Dial(ctx, front.LocalAddr().String(), testConfig(Config{}))
	require.NoError(t, err)
	t.Logf("Dial took %v through two forged VersionNegotiations", time.Since(start))
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(2), forged.Load())
	require.Eventually(t, func() bool { return cli.Stats().VersionNegotiationsIgnored == 2 }, 5*time.Second, 5*time.Millisecond,
		"both counted: %+v", cli.Stats())
	_, err = cli.Write([]byte("after the forgeries"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := srv.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "after the forgeries", string(buf[:n]))
}
