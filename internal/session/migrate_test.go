package session

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
)

// natPair is a TLS Pair whose client sits behind a NAT, with the server's
// side of the transport modelled: addresses are small numbers; the NAT
// maps the client to its binding (Rebind changes it), and the server's
// table (current, previous, candidate) follows the verdicts as
// transport.Transport's does. The server's datagrams reach the client
// only when sent to its binding.
type natPair struct {
	*Pair
	bind            int            // the client's source address now
	src             map[string]int // a client datagram's header → its source
	cur, prev, cand int            // the server's table; 0: none
	// Bytes the server sent to each address, and received from each.
	sentTo, recvFrom map[int]int64
	// check, if set, runs after every datagram the server sends.
	check func()
	// dropCli, if set, drops the client datagrams it reports true for.
	dropCli func(d []byte) bool
	// race, if not 0, is an attacker's address: a copy of each client
	// datagram reaches the server from there, ahead of the original
	// (RFC 9000 §9.3.3), over a path as fast as the link with half its
	// delay. What the server sends there is lost.
	race     int
	copies   map[string]bool // headers of the copies under way
	raceBusy clock.Mono      // the attacker's path is busy until
}

func newNATPair(tb testing.TB, l Link) *natPair {
	tb.Helper()
	n := &natPair{Pair: OpenTLSPair(tb, l), bind: 1, cur: 1, src: map[string]int{}, copies: map[string]bool{}, sentTo: map[int]int64{}, recvFrom: map[int]int64{}}
	n.Filter = n.filter
	n.Deliver = n.deliver
	return n
}

// Rebind gives the client a new source address, as a NAT does.
func (n *natPair) Rebind(addr int) { n.bind = addr }

func (n *natPair) filter(from *Session, d []byte) bool {
	if from == n.Cli {
		if n.dropCli != nil && n.dropCli(d) {
			return false
		}
		n.src[string(d[:wire.HeaderLen])] = n.bind
		if n.race != 0 {
			depart := max(n.Now, n.raceBusy)
			if n.Link.Rate > 0 {
				depart = depart.Add(time.Duration(int64(len(d)) * 8 * int64(time.Second) / n.Link.Rate))
			}
			n.raceBusy = depart
			n.copies[string(d[:wire.HeaderLen])] = true
			n.Later(depart.Add(n.Link.Delay/2), n.Srv, bytes.Clone(d))
		}
		return true
	}
	n.sync()
	dst := n.cur
	switch n.Srv.SendPath() {
	case PathPrevious:
		dst = n.prev
	case PathOther:
		dst = n.cand
	}
	n.sentTo[dst] += int64(len(d))
	if n.check != nil {
		n.check()
	}
	return dst == n.bind
}

// sync takes the server's revert, as the transport does after Timeout.
func (n *natPair) sync() {
	if n.Srv.PathReverted() {
		n.cur, n.prev = n.prev, 0
	}
}

func (n *natPair) deliver(to *Session, b []byte) {
	if to == n.Cli {
		to.Handle(n.Now, n.Wall(to), b)
		return
	}
	key := string(b[:wire.HeaderLen])
	if n.copies[key] { // the copy arrives first
		delete(n.copies, key)
		n.From(n.race, b)
		return
	}
	src := n.src[key]
	delete(n.src, key)
	n.From(src, b)
}

// From hands b to the server as from address src and applies the verdict
// to the server's table.
func (n *natPair) From(src int, b []byte) Verdict {
	n.sync()
	n.recvFrom[src] += int64(len(b))
	from := PathOther
	switch {
	case src == n.cur:
		from = PathCurrent
	case n.prev != 0 && src == n.prev:
		from = PathPrevious
	}
	v := n.Srv.HandleFrom(n.Now, n.Wall(n.Srv), b, from, natAddr(src))
	switch v {
	case Accepted, Refused:
		if from == PathOther {
			n.cand = src
		}
	case Moved, MovedForget:
		old := n.cur
		n.cur = src
		if src == n.prev {
			n.prev = 0
		}
		if v == Moved {
			n.prev = old
		}
	}
	return v
}

// natAddr is the address numbered a: 10.0.0.a:4433.
func natAddr(a int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(a)}), 4433)
}

