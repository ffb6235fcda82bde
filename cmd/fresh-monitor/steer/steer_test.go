//go:build linux

package steer

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// bpffs mounts a bpffs on a temporary directory for the test, or skips
// it with the reason where that is not allowed (not root, no bpf).
func bpffs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		t.Skipf("cannot mount a bpffs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// server is one process of the group: a Listener on the shared port with
// its server ID, counting what it accepts and the updates it reads.
type server struct {
	id       byte
	tr       *transport.Transport
	ln       *transport.Listener
	mu       sync.Mutex
	accepted map[string]bool // by the client's first payload: its name
	updates  map[string]int
}

func startServer(t *testing.T, addr string, id byte, g *Group, tlsConf *tls.Config) *server {
	t.Helper()
	udp, err := transport.ListenUDP(addr, true)
	require.NoError(t, err)
	if g != nil {
		require.NoError(t, g.Join(udp, id))
	}
	tr := &transport.Transport{Conn: udp, ServerID: []byte{id}, ConfigRotation: 1}
	// Each process its own reset key, as processes that do not share
	// one: a datagram misrouted to a process is then not ended by its
	// reset, it just goes unanswered.
	ln, err := tr.Listen(transport.Config{TLS: tlsConf})
	require.NoError(t, err)
	s := &server{id: id, tr: tr, ln: ln, accepted: map[string]bool{}, updates: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			wg.Go(func() {
				for {
					u, err := c.ReadUpdate(ctx)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.accepted[string(u.Payload[:4])] = true
					s.updates[string(u.Payload[:4])]++
					s.mu.Unlock()
				}
			})
		}
	})
	t.Cleanup(func() {
		cancel()
		tr.Close()
		udp.Close()
		wg.Wait()
	})
	return s
}

func (s *server) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted[name]
}

// run starts two servers on one port (steered through g if not nil),
// dials clients, then moves every client to a new port (Conn.Migrate: a
// NAT rebinding's new 4-tuple) and reports how many clients' migrations
// failed and whether any update after the move reached a server other
// than the one that accepted the client.
func run(t *testing.T, g *Group, clients int) (failed, misrouted int, per [2]int) {
	ca, err := devcert.NewCA("steer test CA")
	require.NoError(t, err)
	cert, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert}}
	a := startServer(t, "127.0.0.1:0", 0, g, srvTLS)
	addr := a.ln.Addr().String()
	b := startServer(t, addr, 1, g, srvTLS)
	servers := [2]*server{a, b}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conns := make([]*transport.Conn, clients)
	owner := make([]int, clients)
	for i := range conns {
		c, err := transport.Dial(ctx, addr, transport.Config{TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Abort() })
		conns[i] = c
		name := fmt.Sprintf("%04d", i)
		require.NoError(t, c.SendUpdate([]byte(name)))
		require.Eventually(t, func() bool { return a.has(name) || b.has(name) }, 10*time.Second, time.Millisecond)
		owner[i] = 0
		if b.has(name) {
			owner[i] = 1
		}
		per[owner[i]]++
		_, srvID := c.ConnectionIDs()
		id, ok := transport.ServerIDOf(srvID, 1, 1)
		require.True(t, ok)
		require.Equal(t, servers[owner[i]].id, id[0], "the server that accepted the client is the one its ID names")
	}
	for i, c := range conns {
		mctx, mcancel := context.WithTimeout(ctx, time.Second)
		err := c.Migrate(mctx)
		mcancel()
		if err != nil {
			failed++
			continue
		}
		name := fmt.Sprintf("%04d", i)
		other := servers[1-owner[i]]
		before := servers[owner[i]].count(name)
		require.NoError(t, c.SendUpdate([]byte(name)))
		if !pollUntil(2*time.Second, func() bool { return servers[owner[i]].count(name) > before }) {
			failed++
		}
		if other.count(name) > 0 {
			misrouted++
		}
	}
	return failed, misrouted, per
}

func (s *server) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates[name]
}

func pollUntil(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Two processes (two Listeners with server IDs 0 and 1) on one port:
// with the program, every client that moves to a new port stays with the
// server that accepted it; with the kernel's hash alone, some land on the
// other, which does not know them, and their connections stall. The
// second half is the control: it shows the first is the program's doing.
func TestSteeringKeepsMigratedConnections(t *testing.T) {
	dir := bpffs(t)
	g, err := Open(dir, 1)
	require.NoError(t, err)
	defer g.Close()
	const clients = 24

	failed, misrouted, per := run(t, g, clients)
	t.Logf("steered: %d clients over servers %v; %d failed after moving, %d misrouted", clients, per, failed, misrouted)
	require.Positive(t, per[0], "new connections are spread by the hash")
	require.Positive(t, per[1], "new connections are spread by the hash")
	require.Zero(t, failed)
	require.Zero(t, misrouted)

	failed, misrouted, per = run(t, nil, clients)
	t.Logf("hash only: %d clients over servers %v; %d failed after moving, %d misrouted", clients, per, failed, misrouted)
	// 24 clients whose new port all hashes to their owner: 2⁻²⁴.
	require.Positive(t, failed, "without the program some moved clients reach the wrong process")
}

// Open explains what is wrong: a directory not on a bpffs, a rotation
// that cannot be routed.
func TestOpenErrors(t *testing.T) {
	_, err := Open(t.TempDir(), 1)
	require.ErrorContains(t, err, "mount -t bpf bpf")
	_, err = Open(t.TempDir(), 7)
	require.ErrorContains(t, err, "0-6")
}

// A second Open of the same directory (another process) shares the map.
func TestOpenTwiceSharesTheMap(t *testing.T) {
	dir := bpffs(t)
	g1, err := Open(dir, 1)
	require.NoError(t, err)
	defer g1.Close()
	g2, err := Open(dir, 1)
	require.NoError(t, err)
	defer g2.Close()
	i1, err := g1.sockets.Info()
	require.NoError(t, err)
	i2, err := g2.sockets.Info()
	require.NoError(t, err)
	id1, _ := i1.ID()
	id2, _ := i2.ID()
	require.Equal(t, id1, id2)
	_, err = os.Stat(dir + "/" + progName)
	require.NoError(t, err)
}
