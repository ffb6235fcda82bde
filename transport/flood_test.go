package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/net/ipv4"

	"github.com/fresh-udp/fresh/internal/realtime"
	"github.com/fresh-udp/fresh/internal/wire"
)

// A random flood at the listener, while a legitimate bulk flow runs through
// it: junk bytes, headers carrying the live connection's ID with random
// bodies from a foreign address and from the client's own, token-less and
// bad-token Initials for random connection IDs, and replays of a live
// connection's genuine packets from its own address and from elsewhere.
// Every packet the listener reads is dropped and counted (its counters and
// the connections' sum to what it read), it keeps no state for any of
// them, its heap does not grow with the packet count, and, in the long
// real-time suite (FRESH_REALTIME=1, package internal/realtime), the flow
// keeps at least 80 % of the goodput it has alone (medians of interleaved
// rounds). Elsewhere the ratio depends on what else loads the machine, so
// the flood runs without the "alone" rounds and the goodput is only
// logged.
//
// The flood is paced, 10,000 packets/s by default (FRESH_FLOOD_RATE), and
// sent 32 at a time with sendmmsg: the generator runs in this process, and
// on a shared 2-core machine an unpaced one takes a core for itself, so
// the test would measure the generator, not the listener. At 25,000/s the
// flow kept about 80 % in sustained rounds while other processes held the
// machine's load average at 7–10 (97 % on a quieter one): too close to
// the bound to assert. The CI run sends 50,000 packets (about ten
// seconds);
//
//	FRESH_FLOOD=1000000 go test -run TestRandomFlood -v ./transport
//
// sends a million (about three and a half minutes at the default rate)
// and prints the numbers; with FRESH_REALTIME=1 it asserts the ratio.
func TestRandomFlood(t *testing.T) {
	// Registered first, so it runs after every other cleanup.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	total := 50_000
	if s := os.Getenv("FRESH_FLOOD"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "FRESH_FLOOD")
		total = n
	} else if testing.Short() {
		total = 10_000
	}
	rate := 10_000.0
	if s := os.Getenv("FRESH_FLOOD_RATE"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, "FRESH_FLOOD_RATE")
		rate = r
	}
	rounds := max(10, total/100_000)
	perRound := total / rounds

	// Long enough for a million packets at a modest rate; keep-alives hold
	// the idle replay connection open.
	cfg := Config{IdleTimeout: 5 * time.Minute, HandshakeTimeout: 10 * time.Second}
	l := listen(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The legitimate flow: a bulk transfer that runs for the whole test.
	cli, err := Dial(ctx, l.Addr().String(), testConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() }) // on failure; Close is idempotent
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	var received atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := srv.Read(buf)
			received.Add(int64(n))
			if err != nil {
				readDone <- err
				return
			}
		}
	}()
	stopWriting := make(chan struct{})
	writeDone := make(chan error, 1)
	go func() {
		chunk := randomBytes(64<<10, 9)
		for {
			select {
			case <-stopWriting:
				writeDone <- cli.CloseWrite()
				return
			default:
			}
			if _, err := cli.Write(chunk); err != nil {
				writeDone <- err
				return
			}
		}
	}()

	// A second, idle connection through a relay that records its genuine
	// packets: the material of the replays, sent from its own address
	// (the relay's socket) and from a foreign one.
	relay := newCapturingRelay(t, l.Addr().(*net.UDPAddr), 64)
	idle, err := Dial(ctx, relay.addr().String(), testConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { idle.Close() })
	idleSrv, err := l.Accept(ctx)
	require.NoError(t, err)
	for i := range 16 {
		require.NoError(t, idle.SendUpdate([]byte{byte(i)}))
		_, err := idle.Write([]byte("genuine"))
		require.NoError(t, err)
		// Each update goes before the next replaces it (only the
		// freshest unsent one is ever sent): 16 distinct packets.
		require.Eventually(t, func() bool { return idle.Stats().UpdatesSent > int64(i) }, 5*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool { return len(relay.packets()) >= 16 }, 5*time.Second, 5*time.Millisecond)

	attacker, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer attacker.Close()
	go drain(attacker) // the Retries the flood draws

	cli.mu.Lock()
	connID := cli.s.ConnID()
	cli.mu.Unlock()
	gen := newFloodGen(connID, relay.packets(), 1)
	targets := floodTargets{
		listener: l.Addr().(*net.UDPAddr),
		foreign:  attacker,
		client:   cli.tr.sock.udp,
		replayer: relay.conn,
	}

	// Past slow start: 4 MiB is hundreds of initial windows, on a path
	// whose round trip is well under a millisecond.
	require.Eventually(t, func() bool { return received.Load() >= 4<<20 }, 10*time.Second, time.Millisecond)
	heap0, goroutines0 := heapAndGoroutines()
	lst0, srv0, idle0 := l.Stats(), srv.Stats(), idleSrv.Stats()
	drops0 := udpDrops(l.Addr().(*net.UDPAddr).Port)

	sent := 0
	var lst ListenerStats
	var counted int64
	// allCounted reports whether every flood packet sent so far was read
	// and counted (or dropped by the kernel, which the listener cannot
	// count).
	allCounted := func() bool {
		lst = l.Stats()
		counted = listenerDrops(lst) - listenerDrops(lst0) +
			connDrops(srv.Stats()) - connDrops(srv0) +
			connDrops(idleSrv.Stats()) - connDrops(idle0)
		return counted >= int64(sent)-(udpDrops(l.Addr().(*net.UDPAddr).Port)-drops0)
	}
	goodput := func(d time.Duration, during func()) float64 {
		b0, t0 := received.Load(), time.Now()
		if during != nil {
			during()
		} else {
			time.Sleep(d) // the measurement window itself: the flow alone for d
		}
		return float64(received.Load()-b0) / time.Since(t0).Seconds()
	}
	window := time.Duration(float64(perRound) / rate * float64(time.Second))
	measure := realtime.Enabled()
	var alone, flooded []float64
	var floodTime time.Duration
	for i := range rounds {
		// A B, B A, …: a drift in the machine's load (other processes)
		// falls on both sides alike.
		if measure && i%2 == 0 {
			alone = append(alone, goodput(window, nil))
		}
		f := goodput(0, func() {
			t0 := time.Now()
			sent += gen.send(t, targets, perRound, rate)
			floodTime += time.Since(t0)
		})
		flooded = append(flooded, f)
		// The flood's last packets are read before anything else is
		// measured; a loaded machine may take long, which only costs time.
		pollUntil(5*time.Second, allCounted)
		if !measure {
			t.Logf("round %d: flooded %.1f MB/s", i, f/1e6)
			continue
		}
		if i%2 == 1 {
			alone = append(alone, goodput(window, nil))
		}
		t.Logf("round %d: alone %.1f MB/s, flooded %.1f MB/s", i, alone[i]/1e6, f/1e6)
	}

	// Every packet the listener read was dropped and counted somewhere.
	pollUntil(5*time.Second, allCounted)
	kernelDrops := udpDrops(l.Addr().(*net.UDPAddr).Port) - drops0
	heap1, goroutines1 := heapAndGoroutines()
	srv1, idle1 := srv.Stats(), idleSrv.Stats()

	close(stopWriting)
	require.NoError(t, <-writeDone)
	require.ErrorIs(t, <-readDone, io.EOF)

	mf := median(flooded)
	t.Logf("flood: %d packets in %v (%.0f packets/s), rate asked %.0f/s", sent, floodTime.Round(time.Millisecond), float64(sent)/floodTime.Seconds(), rate)
	var ma float64
	if measure {
		ma = median(alone)
		t.Logf("goodput: alone %.1f MB/s, flooded %.1f MB/s (median of %d rounds): %.0f %%", ma/1e6, mf/1e6, rounds, 100*mf/ma)
	} else {
		t.Logf("goodput flooded %.1f MB/s (median of %d rounds); the ratio to the flow alone is measured with %s=1", mf/1e6, rounds, realtime.Env)
	}
	t.Logf("counted %d of %d (kernel socket drops %d): listener %+v", counted, sent, kernelDrops, diffListener(lst, lst0))
	t.Logf("flow conn: Malformed %d Unauthenticated %d Replayed %d; replayed conn: Malformed %d Unauthenticated %d Replayed %d",
		srv1.Malformed-srv0.Malformed, srv1.Unauthenticated-srv0.Unauthenticated, srv1.Replayed-srv0.Replayed,
		idle1.Malformed-idle0.Malformed, idle1.Unauthenticated-idle0.Unauthenticated, idle1.Replayed-idle0.Replayed)
	t.Logf("heap in use %+.2f MiB (%.1f → %.1f MiB), goroutines %d → %d",
		(float64(heap1)-float64(heap0))/(1<<20), float64(heap0)/(1<<20), float64(heap1)/(1<<20), goroutines0, goroutines1)

	// Rejected and counted: nothing unaccounted for, nothing counted twice.
	require.LessOrEqual(t, counted, int64(sent))
	require.GreaterOrEqual(t, counted, int64(sent)-kernelDrops)
	// Each kind reached the layer that drops it (the flood is real).
	require.Positive(t, lst.Malformed-lst0.Malformed, "junk")
	require.Positive(t, lst.WrongAddress-lst0.WrongAddress, "live ID, foreign address")
	require.Positive(t, lst.RetriesSent-lst0.RetriesSent, "token-less Initials")
	require.Positive(t, lst.InitialsBadToken-lst0.InitialsBadToken, "bad-token Initials")
	require.Positive(t, srv1.Unauthenticated-srv0.Unauthenticated, "forgeries from the client's address")
	require.Positive(t, idle1.Replayed-idle0.Replayed, "replays from the connection's address")

	// No state for the flood: the two connections only, no sources, and
	// no connection ended.
	require.Equal(t, 2, lst.Connections)
	require.Zero(t, lst.AcceptQueue)
	require.Equal(t, 2, l.t.connections())
	l.mu.Lock()
	require.Empty(t, l.sources.m)
	l.mu.Unlock()
	require.NoError(t, idle.Err())
	require.NoError(t, idleSrv.Err())
	require.LessOrEqual(t, goroutines1, goroutines0+2)
	// Memory: no per-packet state. The bound holds for any packet count:
	// what the flood may leave is the GC's slack and socket buffers in
	// flight, not a byte per packet.
	const heapBound = 16 << 20
	require.Less(t, int64(heap1)-int64(heap0), int64(heapBound))

	// The flow keeps ≥ 80 % of its goodput.
	switch {
	case !measure:
	case raceEnabled:
		t.Logf("race detector on: goodput ratio not asserted")
	default:
		require.GreaterOrEqual(t, mf, 0.8*ma, "flooded goodput %.1f MB/s vs alone %.1f MB/s", mf/1e6, ma/1e6)
	}
	require.NoError(t, idle.Close())
	require.NoError(t, cli.Close())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// listenerDrops is the sum of a listener's counters of datagrams it
// dropped (a Retry answers an Initial that is then dropped).
func listenerDrops(s ListenerStats) int64 {
	return s.RetriesSent + s.VersionNegotiations + s.InitialsBadToken + s.InitialsUnauthenticated + s.InitialsTotalLimit + s.InitialsSourceLimit +
		s.InitialsRateLimited + s.InitialsSourceHandshakeLimit + s.InitialsBacklogFull + s.WrongAddress + s.NoConnection + s.Malformed
}

// connDrops is the sum of a connection's counters of datagrams it dropped
// unread.
func connDrops(s Stats) int64 {
	return s.Malformed + s.Unauthenticated + s.Replayed + s.Duplicates
}

func diffListener(a, b ListenerStats) ListenerStats {
	return ListenerStats{
		Connections: a.Connections, AcceptQueue: a.AcceptQueue,
		RetriesSent: a.RetriesSent - b.RetriesSent, VersionNegotiations: a.VersionNegotiations - b.VersionNegotiations, InitialsBadToken: a.InitialsBadToken - b.InitialsBadToken,
		InitialsUnauthenticated: a.InitialsUnauthenticated - b.InitialsUnauthenticated,
		InitialsTotalLimit:      a.InitialsTotalLimit - b.InitialsTotalLimit, InitialsSourceLimit: a.InitialsSourceLimit - b.InitialsSourceLimit,
		InitialsRateLimited: a.InitialsRateLimited - b.InitialsRateLimited, InitialsBacklogFull: a.InitialsBacklogFull - b.InitialsBacklogFull,
		InitialsSourceHandshakeLimit: a.InitialsSourceHandshakeLimit - b.InitialsSourceHandshakeLimit,
		HandshakeTimeouts:            a.HandshakeTimeouts - b.HandshakeTimeouts, WrongAddress: a.WrongAddress - b.WrongAddress,
		NoConnection: a.NoConnection - b.NoConnection, Malformed: a.Malformed - b.Malformed,
	}
}

// udpDrops is the kernel's count of datagrams dropped at the receive
// buffer of the IPv4 loopback UDP socket on port (Linux /proc/net/udp,
// last column), or 0 where it cannot be read: then the accounting
// assertions assume the kernel dropped nothing.
func udpDrops(port int) int64 {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return 0
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 13 || !strings.HasSuffix(fields[1], want) {
			continue
		}
		n, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
		if err == nil {
			return n
		}
	}
	return 0
}