// download has the server write what it takes of size random bytes; it
// returns them all and how many it took.
func download(tb testing.TB, s *Session, size int) ([]byte, int) {
	data := randomData(size)
	w := data
	for len(w) > 0 {
		k, err := s.Write(w)
		require.NoError(tb, err)
		if k == 0 {
			break
		}
		w = w[k:]
	}
	return data, size - len(w)
}

// randomData is size pseudo-random bytes.
func randomData(size int) []byte {
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return data
}

// pump drives n until the client has read all of data (the server
// writing the rest of it, from written, as room frees), failing after
// limit.
func (n *natPair) pump(tb testing.TB, data []byte, written int, limit time.Duration) []byte {
	tb.Helper()
	return n.pumpInto(tb, data, written, new(bytes.Buffer), limit)
}

// pumpInto is pump with what the client read so far in got.
func (n *natPair) pumpInto(tb testing.TB, data []byte, written int, got *bytes.Buffer, limit time.Duration) []byte {
	tb.Helper()
	n.drive(limit, func() bool {
		written = n.feed(data, written, got)
		return got.Len() == len(data)
	})
	require.Equal(tb, len(data), got.Len(), "client read %d of %d bytes", got.Len(), len(data))
	return got.Bytes()
}

// feed writes what the server takes of data from written and reads what
// the client has into got; it returns the new written.
func (n *natPair) feed(data []byte, written int, got *bytes.Buffer) int {
	for written < len(data) {
		k, _ := n.Srv.Write(data[written:])
		if k == 0 {
			break
		}
		written += k
	}
	var buf [16 << 10]byte
	for {
		k, err := n.Cli.Read(buf[:])
		got.Write(buf[:k])
		if k == 0 || err != nil {
			break
		}
	}
	return written
}

// drive steps n for d of virtual time or until done reports true, calling
// done before every step: what it writes or reads goes out in that step
// (Step polls both ends first, as a driver polls after Write and Read).
func (n *natPair) drive(d time.Duration, done func() bool) {
	end := n.Now.Add(d)
	for n.Now.Before(end) && !done() {
		if !n.Step() {
			return
		}
	}
}

// migrationLink is a 20 Mbit/s, 10 ms path (20 ms RTT).
var migrationLink = Link{Delay: 10 * time.Millisecond, Rate: 20e6}

// A NAT rebinding in the middle of a download: the connection moves to
// the new address on the client's first packet from it, the address is
// validated, and the stream arrives whole — with the server's controller
// and RTT estimator kept (the path did not change).
func TestMigrationRebindingKeepsState(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 4<<20) // pump writes the rest
	n.Run(300 * time.Millisecond)
	ctl := n.Srv.ctl
	require.NotNil(t, ctl)
	n.Rebind(2)
	got := n.pump(t, data, written, 30*time.Second)
	require.Equal(t, data, got)
	st := n.Srv.Stats(n.Now)
	require.Equal(t, int64(1), st.Migrations)
	require.Zero(t, st.MigrationsReverted)
	require.Zero(t, st.PathResets, "a rebinding keeps the path's state")
	require.Same(t, ctl, n.Srv.ctl, "the controller was not rebuilt")
	require.Equal(t, 2, n.cur)
	require.Equal(t, 1, n.prev)
}

// The same move onto a path of another RTT (10 ms each way to 150): the
// validation's round trip shows a new path, and the server starts its
// controller and RTT estimator afresh (RFC 9000 §9.4).
func TestMigrationRealPathChangeResets(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 4<<20)
	n.Run(300 * time.Millisecond)
	ctl := n.Srv.ctl
	n.Rebind(2)
	n.Link.Delay = 150 * time.Millisecond
	got := n.pump(t, data, written, 60*time.Second)
	require.Equal(t, data, got)
	st := n.Srv.Stats(n.Now)
	require.Equal(t, int64(1), st.Migrations)
	require.Equal(t, int64(1), st.PathResets)
	require.NotSame(t, ctl, n.Srv.ctl, "a new controller for the new path")
	require.Greater(t, st.MinRTT, 250*time.Millisecond, "the old path's minimum RTT is forgotten")
}

