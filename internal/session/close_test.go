package session

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/wire"
)

// deliverOne polls from once and hands the datagram to to unless drop.
func (p *sessionPair) deliverOne(from, to *Session, drop bool) (wire.Type, bool) {
	wall := int64(p.now) / 1000
	d, _, ok := from.poll(p.now, wall, p.buf)
	if !ok {
		return 0, false
	}
	h, body, err := wire.ParseHeader(d)
	if err != nil {
		panic(err)
	}
	if !drop {
		to.handle(p.now, wall+5000, h, body, len(d))
	}
	return h.Type, true
}

// A normal CLOSE promises every byte was acknowledged, so it ends the
// peer's stream even when the FIN itself was lost (or still paced).
func TestNormalCloseEndsStreamWithoutFIN(t *testing.T) {
	p := newSessionPair(t)
	data := []byte("every byte acknowledged")
	p.cli.out.write(data)
	p.advance(100, time.Millisecond) // delayed ACKs go out
	require.Zero(t, p.cli.out.unacked())

	p.cli.out.finSet = true
	typ, ok := p.deliverOne(p.cli, p.srv, true) // the FIN, lost
	require.True(t, ok)
	require.Equal(t, wire.TypeData, typ)
	p.cli.close()
	typ, _ = p.deliverOne(p.cli, p.srv, false)
	require.Equal(t, wire.TypeClose, typ)

	rd := make([]byte, 64)
	n := p.srv.in.read(rd)
	require.Equal(t, data, rd[:n])
	require.True(t, p.srv.in.eof(), "Read must end with io.EOF")
}

// A CLOSE with bytes still unacknowledged is an abort: the peer's stream
// gets no FIN, so its Read ends with an error rather than a silent EOF on
// a truncated stream.
func TestCloseWithUnackedBytesAborts(t *testing.T) {
	p := newSessionPair(t)
	p.cli.out.write(make([]byte, 5000))
	p.cli.out.finSet = true
	for {
		typ, ok := p.deliverOne(p.cli, p.srv, true) // the data, all lost
		if !ok {
			break
		}
		require.Equal(t, wire.TypeData, typ)
	}
	p.cli.close()
	typ, _ := p.deliverOne(p.cli, p.srv, false)
	require.Equal(t, wire.TypeClose, typ)
	require.Equal(t, stateClosed, p.srv.state)
	require.False(t, p.srv.in.eof())
	require.True(t, errors.Is(p.srv.err, ErrPeerClosed))
	require.Contains(t, p.srv.err.Error(), "unacknowledged")
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
	p := newSessionPair(t)
	src, rd := make([]byte, 400_000), make([]byte, 64<<10)
	largestAck, n, w := 0, 0, 0
	for range 20_000 {
		w += p.cli.out.write(src[w:]) // the send buffer starts smaller
		p.srv.Read(rd)                // and so does the receive window
		p.now = p.now.Add(100 * time.Microsecond)
		for _, s := range []*Session{p.cli, p.srv} {
			if d := s.NextTimeout(p.now); d != 0 && !p.now.Before(d) {
				s.Timeout(p.now)
			}
		}
		for {
			typ, ok := p.deliverOne(p.cli, p.srv, n%7 == 3)
			if !ok {
				break
			}
			if typ == wire.TypeData {
				n++
			}
		}
		wall := int64(p.now) / 1000
		for {
			d, _, ok := p.srv.Poll(p.now, wall, p.buf)
			if !ok {
				break
			}
			if n > 200 { // past the first gaps
				largestAck = max(largestAck, len(d))
			}
			h, body, err := wire.ParseHeader(d)
			require.NoError(t, err)
			p.cli.handle(p.now, wall+5000, h, body, len(d))
		}
	}
	require.Greater(t, n, 300, "data moved")
	// An ACK here carries a couple of OWD samples (12 bytes each): with
	// 16 ranges it would be 28 + 14 + 256 + samples > 298 bytes.
	require.Less(t, largestAck, wire.HeaderLen+14+6*16+4*12,
		"ACKs carry a few ranges, not all 16")
}

// closeAndDeliver closes from with Close and delivers what it sends until
// to has the CLOSE.
func (p *sessionPair) closeAndDeliver(t *testing.T, from, to *Session) {
	t.Helper()
	from.Close()
	for {
		typ, ok := p.deliverOne(from, to, false)
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
			p := newSessionPair(t)
			from, to := p.cli, p.srv
			if dir == "server closes" {
				from, to = p.srv, p.cli
			}
			wall := int64(p.now) / 1000
			require.NoError(t, from.SendUpdate(p.now, wall, []byte("reading")))
			p.advance(100, time.Millisecond)
			u, ok := to.TakeUpdate()
			require.True(t, ok)
			require.Equal(t, "reading", string(u.Payload))
			require.Zero(t, from.Unacked())

			p.closeAndDeliver(t, from, to)
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
	p := newSessionPair(t)
	data := []byte("the whole upload")
	n, err := p.cli.Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, p.cli.CloseWrite())
	wall := int64(p.now) / 1000
	require.NoError(t, p.cli.SendUpdate(p.now, wall, []byte("last reading")))
	p.advance(100, time.Millisecond)
	require.Zero(t, p.cli.Unacked())

	p.closeAndDeliver(t, p.cli, p.srv)
	require.Equal(t, ErrPeerClosed, p.srv.Err())
	rd := make([]byte, 64)
	n, err = p.srv.Read(rd)
	require.NoError(t, err)
	require.Equal(t, data, rd[:n])
	_, err = p.srv.Read(rd)
	require.Equal(t, io.EOF, err)
	u, ok := p.srv.TakeUpdate()
	require.True(t, ok)
	require.Equal(t, "last reading", string(u.Payload))
	require.Equal(t, io.EOF, p.srv.UpdateErr())
}

// After an abort the update reader gets the abort's error, not io.EOF.
func TestAbortIsNotEOFForUpdates(t *testing.T) {
	p := newSessionPair(t)
	p.cli.out.write(make([]byte, 5000))
	for {
		if _, ok := p.deliverOne(p.cli, p.srv, true); !ok { // all lost
			break
		}
	}
	p.closeAndDeliver(t, p.cli, p.srv)
	err := p.srv.UpdateErr()
	require.ErrorIs(t, err, ErrPeerClosed)
	require.NotEqual(t, ErrPeerClosed, err)
	require.Contains(t, err.Error(), "unacknowledged")
}