func drain(c *net.UDPConn) {
	buf := make([]byte, 2048)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// capturingRelay forwards one client's datagrams to a target and the
// target's back, and keeps a copy of the first few the client sent: the
// listener sees the relay's address as the client's, so what the relay
// sends from its socket comes from the connection's own address.
type capturingRelay struct {
	conn   *net.UDPConn
	target *net.UDPAddr
	keep   int

	mu       sync.Mutex
	drop     func(b []byte) bool // if set: the client's datagrams it loses (setDrop)
	client   *net.UDPAddr
	captured [][]byte // client → target
	back     [][]byte // target → client
	done     chan struct{}
}

func newCapturingRelay(t *testing.T, target *net.UDPAddr, keep int) *capturingRelay {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	r := &capturingRelay{conn: conn, target: target, keep: keep, done: make(chan struct{})}
	go r.run()
	t.Cleanup(func() { conn.Close(); <-r.done })
	return r
}

func (r *capturingRelay) addr() *net.UDPAddr { return r.conn.LocalAddr().(*net.UDPAddr) }

func (r *capturingRelay) run() {
	defer close(r.done)
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		if from == r.target.AddrPort() {
			if len(r.back) < r.keep {
				r.back = append(r.back, append([]byte(nil), buf[:n]...))
			}
			if r.client != nil {
				_, _ = r.conn.WriteToUDP(buf[:n], r.client)
			}
			r.mu.Unlock()
			continue
		}
		r.client = net.UDPAddrFromAddrPort(from)
		if len(r.captured) < r.keep {
			r.captured = append(r.captured, append([]byte(nil), buf[:n]...))
		}
		lost := r.drop != nil && r.drop(buf[:n])
		r.mu.Unlock()
		if !lost {
			_, _ = r.conn.WriteToUDP(buf[:n], r.target)
		}
	}
}

