package session

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// pumpStream writes data from the client in pieces as the send buffer
// allows, and has the server read it all, calling stored after every read
// with the bytes read so far. It fails the test unless everything arrives
// within limit of virtual time.
func pumpStream(t *testing.T, p *Pair, data []byte, stored func(read int64), limit time.Duration) []byte {
	t.Helper()
	var got []byte
	written := 0
	rd := make([]byte, 4096)
	ok := p.DriveUntil(func() bool {
		if written < len(data) {
			n, err := p.Cli.Write(data[written:])
			require.NoError(t, err)
			written += n
			if written == len(data) {
				require.NoError(t, p.Cli.CloseWrite())
			}
		}
		for {
			n, err := p.Srv.Read(rd)
			got = append(got, rd[:n]...)
			if n > 0 && stored != nil {
				stored(int64(len(got)))
			}
			if err == io.EOF {
				return true
			}
			require.NoError(t, err)
			if n == 0 {
				return false
			}
		}
	}, limit)
	require.True(t, ok, "stream: %d of %d bytes read", len(got), len(data))
	return got
}

// The receiver's Commit reaches the sender: Committed is what the
// receiver committed, not what it acknowledged. Before any commit it is 0
// although every byte was acknowledged.
func TestCommitReachesSender(t *testing.T) {
	p := OpenTLSPair(t, Link{Delay: 10 * time.Millisecond})
	data := make([]byte, 100_000)
	pumpStream(t, p, data, nil, 10*time.Second)
	p.Run(100 * time.Millisecond)
	require.Zero(t, p.Cli.Unacked(), "every byte acknowledged")
	require.Zero(t, p.Cli.Committed(), "acknowledged is not committed")

	require.NoError(t, p.Srv.Commit(60_000))
	require.True(t, p.DriveUntil(func() bool { return p.Cli.Committed() == 60_000 }, time.Second))
	require.NoError(t, p.Srv.Commit(int64(len(data))))
	require.True(t, p.DriveUntil(func() bool { return p.Cli.Committed() == int64(len(data)) }, time.Second))
	require.True(t, p.DriveUntil(func() bool { return !p.Srv.CommitUnacked() }, time.Second), "the commit is acknowledged")
}

// An application cannot commit what it has not read.
func TestCommitBeyondReadRefused(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	pumpStream(t, p, make([]byte, 1000), nil, time.Second)
	err := p.Srv.Commit(1001)
	require.ErrorIs(t, err, ErrCommitBeyondRead)
	require.ErrorContains(t, err, "Commit(1001) with 1000 bytes read")
	require.ErrorIs(t, p.Srv.Commit(-1), ErrCommitBeyondRead)
	require.NoError(t, p.Srv.Commit(1000))
	require.False(t, p.Srv.Closed())
}

// Under 30 % loss both ways, every commit is eventually known to the
// sender: lost Commit frames are sent again (the latest one). Committed
// never decreases and never exceeds what the receiver committed. Seeds 4
// and 5 run with TLS, where Commit frames number in the acknowledged
// packet-number space.
func TestCommitReliableUnderLoss(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := Config{}
		if seed > 3 {
			cfg = secure(t)
		}
		p := NewPair(t, cfg, cfg, Link{Delay: 5 * time.Millisecond, Seed: seed})
		p.Open()
		p.Link.Loss = 0.3 // after the handshake, which is not what this tests
		data := make([]byte, 200_000)
		var committed, prev int64
		step := 0
		pumpStream(t, p, data, func(read int64) {
			step++
			if step%3 == 0 { // a commit every third read, as stores complete
				require.NoError(t, p.Srv.Commit(read))
				committed = read
			}
			got := p.Cli.Committed()
			require.GreaterOrEqual(t, got, prev, "Committed never decreases")
			require.LessOrEqual(t, got, committed, "never more than the receiver committed")
			prev = got
		}, 60*time.Second)
		require.NoError(t, p.Srv.Commit(int64(len(data))))
		ok := p.DriveUntil(func() bool {
			require.GreaterOrEqual(t, p.Cli.Committed(), prev)
			prev = p.Cli.Committed()
			return prev == int64(len(data)) && !p.Srv.CommitUnacked()
		}, 30*time.Second)
		require.True(t, ok, "seed %d: committed %d of %d", seed, p.Cli.Committed(), len(data))
	}
}

