package session

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// deliverOne takes one datagram from from at p.Now and hands it to to
// unless drop; it returns the datagram's type.
func deliverOne(t *testing.T, p *Pair, from, to *Session, drop bool) (wire.Type, bool) {
	t.Helper()
	d, ok := p.Take(from)
	if !ok {
		return 0, false
	}
	h, _, err := wire.ParseHeader(d)
	require.NoError(t, err)
	if !drop {
		p.Inject(to, d)
	}
	return h.Type, true
}

// A normal CLOSE promises every byte was acknowledged, so it ends the
// peer's stream even when the FIN itself was lost (or still paced).
func TestNormalCloseEndsStreamWithoutFIN(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	data := []byte("every byte acknowledged")
	p.Cli.out.write(data)
	p.Run(100 * time.Millisecond) // delayed ACKs go out
	require.Zero(t, p.Cli.out.unacked())

	p.Cli.out.finSet = true
	typ, ok := deliverOne(t, p, p.Cli, p.Srv, true) // the FIN, lost
	require.True(t, ok)
	require.Equal(t, wire.TypeData, typ)
	p.Cli.close()
	typ, _ = deliverOne(t, p, p.Cli, p.Srv, false)
	require.Equal(t, wire.TypeClose, typ)

	rd := make([]byte, 64)
	n := p.Srv.in.read(rd)
	require.Equal(t, data, rd[:n])
	require.True(t, p.Srv.in.eof(), "Read must end with io.EOF")
}

// CloseAbort says the stream is not whole even when every byte written was
// acknowledged (an upload cut short by its deadline): the peer reads what
// arrived and then ErrStreamAborted, where Close would have given io.EOF
// (TestNormalCloseEndsStreamWithoutFIN).
func TestCloseAbortIsNotEOFEvenWhenAcked(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	data := []byte("the first part of an upload")
	p.Cli.out.write(data)
	p.Run(100 * time.Millisecond)
	require.Zero(t, p.Cli.out.unacked(), "every byte acknowledged")

	p.Cli.CloseAbort()
	require.True(t, p.DriveUntil(func() bool { return p.Srv.Closed() }, time.Second))
	rd := make([]byte, 64)
	n := p.Srv.in.read(rd)
	require.Equal(t, data, rd[:n], "what arrived is still read")
	require.False(t, p.Srv.in.eof(), "never io.EOF after an abort")
	require.ErrorIs(t, p.Srv.err, ErrPeerClosed)
	require.ErrorIs(t, p.Srv.err, ErrStreamAborted)
}

// A CLOSE with bytes still unacknowledged is an abort: the peer's stream
// gets no FIN, so its Read ends with an error rather than a silent EOF on
// a truncated stream.
func TestCloseWithUnackedBytesAborts(t *testing.T) {
	p := OpenPair(t, Config{DisablePathMTUDiscovery: true}, Link{})
	p.Cli.out.write(make([]byte, 5000))
	p.Cli.out.finSet = true
	for {
		typ, ok := deliverOne(t, p, p.Cli, p.Srv, true) // the data, all lost
		if !ok {
			break
		}
		require.Equal(t, wire.TypeData, typ)
	}
	p.Cli.close()
	typ, _ := deliverOne(t, p, p.Cli, p.Srv, false)
	require.Equal(t, wire.TypeClose, typ)
	require.Equal(t, stateClosed, p.Srv.state)
	require.False(t, p.Srv.in.eof())
	require.True(t, errors.Is(p.Srv.err, ErrPeerClosed))
	require.ErrorIs(t, p.Srv.err, ErrStreamAborted)
}

// A normal CLOSE cannot paper over a hole: with a byte range missing the
// stream is not ended (the peer broke its promise; Read reports the close).
func TestNormalCloseDoesNotHideAHole(t *testing.T) {
	var r recvStream = newRecvStream(1<<16, 1<<16, 0)
	require.True(t, r.onData(0, make([]byte, 100), false))
	require.True(t, r.onData(200, make([]byte, 100), false))
	r.closeAt()
	require.False(t, r.eof())
	rd := make([]byte, 1000)
	require.Equal(t, 100, r.read(rd))
	require.False(t, r.eof())

	var whole recvStream = newRecvStream(1<<16, 1<<16, 0)
	require.True(t, whole.onData(0, make([]byte, 100), false))
	require.Equal(t, 100, whole.read(rd))
	whole.closeAt() // everything already read: the stream ends here
	require.True(t, whole.eof())
}