// Until the new address echoes the challenge, the server sends it at most
// three times what it received from it (RFC 9000 §8.1, §9.3), however much
// stream data waits; then the limit is lifted.
func TestMigrationAmplificationLimit(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 4<<20)
	n.Run(300 * time.Millisecond)
	hold := true
	n.dropCli = func(d []byte) bool { return hold && wire.Type(d[1]) == wire.TypePathResponse }
	checked := 0
	n.check = func() {
		if n.Srv.mig.validating() && n.cur == 2 {
			checked++
			require.LessOrEqual(t, n.sentTo[2], 3*n.recvFrom[2], "sent to an unvalidated address")
		}
	}
	n.Rebind(2)
	var got bytes.Buffer
	n.drive(500*time.Millisecond, func() bool { written = n.feed(data, written, &got); return false })
	require.True(t, n.Srv.mig.validating(), "cur %d, stats %+v, written %d", n.cur, n.Srv.Stats(n.Now), written)
	require.Positive(t, checked)
	// 500 ms at 20 Mbit/s would be 1.25 MB; the client's ACKs allow
	// three times their bytes.
	require.Less(t, n.sentTo[2], int64(200_000))
	require.Positive(t, n.Srv.out.unacked(), "data was waiting")
	hold = false
	require.Equal(t, data, n.pumpInto(t, data, written, &got, 60*time.Second))
	require.False(t, n.Srv.mig.validating())
	require.Equal(t, 2, n.cur)
}

// An address that never answers the challenge (an attacker raced a copy
// of the client's genuine packet to us from elsewhere, and the client then
// fell silent): after the validation timeout the connection is back on the
// previous address.
func TestMigrationValidationFailureReverts(t *testing.T) {
	n := newNATPair(t, migrationLink)
	n.Run(100 * time.Millisecond)
	_, err := n.Cli.Write([]byte("hello"))
	require.NoError(t, err)
	d, ok := n.Take(n.Cli) // the client's data packet, captured before it arrives
	for ok && wire.Type(d[1]) == wire.TypePMTUProbe {
		d, ok = n.Take(n.Cli) // a path MTU probe before it, lost
	}
	require.True(t, ok)
	require.Equal(t, wire.TypeData, wire.Type(d[1]))
	n.dropCli = func([]byte) bool { return true } // the client's packets stop arriving
	require.Equal(t, Moved, n.From(3, bytes.Clone(d)), "a genuine packet, the newest: the server moves")
	require.Equal(t, 3, n.cur)
	require.Positive(t, n.Srv.pathValidationTimeout())
	start := n.Now
	require.True(t, n.DriveUntil(func() bool { n.sync(); return n.cur == 1 }, 10*time.Second), "reverted")
	took := n.Now.Sub(start)
	require.GreaterOrEqual(t, took, 3*time.Second)
	require.Less(t, took, 5*time.Second)
	st := n.Srv.Stats(n.Now)
	require.Equal(t, int64(1), st.MigrationsReverted)
	require.Zero(t, st.Migrations)
	require.Zero(t, n.prev)
	// The attacker's address got only what the limit allows.
	require.LessOrEqual(t, n.sentTo[3], 3*n.recvFrom[3])
	// And the client's own later packets are taken as before.
	n.dropCli = nil
	_, err = n.Cli.Write([]byte(" again"))
	require.NoError(t, err)
	n.Run(2 * time.Second)
	require.Equal(t, "hello again", n.serverRead())
}

// serverRead is what the server's stream has for the reader now.
func (n *natPair) serverRead() string {
	buf := make([]byte, 64)
	k, _ := n.Srv.Read(buf)
	return string(buf[:k])
}

// The race of RFC 9000 §9.3.3 with the client still talking: the server
// moves to the attacker's address on the copy, and the client's next
// packet, from its real (the previous) address, brings it straight back
// without a validation.
func TestMigrationRaceMovesBack(t *testing.T) {
	n := newNATPair(t, migrationLink)
	n.Run(100 * time.Millisecond)
	_, err := n.Cli.Write([]byte("hello"))
	require.NoError(t, err)
	d, ok := n.Take(n.Cli)
	require.True(t, ok)
	require.Equal(t, Moved, n.From(3, bytes.Clone(d)))
	require.Equal(t, Dropped, n.From(1, d), "the original, arriving second, is a replay")
	// The server's ACK went to the attacker; the client retransmits.
	require.True(t, n.DriveUntil(func() bool { return n.cur == 1 }, 5*time.Second))
	st := n.Srv.Stats(n.Now)
	require.Equal(t, int64(1), st.MigrationsReverted)
	require.Zero(t, st.Migrations)
	require.False(t, n.Srv.mig.validating())
}