// A lost Commit with nothing else in flight is still sent again: the
// retransmission timer covers it (its bytes are in flight).
func TestCommitLostAloneIsResent(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 5 * time.Millisecond})
	pumpStream(t, p, make([]byte, 5000), nil, time.Second)
	p.Run(100 * time.Millisecond)
	require.NoError(t, p.Srv.Commit(5000))
	dropped := 0
	p.Filter = func(from *Session, d []byte) bool {
		h, _, err := wire.ParseHeader(d)
		require.NoError(t, err)
		if from == p.Srv && h.Type == wire.TypeCommit && dropped < 2 {
			dropped++
			return false
		}
		return true
	}
	require.True(t, p.DriveUntil(func() bool { return p.Cli.Committed() == 5000 }, 10*time.Second))
	require.Equal(t, 2, dropped)
}

// commitDatagram is a plaintext Commit of off with packet number pn.
func commitDatagram(pn, off int64) []byte {
	b := wire.AppendHeader(nil, wire.Header{Type: wire.TypeCommit, ConnID: pairConnID, PN: pn, Timestamp: 1})
	return wire.AppendCommit(b, &wire.Commit{Offset: off})
}

// An older Commit arriving after a newer one (reordered, or replayed)
// never lowers Committed.
func TestCommitNeverLowers(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	pumpStream(t, p, make([]byte, 3000), nil, time.Second)
	require.True(t, p.Inject(p.Cli, commitDatagram(1000, 2000)))
	require.Equal(t, int64(2000), p.Cli.Committed())
	require.True(t, p.Inject(p.Cli, commitDatagram(1001, 500)))
	require.Equal(t, int64(2000), p.Cli.Committed(), "an older commit changes nothing")
	require.False(t, p.Cli.Closed())
}

// A Commit beyond the bytes ever sent claims what the peer cannot have
// received: a protocol violation that closes the connection, and the
// claim is not taken.
func TestCommitBeyondSentIsProtocolViolation(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	pumpStream(t, p, make([]byte, 3000), nil, time.Second)
	require.True(t, p.Inject(p.Cli, commitDatagram(1000, 3001)))
	require.Zero(t, p.Cli.Committed(), "the lie is not taken")
	require.True(t, p.DriveUntil(func() bool { return p.Cli.Closed() && p.Srv.Closed() }, time.Second))
	require.ErrorIs(t, p.Cli.Err(), ErrProtocol)
	require.ErrorContains(t, p.Cli.Err(), "peer committed 3001 stream bytes, only 3000 were sent")
	require.ErrorIs(t, p.Srv.Err(), ErrPeerClosed)
	require.ErrorIs(t, p.Srv.Err(), ErrProtocol)
}

// A receiver that commits and at once closes (a store that failed after
// part of an upload) has its commit reach the sender before the close.
func TestCommitGoesBeforeClose(t *testing.T) {
	p := OpenTLSPair(t, Link{Delay: 5 * time.Millisecond})
	pumpStream(t, p, make([]byte, 50_000), nil, 5*time.Second)
	require.NoError(t, p.Srv.Commit(20_000))
	require.NoError(t, p.Srv.CloseWithError(7, "disk full"))
	require.True(t, p.DriveUntil(func() bool { return p.Cli.Closed() }, time.Second))
	require.Equal(t, int64(20_000), p.Cli.Committed())
	var ae *ApplicationError
	require.ErrorAs(t, p.Cli.Err(), &ae)
	require.Equal(t, uint32(7), ae.Code)
}

