package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// The server's connection ID is chosen by its Transport in the QUIC-LB
// plaintext layout, and after the handshake the client's packets carry
// it: with the client's own ID taken out of the server's table, a whole
// upload still arrives (a client still sending with its own ID would be
// dropped as NoConnection).
func TestClientSendsWithServerChosenID(t *testing.T) {
	udp, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	defer udp.Close()
	tr := &Transport{Conn: udp, ServerID: []byte{0xab, 0xcd}, ConfigRotation: 2}
	defer tr.Close()
	l, err := tr.Listen(testConfig(Config{}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, l.Addr().String(), testConfig(Config{}))
	require.NoError(t, err)
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)

	clientID, srvID := cli.ConnectionIDs()
	c2, s2 := srv.ConnectionIDs()
	require.Equal(t, clientID, c2, "both ends name the same IDs")
	require.Equal(t, srvID, s2)
	require.NotZero(t, srvID, "the Accept gave no server ID")
	require.NotEqual(t, clientID, srvID)
	sid, ok := ServerIDOf(srvID, 2, 2)
	require.True(t, ok, "%016x is not in the plaintext layout", srvID)
	require.Equal(t, []byte{0xab, 0xcd}, sid)

	tr.mu.Lock()
	delete(tr.conns, clientID)
	tr.mu.Unlock()
	data := randomBytes(1<<20, 5)
	go func() {
		_, _ = cli.Write(data)
		_ = cli.CloseWrite()
	}()
	got, err := io.ReadAll(srv)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
	require.Zero(t, l.Stats().NoConnection, "packets with the client's own ID after the Accept")
}

// Without a ServerID the IDs are marked unroutable (rotation 0b111) and
// random; each connection's differs.
func TestServerIDLayout(t *testing.T) {
	tr := &Transport{}
	seen := map[uint64]bool{}
	for range 100 {
		id := tr.newServerID()
		require.Equal(t, byte(0b111<<5|7), byte(id>>56))
		_, ok := ServerIDOf(id, 1, 0)
		require.False(t, ok)
		require.False(t, seen[id])
		seen[id] = true
	}
	tr = &Transport{ServerID: []byte{1, 2, 3}, ConfigRotation: 6}
	id := tr.newServerID()
	sid, ok := ServerIDOf(id, 3, 6)
	require.True(t, ok)
	require.Equal(t, []byte{1, 2, 3}, sid)
	_, ok = ServerIDOf(id, 3, 5)
	require.False(t, ok, "another rotation's ID")

	for _, bad := range []*Transport{{ServerID: make([]byte, 4)}, {ConfigRotation: 7}} {
		bad.Conn = &net.UDPConn{}
		require.ErrorIs(t, bad.validate(), ErrInvalidConfig)
	}
}

// A client that reaches a server of another version learns it from the
// server's VersionNegotiation, about a second later (the client waits
// that long for another answer, in case a forged one raced the server's),
// not at HandshakeTimeout; the error says what to do.
func TestDialVersionMismatchFailsFast(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	go func() { // a server of the next version
		b := make([]byte, 2048)
		n, from, err := pc.ReadFrom(b)
		if err != nil {
			return
		}
		_, id, _ := wire.PeekVersion(b[:n])
		_, _ = pc.WriteTo(wire.AppendVersionNegotiation(nil, &wire.VersionNegotiation{ConnID: id, Versions: []uint8{wire.Version + 1}}), from)
	}()
	const hsTimeout = 5 * time.Second
	start := time.Now()
	_, err = Dial(context.Background(), pc.LocalAddr().String(), testConfig(Config{HandshakeTimeout: hsTimeout}))
	require.Less(t, time.Since(start), hsTimeout/2, "Dial waited for the handshake timeout: %v", err)
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorIs(t, err, ErrVersionMismatch)
	require.Contains(t, err.Error(), fmt.Sprintf("versions [%d], this end speaks %d; upgrade the older end", wire.Version+1, wire.Version))
}

// A Listener answers an Initial of another version with the versions it
// speaks, with fewer bytes than it got and no state; datagrams too small
// to be an Initial get nothing.
func TestListenerAnswersOtherVersion(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()

	old := wire.AppendInitial(wire.AppendHeader(nil, wire.Header{Type: wire.TypeInitial, ConnID: 0x1122334455667788}), wire.Initial{})
	old[0] = 1 // a version 1 client's Initial
	small := bytes.Clone(old[:100])
	_, err = pc.WriteTo(small, l.Addr())
	require.NoError(t, err)
	_, err = pc.WriteTo(old, l.Addr())
	require.NoError(t, err)

	require.NoError(t, pc.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, 2048)
	n, _, err := pc.ReadFrom(b)
	require.NoError(t, err)
	var vn wire.VersionNegotiation
	require.NoError(t, wire.ParseVersionNegotiation(b[:n], &vn))
	require.Equal(t, uint64(0x1122334455667788), vn.ConnID)
	require.Equal(t, []uint8{wire.Version}, vn.Versions)
	require.Less(t, n, len(old))
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, _, err = pc.ReadFrom(b)
	require.Error(t, err, "a second answer: the small datagram was answered too")
	st := l.Stats()
	require.Equal(t, int64(1), st.VersionNegotiations)
	require.Equal(t, int64(1), st.Malformed)
	require.Zero(t, st.Connections)
}