// A replayed genuine packet and a forged one from a third address never
// move the connection; a genuine late one (reordered, not the newest) is
// taken but does not move it either.
func TestMigrationReplayForgeryAndReorderDoNotMove(t *testing.T) {
	n := newNATPair(t, migrationLink)
	n.Record = true
	_, err := n.Cli.Write([]byte("abc"))
	require.NoError(t, err)
	n.Run(200 * time.Millisecond)
	var genuine []byte
	for _, s := range n.Sent {
		if s.From == n.Cli && wire.Type(s.B[1]) == wire.TypeData {
			genuine = s.B
		}
	}
	require.NotNil(t, genuine)
	before := n.Srv.st
	require.Equal(t, Dropped, n.From(3, bytes.Clone(genuine)), "replayed")

	forged := bytes.Clone(genuine)
	forged[len(forged)-1] ^= 1
	forged[19]++ // a new packet number too, or the replay window drops it first
	require.Equal(t, Dropped, n.From(3, forged), "forged")
	random := wire.AppendHeader(nil, wire.Header{Type: wire.TypeData, Flags: wire.FlagProtected, Epoch: wire.EpochApp0, ConnID: pairConnID, PN: 1 << 40})
	random = append(random, bytes.Repeat([]byte{0x5a}, 100)...)
	require.Equal(t, Dropped, n.From(3, random), "random bytes under the connection's ID")
	// Counted by the transport (ListenerStats.WrongAddress), not twice.
	require.Equal(t, before.Unauthenticated, n.Srv.st.Unauthenticated)
	require.Equal(t, before.Replayed, n.Srv.st.Replayed)

	// Reordered: the first packet held back, the second delivered, then
	// the first from a third address.
	_, err = n.Cli.Write([]byte("d"))
	require.NoError(t, err)
	late, ok := n.Take(n.Cli)
	require.True(t, ok)
	late = bytes.Clone(late)
	_, err = n.Cli.Write([]byte("e"))
	require.NoError(t, err)
	n.Run(50 * time.Millisecond)
	require.Equal(t, Accepted, n.From(3, late), "genuine but not the newest")
	require.Equal(t, 1, n.cur)
	require.Equal(t, 3, n.cand)
	require.False(t, n.Srv.mig.validating())
	st := n.Srv.Stats(n.Now)
	require.Zero(t, st.Migrations+st.MigrationsReverted)
}

// Without TLS nothing authenticates a packet from another address: the
// connection never moves. Nor does a client follow its server elsewhere.
func TestMigrationNeverInPlaintextNorClient(t *testing.T) {
	p := OpenPair(t, Config{}, migrationLink)
	p.Record = true
	_, err := p.Cli.Write([]byte("abc"))
	require.NoError(t, err)
	p.Run(100 * time.Millisecond)
	d := p.Sent[len(p.Sent)-1].B
	for _, s := range p.Sent {
		if s.From == p.Cli && wire.Type(s.B[1]) == wire.TypeData {
			d = bytes.Clone(s.B)
			d[12+7]++ // a new packet number: the newest
		}
	}
	require.Equal(t, Dropped, p.Srv.HandleFrom(p.Now, p.Wall(p.Srv), d, PathOther, natAddr(3)))

	n := newNATPair(t, migrationLink)
	n.Record = true
	_, err = n.Srv.Write([]byte("abc"))
	require.NoError(t, err)
	d, ok := n.Take(n.Srv)
	require.True(t, ok)
	require.Equal(t, Dropped, n.Cli.HandleFrom(n.Now, n.Wall(n.Cli), d, PathOther, natAddr(3)))
}