// CloseWithError's code and reason reach the peer, as an ApplicationError
// that is also ErrPeerClosed and ErrStreamAborted. The peer's stream is
// aborted: even with every byte and the FIN received, Read ends with the
// error, never io.EOF. The closing end's own calls say ErrClosed.
func TestCloseWithErrorReachesPeer(t *testing.T) {
	p := OpenTLSPair(t, Link{Delay: 5 * time.Millisecond})
	data := []byte("a whole stream, FIN and all")
	_, err := p.Cli.Write(data)
	require.NoError(t, err)
	require.NoError(t, p.Cli.CloseWrite())
	require.True(t, p.DriveUntil(func() bool { return p.Srv.in.finOff >= 0 }, time.Second))

	require.NoError(t, p.Cli.CloseWithError(0x2a, "storage failed: disk full"))
	require.True(t, p.DriveUntil(func() bool { return p.Srv.Closed() }, time.Second))

	rd := make([]byte, 100)
	n, err := p.Srv.Read(rd)
	require.NoError(t, err)
	require.Equal(t, data, rd[:n], "what arrived is read")
	_, err = p.Srv.Read(rd)
	require.NotErrorIs(t, err, io.EOF)
	var ae *ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, ApplicationError{Code: 0x2a, Reason: "storage failed: disk full"}, *ae)
	require.ErrorIs(t, err, ErrPeerClosed)
	require.ErrorIs(t, err, ErrStreamAborted)
	require.EqualError(t, err, "transport: peer closed with application error 42: storage failed: disk full")
	require.ErrorAs(t, p.Srv.UpdateErr(), &ae, "updates end with it too")

	_, err = p.Cli.Write([]byte("x"))
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, errors.As(p.Cli.Err(), &ae), "the local end is not told its own error back")
}

// Application codes sit in their own range: the largest reaches the peer
// as itself, one beyond is refused without closing, and a long or
// non-UTF-8 reason arrives cut to 255 bytes and valid UTF-8.
func TestCloseWithErrorCodeRangeAndReason(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	err := p.Cli.CloseWithError(MaxApplicationCode+1, "x")
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "CloseWithError code")
	require.False(t, p.Cli.Closed())
	p.Run(10 * time.Millisecond)
	require.False(t, p.Srv.Closed(), "nothing was sent")

	reason := strings.Repeat("é", 200) + "\xff"
	require.NoError(t, p.Cli.CloseWithError(MaxApplicationCode, reason))
	require.True(t, p.DriveUntil(func() bool { return p.Srv.Closed() }, time.Second))
	var ae *ApplicationError
	require.ErrorAs(t, p.Srv.Err(), &ae)
	require.Equal(t, MaxApplicationCode, ae.Code)
	require.Len(t, ae.Reason, 254, "cut at a rune boundary at or below 255 bytes")
	require.Equal(t, strings.Repeat("é", 127), ae.Reason)

	// Transport codes below the range are not application errors.
	q := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	q.Cli.CloseAbort()
	require.True(t, q.DriveUntil(func() bool { return q.Srv.Closed() }, time.Second))
	require.False(t, errors.As(q.Srv.Err(), &ae))
}

// A reason the peer chose prints as it is when it is printable text, and
// Go-quoted when it is not, so that a line break in it cannot start a
// forged line wherever the error is printed.
func TestApplicationErrorQuotesUnprintableReason(t *testing.T) {
	for reason, want := range map[string]string{
		"storage failed: disk full":   "storage failed: disk full",
		"café":                        "café",
		"x\nmonitor: upload complete": `"x\nmonitor: upload complete"`,
		"x\u2028y":                    `"x\u2028y"`,
		"bell\a":                      `"bell\a"`,
	} {
		err := &ApplicationError{Code: 7, Reason: reason}
		require.Equal(t, "transport: peer closed with application error 7: "+want, err.Error())
	}
	require.Equal(t, "transport: peer closed with application error 7", (&ApplicationError{Code: 7}).Error())
}

// After the connection closed, Commit reports why; Committed keeps what
// was confirmed.
func TestCommitAfterClose(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: time.Millisecond})
	pumpStream(t, p, make([]byte, 1000), nil, time.Second)
	require.NoError(t, p.Srv.Commit(400))
	p.Run(10 * time.Millisecond)
	p.Cli.Close()
	require.True(t, p.DriveUntil(func() bool { return p.Srv.Closed() }, time.Second))
	require.ErrorIs(t, p.Srv.Commit(1000), ErrPeerClosed)
	require.Equal(t, int64(400), p.Cli.Committed())
}