// setDrop makes the relay lose the client's datagrams for which drop
// reports true (called on the relay's goroutine, one at a time).
func (r *capturingRelay) setDrop(drop func(b []byte) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop = drop
}

// packets are the client's packets captured, answers the target's.
func (r *capturingRelay) packets() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.captured)
}

func (r *capturingRelay) answers() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.back)
}

func (r *capturingRelay) clientAddr() *net.UDPAddr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client
}

// floodTargets are the sockets the flood sends from.
type floodTargets struct {
	listener *net.UDPAddr
	foreign  *net.UDPConn // an attacker's own address
	client   *net.UDPConn // the legitimate client's socket, connected to the listener
	replayer *net.UDPConn // the replayed connection's address (its relay)
}

// floodGen makes the flood's packets. They are built ahead in pools and
// varied in place (connection ID, packet number) as they go, so the
// generator spends its time sending, not building.
type floodGen struct {
	rng      *rand.Rand
	junk     [][]byte // random bytes
	forged   [][]byte // live connection ID, valid header, random body
	tokenles [][]byte // Initial, no token, random connection ID
	badToken [][]byte // tokens not ours, for Initials sealed as they go
	replays  [][]byte // genuine packets of the idle connection
	n        int
}

func newFloodGen(connID uint64, replays [][]byte, seed uint64) *floodGen {
	g := &floodGen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), replays: replays}
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(g.rng.Uint32())
		}
		return b
	}
	types := []wire.Type{wire.TypeData, wire.TypeAck, wire.TypeUpdate, wire.TypePing, wire.TypeClose, wire.TypeCrypto, wire.TypeAccept}
	now := time.Now().UnixMicro()
	// Up to the largest datagram a listener reads (1200 bytes by
	// default): larger ones are dropped uncounted at the socket
	// (TestOversizeDatagramCounted).
	for i := range 256 {
		g.junk = append(g.junk, rnd(1+g.rng.IntN(wire.MinInitialSize)))
		h := wire.Header{Type: types[i%len(types)], ConnID: connID, PN: g.rng.Int64N(1 << 40), Timestamp: now}
		if i%8 != 0 { // most protected, some in the clear
			h.Flags, h.Epoch = wire.FlagProtected, []uint8{wire.EpochApp0, wire.EpochApp1, wire.EpochHandshake}[i%3]
		}
		g.forged = append(g.forged, append(wire.AppendHeader(nil, h), rnd(wire.ProtectedOverhead+g.rng.IntN(wire.MinInitialSize-wire.HeaderLen-wire.ProtectedOverhead+1))...))
	}
	for i := range 16 {
		g.tokenles = append(g.tokenles, initialDatagram(uint64(i)+1, nil))
		g.badToken = append(g.badToken, rnd(retryTokenLen))
	}
	return g
}