// The rule of pathChanged at its thresholds.
func TestPathChangedThresholds(t *testing.T) {
	s := &Session{}
	s.mig.state().oldSRTT, s.mig.p.oldMinRTT = 40*time.Millisecond, 20*time.Millisecond
	for sample, want := range map[time.Duration]bool{
		9 * time.Millisecond:   true, // below half the minimum
		10 * time.Millisecond:  false,
		40 * time.Millisecond:  false,
		100 * time.Millisecond: false, // 2 × 40 + 20
		101 * time.Millisecond: true,
	} {
		require.Equal(t, want, s.pathChanged(sample), "%v", sample)
	}
	s.mig.p.oldSRTT = 0
	require.False(t, s.pathChanged(time.Second), "no old RTT: nothing to compare")
}

// The receiver of an upload measures its round trip from the echoes on
// the sender's data, which wait in the data's queue: its smoothed RTT
// holds that queue, its minimum does not. A rebinding after an idle
// period (queue empty: the challenge's round trip near the base RTT)
// compares with the minimum and keeps the path's state.
func TestPathRTTOfAReceiverUsesTheEchoMinimum(t *testing.T) {
	s := &Session{tr: recovery.New()}
	for _, ms := range []int{41, 90, 80, 85, 78} { // base 40 ms, then a 40 ms queue
		rtt := time.Duration(ms) * time.Millisecond
		if s.echoRTT == 0 {
			s.echoRTT, s.echoMinRTT = rtt, rtt
			continue
		}
		s.echoRTT += (rtt - s.echoRTT) / 8
		s.echoMinRTT = min(s.echoMinRTT, rtt)
	}
	p := s.mig.state()
	p.oldSRTT, p.oldMinRTT = s.pathRTT()
	require.Equal(t, 41*time.Millisecond, p.oldMinRTT)
	require.Greater(t, p.oldSRTT, 50*time.Millisecond)
	require.False(t, s.pathChanged(38*time.Millisecond), "the same path with its queue drained")
	require.True(t, s.pathChanged(15*time.Millisecond), "a much shorter path")
}

// upload has the client write data and the server read it; it returns
// how long (virtual time) the server took to read it all.
func (n *natPair) upload(tb testing.TB, data []byte, limit time.Duration) time.Duration {
	tb.Helper()
	start := n.Now
	var got bytes.Buffer
	written := 0
	var buf [16 << 10]byte
	n.drive(limit, func() bool {
		for written < len(data) {
			k, _ := n.Cli.Write(data[written:])
			if k == 0 {
				break
			}
			written += k
		}
		for {
			k, err := n.Srv.Read(buf[:])
			got.Write(buf[:k])
			if k == 0 || err != nil {
				break
			}
		}
		return got.Len() == len(data)
	})
	require.Equal(tb, data, got.Bytes(), "server read %d of %d bytes", got.Len(), len(data))
	return n.Now.Sub(start)
}

// The race of RFC 9000 §9.3.3 kept up for a whole upload: an attacker
// beside the client sends a copy of every datagram from a third address,
// ahead of the original. The server follows the first copy, challenges
// both addresses, and gives the new one up once the previous one answered
// and it did not (well before the 3 s deadline); the address is then
// penalised and its copies move nothing. The upload takes at most 1.25
// times as long as the same upload undisturbed (goodput ≥ 80 %), and the
// attacker's address gets at most three times what came from it.
func TestMigrationRaceFromAVictimIsNotFollowed(t *testing.T) {
	data := randomData(8 << 20)
	calm := newNATPair(t, migrationLink)
	calmTook := calm.upload(t, data, time.Minute)

	n := newNATPair(t, migrationLink)
	n.race = 3
	took := n.upload(t, data, time.Minute)
	st := n.Srv.Stats(n.Now)
	t.Logf("8 MB upload: %v undisturbed, %v raced; server: migrations %d, reverted %d, refused %d; to the attacker's address %d B, from it %d B",
		calmTook, took, st.Migrations, st.MigrationsReverted, st.MigrationsRefused, n.sentTo[3], n.recvFrom[3])
	require.LessOrEqual(t, took, calmTook*5/4, "goodput below 80 %% of the undisturbed upload's")
	require.Equal(t, int64(1), st.MigrationsReverted, "the attacker's address followed once")
	require.Zero(t, st.Migrations)
	require.Positive(t, st.MigrationsRefused)
	require.LessOrEqual(t, n.sentTo[3], 3*n.recvFrom[3])
	require.Equal(t, 1, n.cur)
}