// ACK ranges the sender has seen acknowledged are not repeated: after many
// gaps (every 7th data packet lost), ACKs stay small instead of carrying 16
// ranges (288 bytes of them) for the rest of the connection.
func TestAckRangesForgottenOnceEchoed(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 5 * time.Millisecond})
	src, rd := make([]byte, 400_000), make([]byte, 64<<10)
	largestAck, n, w := 0, 0, 0
	maxRanges, maxSamples := 0, 0
	p.Filter = func(from *Session, d []byte) bool {
		if from == p.Srv {
			if n > 200 { // past the first gaps
				largestAck = max(largestAck, len(d))
				if h, body, err := wire.ParseHeader(d); err == nil && h.Type == wire.TypeAck {
					var a wire.Ack
					if wire.ParseAck(body, &a) == nil {
						maxRanges, maxSamples = max(maxRanges, a.NRanges), max(maxSamples, a.NSamples)
					}
				}
			}
			return true
		}
		// From the 7th data packet's turn on, the client's datagrams
		// are lost until that data packet is.
		drop := n%7 == 3
		if h, _, err := wire.ParseHeader(d); err == nil && h.Type == wire.TypeData {
			n++
		}
		return !drop
	}
	for range 20_000 {
		w += p.Cli.out.write(src[w:]) // the send buffer starts smaller
		p.Srv.Read(rd)                // and so does the receive window
		p.Run(100 * time.Microsecond)
	}
	t.Logf("%d data packets, largest ACK %d bytes, at most %d ranges and %d OWD samples", n, largestAck, maxRanges, maxSamples)
	require.Greater(t, n, 300, "data moved")
	// Ranges, not bytes: how many OWD samples an ACK carries follows the
	// sender's window (3 with owd before its loss level test, 6 with it),
	// the ranges follow what the sender has not yet seen acknowledged
	// (3 and 5 here; all 16 if they were never forgotten).
	require.Less(t, maxRanges, wire.MaxAckRanges/2, "ACKs carry a few ranges, not all %d", wire.MaxAckRanges)
}

// closeAndDeliver closes from with Close and delivers what it sends until
// to has the CLOSE.
func closeAndDeliver(t *testing.T, p *Pair, from, to *Session) {
	t.Helper()
	from.Close()
	for {
		typ, ok := deliverOne(t, p, from, to, false)
		require.True(t, ok, "no CLOSE was sent")
		if typ == wire.TypeClose {
			break
		}
	}
	require.True(t, to.Closed())
}

// An update-only connection closes normally: the peer's update reader gets
// io.EOF after the last update, and Err is ErrPeerClosed itself, not the
// abort's wrapped "stream cut" error. Both directions.
func TestUpdateOnlyCloseIsClean(t *testing.T) {
	for _, dir := range []string{"client closes", "server closes"} {
		t.Run(dir, func(t *testing.T) {
			p := OpenPair(t, Config{}, Link{})
			from, to := p.Cli, p.Srv
			if dir == "server closes" {
				from, to = p.Srv, p.Cli
			}
			require.NoError(t, from.SendUpdate(p.Now, p.Wall(from), []byte("reading")))
			p.Run(100 * time.Millisecond)
			u, ok := to.TakeUpdate()
			require.True(t, ok)
			require.Equal(t, "reading", string(u.Payload))
			require.Zero(t, from.Unacked())

			closeAndDeliver(t, p, from, to)
			require.Equal(t, ErrPeerClosed, to.Err(), "a normal close is not an abort")
			require.Equal(t, io.EOF, to.UpdateErr())
			require.Equal(t, ErrClosed, from.Err())
			n, err := to.Read(make([]byte, 8))
			require.Zero(t, n)
			require.Equal(t, io.EOF, err, "an empty stream, ended normally")
		})
	}
}

// A connection whose stream was written, ended and fully acknowledged,
// with updates alongside, closes normally too; an update that arrived
// before the CLOSE is still taken first.
func TestAckedStreamAndUpdatesCloseIsClean(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	data := []byte("the whole upload")
	n, err := p.Cli.Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, p.Cli.CloseWrite())
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("last reading")))
	p.Run(100 * time.Millisecond)
	require.Zero(t, p.Cli.Unacked())

	closeAndDeliver(t, p, p.Cli, p.Srv)
	require.Equal(t, ErrPeerClosed, p.Srv.Err())
	rd := make([]byte, 64)
	n, err = p.Srv.Read(rd)
	require.NoError(t, err)
	require.Equal(t, data, rd[:n])
	_, err = p.Srv.Read(rd)
	require.Equal(t, io.EOF, err)
	u, ok := p.Srv.TakeUpdate()
	require.True(t, ok)
	require.Equal(t, "last reading", string(u.Payload))
	require.Equal(t, io.EOF, p.Srv.UpdateErr())
}

// After an abort the update reader gets the abort's error, not io.EOF.
func TestAbortIsNotEOFForUpdates(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	p.Cli.out.write(make([]byte, 5000))
	for {
		if _, ok := deliverOne(t, p, p.Cli, p.Srv, true); !ok { // all lost
			break
		}
	}
	closeAndDeliver(t, p, p.Cli, p.Srv)
	err := p.Srv.UpdateErr()
	require.ErrorIs(t, err, ErrPeerClosed)
	require.NotEqual(t, ErrPeerClosed, err)
	require.ErrorIs(t, err, ErrStreamAborted)
}
