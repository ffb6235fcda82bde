package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/e2e"
	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport"
)

// Connection migration (RFC 9000 §9) through the relay: its Rebind gives
// the client a new source port at the server, as a NAT that rebinds.

// recordingConn is the server's socket with a copy of the latest datagrams
// it read, for the tests that replay or forge them.
type recordingConn struct {
	net.PacketConn
	mu   sync.Mutex
	last [][]byte // the latest 64
}

func (c *recordingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.mu.Lock()
		c.last = append(c.last, bytes.Clone(b[:n]))
		if len(c.last) > 64 {
			c.last = c.last[1:]
		}
		c.mu.Unlock()
	}
	return n, from, err
}

// latest is a copy of the latest datagram read whose type byte is typ.
func (c *recordingConn) latest(typ byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.last) - 1; i >= 0; i-- {
		if d := c.last[i]; len(d) > 28 && d[1] == typ {
			return bytes.Clone(d)
		}
	}
	return nil
}

// migrationRig is a listener on a recording socket, a relay in front of it
// and a client dialled through the relay.
type migrationRig struct {
	t *testing.T
	*e2e.Rig
	sock     *recordingConn
	cli, srv *transport.Conn
}

func newMigrationRig(t *testing.T, relayIdle time.Duration, cfg transport.Config) *migrationRig {
	t.Helper()
	rig := &migrationRig{t: t}
	p := path(20e6, 20*time.Millisecond, 0, 1000)
	var err error
	rig.Rig, err = e2e.NewRig(e2e.RigConfig{
		Relay:  emu.RelayConfig{Forward: p, Reverse: p, Seed: 11, ClientIdle: relayIdle},
		Server: cfg,
		Wrap: func(c *net.UDPConn) net.PacketConn {
			rig.sock = &recordingConn{PacketConn: c}
			return rig.sock
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rig.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rig.cli, rig.srv, err = rig.Dial(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rig.cli.Close() })
	t.Cleanup(func() { _ = rig.srv.Close() })
	return rig
}

// arrivals is the server's reader: every Read's time and the bytes so far.
type arrivals struct {
	mu    sync.Mutex
	at    []time.Time
	total []int64
	sum   [32]byte
	err   error
	done  chan struct{}
	bytes atomic.Int64
}

func readArrivals(srv *transport.Conn, want int64) *arrivals {
	a := &arrivals{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		h := sha256.New()
		buf := make([]byte, 64<<10)
		var n int64
		for n < want {
			k, err := srv.Read(buf)
			if k > 0 {
				h.Write(buf[:k])
				n += int64(k)
				a.bytes.Store(n)
				a.mu.Lock()
				a.at = append(a.at, time.Now())
				a.total = append(a.total, n)
				a.mu.Unlock()
			}
			if err != nil {
				a.err = err
				return
			}
		}
		copy(a.sum[:], h.Sum(nil))
	}()
	return a
}

// after is the first read after t, and the largest gap between reads
// from t on (the gap from t to the first read included).
func (a *arrivals) after(t time.Time) (first time.Time, stall time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := t
	for _, at := range a.at {
		if !at.After(t) {
			continue
		}
		if first.IsZero() {
			first = at
		}
		stall = max(stall, at.Sub(prev))
		prev = at
	}
	return first, stall
}

// watchMove reports when the server's connection first names another
// peer address than from (polled every millisecond): the server took the
// first packet from the new address and moved.
func watchMove(ctx context.Context, srv *transport.Conn, from string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				if srv.RemoteAddr().String() != from {
					ch <- time.Now()
					return
				}
			}
		}
	}()
	return ch
}

// rebindDuring uploads size bytes (downloads, if down) and rebinds the
// client once rebindAt bytes have arrived (after idle, if set, with
// nothing sent meanwhile); it checks the transfer byte-exact and the
// stall after the move, and returns the time from the rebind to the first
// byte delivered after the move, and the largest stall.
func (rig *migrationRig) rebindDuring(size, rebindAt int64, idle time.Duration, down bool) (firstByte, stall time.Duration) {
	t := rig.t
	data := randomBytes(int(size), 5)
	writer, reader := rig.cli, rig.srv
	if down {
		writer, reader = rig.srv, rig.cli
	}
	a := readArrivals(reader, size)
	errc := make(chan error, 1)
	resume := make(chan struct{})
	go func() {
		_, err := writer.Write(data[:rebindAt])
		if idle > 0 {
			<-resume
		}
		if err == nil {
			_, err = writer.Write(data[rebindAt:])
		}
		errc <- err
	}()
	_, ok := waitFor(30*time.Second, func() bool { return a.bytes.Load() >= rebindAt })
	require.True(t, ok, "the first %d bytes", rebindAt)
	if idle > 0 {
		time.Sleep(idle) // nothing sent either way (keep-alives off)
	}
	before := rig.srv.RemoteAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moved := watchMove(ctx, rig.srv, before)
	rebound := time.Now()
	n, err := rig.Relay.Rebind()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	if idle > 0 {
		close(resume)
	}

	select {
	case <-a.done:
	case <-time.After(60*time.Second + idle):
		t.Fatalf("upload stalled at %d of %d bytes", a.bytes.Load(), size)
	}
	require.NoError(t, a.err)
	require.NoError(t, <-errc)
	require.Equal(t, sha256.Sum256(data), a.sum, "byte-exact")
	var movedAt time.Time
	select {
	case movedAt = <-moved:
	default:
		t.Fatal("the server never moved to the new address")
	}
	require.NotEqual(t, before, rig.srv.RemoteAddr().String())
	first, stall := a.after(movedAt)
	require.False(t, first.IsZero(), "no byte after the move")
	require.LessOrEqual(t, stall, time.Second, "stall after the first packet from the new address")
	st := rig.srv.Stats()
	t.Logf("rebind → move %v, → first byte after it %v, largest stall after the move %v; server %d migrations, %d reverted, %d path resets",
		movedAt.Sub(rebound).Round(time.Millisecond), first.Sub(rebound).Round(time.Millisecond), stall.Round(time.Millisecond),
		st.Migrations, st.MigrationsReverted, st.PathResets)
	require.Equal(t, int64(1), st.Migrations)
	require.Zero(t, st.MigrationsReverted)
	require.Zero(t, st.PathResets, "a rebinding keeps the path's state")
	return first.Sub(rebound), stall
}