// The validation of an address the client is not at ends early once the
// previous address echoed its challenge (RFC 9000 §9.3.3): three of its
// round trips after the move, before the client's retransmission timer
// fires and well before the 3 s deadline; then the next copy from there
// moves nothing.
func TestMigrationGivenUpOnceThePreviousAddressAnswers(t *testing.T) {
	n := newNATPair(t, migrationLink)
	n.Run(100 * time.Millisecond)
	n.race = 3
	_, err := n.Cli.Write([]byte("hello"))
	require.NoError(t, err)
	require.True(t, n.DriveUntil(func() bool { return n.cur == 3 }, time.Second), "moved by the copy")
	moved := n.Now
	require.True(t, n.DriveUntil(func() bool { n.sync(); return n.cur == 1 }, 5*time.Second), "back")
	took := n.Now.Sub(moved)
	require.GreaterOrEqual(t, took, 2*migrationLink.Delay, "a round trip at least")
	require.Less(t, took, recovery.MinRTO, "gave up only after the client's RTO")
	_, err = n.Cli.Write([]byte(" again"))
	require.NoError(t, err)
	n.Run(time.Second)
	require.Equal(t, 1, n.cur)
	st := n.Srv.Stats(n.Now)
	require.Equal(t, int64(1), st.MigrationsReverted)
	require.Positive(t, st.MigrationsRefused)
	require.Equal(t, "hello again", n.serverRead())
}

// Copies from one address after another (3, 4, 3, …) while the client is
// silent do not keep the connection away: the validation keeps the
// deadline of the first move, and each address left is penalised.
func TestMigrationAlternatingAddressesKeepTheDeadline(t *testing.T) {
	n := newNATPair(t, migrationLink)
	n.Run(100 * time.Millisecond)
	n.dropCli = func([]byte) bool { return true }
	var first clock.Mono
	for i := 0; n.cur != 1 || first == 0; i++ {
		require.Less(t, i, 20, "never back on the client's address")
		_, err := n.Cli.Write([]byte("x"))
		require.NoError(t, err)
		d, ok := n.Take(n.Cli)
		require.True(t, ok)
		src := 3 + i%2
		v := n.From(src, bytes.Clone(d))
		if first == 0 {
			require.Equal(t, Moved, v)
			first = n.Now
		}
		n.Run(400 * time.Millisecond)
		n.sync()
	}
	took := n.Now.Sub(first)
	require.Less(t, took, n.Srv.pathValidationTimeout()+400*time.Millisecond, "the deadline was pushed back")
	for _, a := range []int{3, 4} {
		require.True(t, n.Srv.mig.p.suspect(n.Now, natAddr(a)), "address %d", a)
	}
}

// A NAT that really does rebind the client back to an address the server
// penalised: the client's packets from there are refused at first, the
// server probes the address, the client answers (and sends a PING), and
// the connection follows it there; the download completes.
func TestMigrationPenalisedAddressFollowedOnceItAnswers(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 6<<20)
	n.Run(200 * time.Millisecond)
	var got bytes.Buffer
	n.race = 3
	n.drive(time.Second, func() bool { written = n.feed(data, written, &got); return false })
	n.race = 0
	require.Equal(t, int64(1), n.Srv.Stats(n.Now).MigrationsReverted)
	require.True(t, n.Srv.mig.p.suspect(n.Now, natAddr(3)))
	require.Less(t, got.Len(), len(data)/2, "the download still runs")
	n.Rebind(3)
	rebound := n.Now
	n.drive(10*time.Second, func() bool { written = n.feed(data, written, &got); return n.cur == 3 })
	require.Equal(t, 3, n.cur, "never followed")
	t.Logf("followed %v after the rebinding", n.Now.Sub(rebound))
	require.Less(t, n.Now.Sub(rebound), time.Second)
	require.Equal(t, data, n.pumpInto(t, data, written, &got, 30*time.Second))
	st := n.Srv.Stats(n.Now)
	require.Equal(t, 3, n.cur)
	require.Positive(t, st.MigrationsRefused)
	require.Equal(t, int64(1), st.Migrations)
	require.False(t, n.Srv.mig.p.suspect(n.Now, natAddr(3)), "pardoned")
}

