package session

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/recovery"
	"github.com/fresh-udp/fresh/internal/wire"
)

// optimisticAcker receives a client's data and, instead of the ranges it
// received, acknowledges everything from 0 to the largest packet number
// seen: the lazy optimistic ACKer, which claims the holes too. It returns
// how many data packets the client sent before it closed the connection
// (0: never, within limit packets). With noSkip the client's tracker
// skips no packet numbers.
func optimisticAcker(t *testing.T, seed uint64, limit int, noSkip bool) int {
	cli, err := New(Config{Seed: seed}, 3, true, 0)
	require.NoError(t, err)
	if noSkip {
		cli.tr = recovery.NewWithAckDelay(cli.cfg.MaxAckDelay)
	}
	buf := make([]byte, 0, 2048)
	_, _, ok := cli.Poll(0, 0, buf) // the Initial
	require.True(t, ok)
	require.True(t, cli.Handle(0, 0, wire.AppendAccept(wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeAccept, ConnID: 3}), &wire.Accept{})))
	var now clock.Mono
	largest, sent := int64(-1), 0
	chunk := make([]byte, 64<<10)
	for sent < limit {
		cli.Write(chunk)
		now = now.Add(time.Millisecond)
		wall := int64(now) / 1000
		for {
			d, _, ok := cli.Poll(now, wall, buf)
			if !ok {
				break
			}
			h, _, err := wire.ParseHeader(d)
			require.NoError(t, err)
			if h.Type == wire.TypeData {
				sent++
				largest = max(largest, h.PN)
			}
		}
		if largest < 0 {
			continue
		}
		a := wire.Ack{MaxData: 1 << 40, NRanges: 1}
		a.Ranges[0] = wire.AckRange{Largest: largest, Smallest: 0}
		b := wire.AppendAck(wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeAck, ConnID: 3, Timestamp: wall}), &a)
		now = now.Add(time.Millisecond)
		require.True(t, cli.Handle(now, int64(now)/1000, b))
		if cli.closePending || cli.Closed() {
			require.ErrorIs(t, cli.err, ErrOptimisticAck)
			return sent
		}
	}
	return 0
}

// A peer that acknowledges packets it never received is caught at the
// first skipped packet number it claims: within 1.5 skip periods of data
// packets (the first skip comes after 128..383 packets), for every seed.
func TestOptimisticAckerCaught(t *testing.T) {
	var caught []int
	for seed := range uint64(200) {
		n := optimisticAcker(t, seed+1, 10_000, false)
		require.Positive(t, n, "seed %d: never caught", seed+1)
		caught = append(caught, n)
	}
	slices.Sort(caught)
	t.Logf("data packets sent until caught, 200 seeds: min %d, median %d, p90 %d, max %d",
		caught[0], caught[len(caught)/2], caught[len(caught)*9/10], caught[len(caught)-1])
	require.LessOrEqual(t, caught[len(caught)-1], 3*256/2+64)

	// Without skipped numbers the same peer goes unnoticed.
	require.Zero(t, optimisticAcker(t, 1, 10_000, true))
}

// Acknowledging a packet number not sent yet is the other optimistic ACK,
// and the error says so.
func TestAckOfUnsentPacketIsOptimistic(t *testing.T) {
	cli, err := New(Config{}, 3, true, 0)
	require.NoError(t, err)
	buf := make([]byte, 0, 2048)
	cli.Poll(0, 0, buf)
	cli.Handle(0, 0, wire.AppendAccept(wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeAccept, ConnID: 3}), &wire.Accept{}))
	cli.Write(make([]byte, 3000))
	for {
		if _, _, ok := cli.Poll(0, 0, buf); !ok {
			break
		}
	}
	a := wire.Ack{MaxData: 1 << 20, NRanges: 1}
	a.Ranges[0] = wire.AckRange{Largest: int64(cli.tr.Next()), Smallest: 0}
	cli.Handle(1000, 1, wire.AppendAck(wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeAck, ConnID: 3}), &a))
	require.ErrorIs(t, cli.err, ErrOptimisticAck)
	require.Contains(t, cli.err.Error(), "acknowledged a packet never sent")
	d, _, ok := cli.Poll(2000, 2, buf)
	require.True(t, ok)
	h, body, _ := wire.ParseHeader(d)
	require.Equal(t, wire.TypeClose, h.Type, "the peer is told")
	var c wire.Close
	require.NoError(t, wire.ParseClose(body, &c))
	require.Equal(t, closeProtocol, c.Code)
}

// An honest peer is never taken for an optimistic one, and skips cost no
// loss: a 4 MB transfer over a clean 5 ms link declares nothing lost and
// retransmits nothing although the sender skipped packet numbers; with 2 %
// loss it completes, exact, without ErrOptimisticAck.
func TestHonestPeerNeverOptimistic(t *testing.T) {
	for _, loss := range []int{0, 2} {
		p := OpenPair(t, Config{Seed: 42}, Link{Delay: 5 * time.Millisecond})
		rng := rand.New(rand.NewPCG(uint64(loss), 9))
		p.Filter = func(*Session, []byte) bool { return rng.IntN(100) >= loss }
		data := make([]byte, 4<<20)
		for i := range data {
			data[i] = byte(i * 13)
		}
		got, rd, w := make([]byte, 0, len(data)), make([]byte, 256<<10), 0
		for i := 0; i < 200_000 && !p.Srv.in.eof(); i++ {
			if w < len(data) {
				w += p.Cli.out.write(data[w:])
				p.Cli.out.finSet = w == len(data)
			}
			p.Run(100 * time.Microsecond)
			n, _ := p.Srv.Read(rd)
			got = append(got, rd[:n]...)
			require.False(t, p.Cli.Closed() || p.Srv.Closed(), "loss %d%%: %v / %v", loss, p.Cli.Err(), p.Srv.Err())
		}
		require.True(t, p.Srv.in.eof(), "loss %d%%: FIN delivered", loss)
		require.True(t, slices.Equal(data, got), "loss %d%%: bytes exact", loss)
		st := p.Cli.Stats(p.Now)
		skips := len(p.Cli.tr.Skipped())
		t.Logf("loss %d%%: %d packets, %d skipped numbers, %d lost, %d retransmitted", loss, st.PacketsSent, skips, st.PacketsLost, st.Retransmitted)
		require.Greater(t, skips, 5)
		if loss == 0 {
			require.Zero(t, st.PacketsLost, "a skip is not a loss")
			require.Zero(t, st.Retransmitted)
		}
		require.False(t, errors.Is(p.Cli.Err(), ErrOptimisticAck))
	}
}