// (a) The client's port changes in the middle of an 8 MB upload through a
// 20 Mbit/s, 20 ms relay: the upload completes byte-exact, without a stall
// of more than a second after the first packet from the new port.
func TestMigrationRebindMidUpload(t *testing.T) {
	rig := newMigrationRig(t, 0, transport.Config{})
	rig.rebindDuring(8<<20, 3<<20, 0, false)
}

// The same in a download: the server's data to the forgotten port is
// lost until the client's next ACK, from its new port, moves the
// connection; the client reads on with no stall over a second.
func TestMigrationRebindMidDownload(t *testing.T) {
	rig := newMigrationRig(t, 0, transport.Config{})
	rig.rebindDuring(8<<20, 3<<20, 0, true)
}

// (b) The same after 30 s of silence (keep-alives off, IdleTimeout above
// the gap; the relay keeps the client's slot), as a sleeping device whose
// NAT forgot it: the first packet after the gap comes from a new port.
func TestMigrationRebindAfterIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("35 s")
	}
	rig := newMigrationRig(t, -1, transport.Config{KeepAlive: -1, IdleTimeout: 90 * time.Second})
	rig.rebindDuring(2<<20, 1<<20, 30*time.Second, false)
}

// (c) Forged packets (random bytes under the connection's ID, a bit-flipped
// copy of a genuine one) and a replay of a genuine packet, from a third
// address, never move the connection: each is dropped and counted, and the
// connection carries on from its own address.
func TestMigrationForgedAndReplayedNeverMove(t *testing.T) {
	rig := newMigrationRig(t, 0, transport.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := rig.cli.Write([]byte("genuine"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	k, err := rig.srv.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "genuine", string(buf[:k]))
	genuine := rig.sock.latest(0x03) // a Data packet
	require.NotNil(t, genuine)
	id := genuine[4:12]

	attacker, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer attacker.Close()
	target := rig.sock.LocalAddr()
	before := rig.srv.RemoteAddr().String()
	wrong0 := rig.Listener.Stats().WrongAddress

	random := randomBytes(200, 9)
	random[0], random[1], random[2], random[3] = wire.Version, 0x03, 0x80, 2 // protected Data, epoch app 0
	copy(random[4:12], id)
	random[12] = 0 // a packet number within range
	flipped := bytes.Clone(genuine)
	flipped[len(flipped)-5] ^= 0x10
	flipped[19]++ // a packet number not seen yet, so the AEAD (not the replay window) rejects it
	sent := 0
	for range 50 {
		for _, d := range [][]byte{random, flipped, genuine} {
			_, err := attacker.WriteTo(d, target)
			require.NoError(t, err)
			sent++
		}
		random[19]++ // a fresh packet number each round
		flipped[19]++
	}
	require.Eventually(t, func() bool { return rig.Listener.Stats().WrongAddress-wrong0 == int64(sent) }, 5*time.Second, 5*time.Millisecond,
		"every datagram from the third address dropped and counted")
	require.Equal(t, before, rig.srv.RemoteAddr().String(), "the connection did not move")
	st := rig.srv.Stats()
	require.Zero(t, st.Migrations+st.MigrationsReverted)

	// The connection carries on, and the attacker's address got nothing.
	require.NoError(t, rig.cli.SendUpdate([]byte("still here")))
	u, err := rig.srv.ReadUpdate(ctx)
	require.NoError(t, err)
	require.Equal(t, "still here", string(u.Payload))
	require.NoError(t, attacker.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, _, err = attacker.ReadFrom(buf)
	require.Error(t, err, "the third address got a datagram")
	require.Equal(t, before, rig.srv.RemoteAddr().String())
}