// With the list full (an attacker used 4 addresses), a NAT rebinding to a
// fifth address is probed before it is followed, and followed once the
// client answers.
func TestMigrationFullPenaltyListStillFollowsTheClient(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 6<<20)
	var got bytes.Buffer
	n.drive(200*time.Millisecond, func() bool { written = n.feed(data, written, &got); return false })
	p := n.Srv.mig.state()
	for a := 10; a < 10+maxPenalized; a++ {
		p.penalize(n.Now, natAddr(a))
	}
	require.True(t, p.suspect(n.Now, natAddr(5)), "full: a new address is suspect")
	n.Rebind(5)
	rebound := n.Now
	n.drive(10*time.Second, func() bool { written = n.feed(data, written, &got); return n.cur == 5 })
	require.Equal(t, 5, n.cur, "never followed")
	t.Logf("followed %v after the rebinding", n.Now.Sub(rebound))
	require.Equal(t, data, n.pumpInto(t, data, written, &got, 30*time.Second))
	st := n.Srv.Stats(n.Now)
	require.Positive(t, st.MigrationsRefused)
	require.Equal(t, int64(1), st.Migrations)
}

// Rebinding back and forth between two addresses (1 → 2 → 1 → 2), each
// move a genuine one: every move is followed, none is refused, and the
// download completes.
func TestMigrationRebindingBackAndForth(t *testing.T) {
	n := newNATPair(t, migrationLink)
	data, written := download(t, n.Srv, 6<<20)
	var got bytes.Buffer
	for _, to := range []int{2, 1, 2} {
		n.drive(700*time.Millisecond, func() bool { written = n.feed(data, written, &got); return false })
		n.Rebind(to)
	}
	require.Equal(t, data, n.pumpInto(t, data, written, &got, 30*time.Second))
	st := n.Srv.Stats(n.Now)
	require.Equal(t, 2, n.cur)
	require.Equal(t, int64(3), st.Migrations)
	require.Zero(t, st.MigrationsReverted+st.MigrationsRefused)
}

// The penalty list, on a manual clock: an address stays listed for
// addrPenalty from its last offence, a pardon lifts it, and the list holds
// maxPenalized addresses: full, it makes every other address suspect, and
// a further one replaces the entry that expires first.
func TestPenaltyList(t *testing.T) {
	var l penaltyList
	a := func(i int) netip.AddrPort { return natAddr(i) }
	now := clock.Mono(time.Second)
	l.add(now, a(1))
	require.True(t, l.suspect(now, a(1)))
	require.False(t, l.suspect(now, a(2)))
	require.True(t, l.suspect(now.Add(addrPenalty-1), a(1)))
	require.False(t, l.suspect(now.Add(addrPenalty), a(1)), "expired")

	now = now.Add(10 * time.Second) // 11 s: a(1) until 41 s
	require.True(t, l.renew(now, a(1)))
	require.True(t, l.suspect(now.Add(addrPenalty-1), a(1)), "renewed")
	require.False(t, l.renew(now, a(2)), "only a listed address is renewed")
	require.False(t, l.suspect(now, a(2)))

	for i := 2; i <= maxPenalized; i++ { // a(2), a(3), a(4) until 42, 43, 44 s
		now = now.Add(time.Second)
		l.add(now, a(i))
	}
	require.True(t, l.suspect(now, a(9)), "full: every address is suspect")
	l.pardon(a(2))
	require.False(t, l.suspect(now, a(2)), "pardoned")
	require.False(t, l.suspect(now, a(9)), "no longer full")
	l.add(now, a(2)) // until 44 s
	now = now.Add(time.Second)
	l.add(now, a(5)) // in place of a(1), which expires first
	l.pardon(a(5))
	require.False(t, l.suspect(now, a(1)), "a(1) made room")
	for _, i := range []int{2, 3, 4} {
		require.True(t, l.suspect(now, a(i)), "a(%d)", i)
	}
	require.Len(t, l, maxPenalized, "the bound")
}

// A connection that ever saw a datagram from another address keeps its
// pathState: it stays in the allocator's 768-byte size class (with the
// 8-byte header an object with pointers gets).
func TestPathStateFitsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(pathState{})+8, uintptr(768), "pathState is %d bytes", unsafe.Sizeof(pathState{}))
}