// send sends n packets at rate per second, round robin over the kinds:
//
//	(a) junk from the attacker;
//	(b) forgeries with the live ID from the attacker (path binding);
//	(c) the same from the client's own socket (packet protection);
//	(d) token-less and bad-token Initials for random IDs (Retry);
//	(e) replays from the replayed connection's address (replay window)
//	    and from the attacker.
//
// It returns how many it sent.
func (g *floodGen) send(t *testing.T, to floodTargets, n int, rate float64) int {
	t.Helper()
	foreign, client, replayer := newSendBatch(to.foreign, to.listener), newSendBatch(to.client, nil), newSendBatch(to.replayer, to.listener)
	start := time.Now()
	sent := 0
	for sent < n {
		switch g.n % 9 {
		case 0, 1:
			foreign.add(g.junk[g.rng.IntN(len(g.junk))])
		case 2:
			foreign.add(g.forgery())
		case 3, 4:
			client.add(g.forgery())
		case 5:
			foreign.add(g.initial(g.tokenles))
		case 6:
			foreign.add(g.badTokenInitial())
		case 7:
			replayer.add(g.replays[g.rng.IntN(len(g.replays))])
		case 8:
			foreign.add(g.replays[g.rng.IntN(len(g.replays))])
		}
		g.n++
		sent++
		if sent%floodBatch == 0 || sent == n {
			for _, b := range []*sendBatch{foreign, client, replayer} {
				require.NoError(t, b.flush())
			}
			if d := time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))); d > 0 {
				time.Sleep(d) // the pacing itself: the flood's rate is what the test sets
			}
		}
	}
	return sent
}

// floodBatch is how many packets the flood sends per pacing step, in one
// sendmmsg per socket: the generator shares the machine with what it
// measures, and one syscall per packet would make it the larger load.
const floodBatch = 32

// sendBatch collects datagrams for one socket and sends them with one
// sendmmsg (golang.org/x/net/ipv4's WriteBatch). Each is copied: the
// flood varies its pooled packets in place.
type sendBatch struct {
	pc   *ipv4.PacketConn
	msgs []ipv4.Message
	n    int
}

// newSendBatch batches for conn, to addr (nil on a connected socket).
func newSendBatch(conn *net.UDPConn, addr net.Addr) *sendBatch {
	b := &sendBatch{pc: ipv4.NewPacketConn(conn), msgs: make([]ipv4.Message, floodBatch)}
	for i := range b.msgs {
		b.msgs[i] = ipv4.Message{Buffers: [][]byte{make([]byte, 0, 1500)}, Addr: addr}
	}
	return b
}

func (b *sendBatch) add(p []byte) {
	m := &b.msgs[b.n]
	m.Buffers[0] = append(m.Buffers[0][:0], p...)
	b.n++
}

func (b *sendBatch) flush() error {
	for off := 0; off < b.n; {
		k, err := b.pc.WriteBatch(b.msgs[off:b.n], 0)
		if err != nil {
			return err
		}
		off += k
	}
	b.n = 0
	return nil
}

// forgery is a forged packet with a fresh packet number.
func (g *floodGen) forgery() []byte {
	b := g.forged[g.rng.IntN(len(g.forged))]
	binary.BigEndian.PutUint64(b[12:], g.rng.Uint64N(1<<40))
	return b
}

// initial is an Initial of pool with a fresh random connection ID.
// badTokenInitial is an Initial for a random connection ID carrying a
// token not ours, sealed for that ID as an attacker can (the Initial keys
// are anyone's): the listener opens it, then refuses its token.
func (g *floodGen) badTokenInitial() []byte {
	tok := g.badToken[g.rng.IntN(len(g.badToken))]
	return sealedInitial(g.rng.Uint64(), 0, tok, 0, helloOnce()[:64])
}

func (g *floodGen) initial(pool [][]byte) []byte {
	b := pool[g.rng.IntN(len(pool))]
	binary.BigEndian.PutUint64(b[4:], g.rng.Uint64())
	return b
}
