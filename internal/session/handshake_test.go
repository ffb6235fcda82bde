package session

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

func TestTLSHandshakeAndProtectedStream(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{})
	p.Record = true
	p.Run(50 * time.Millisecond)
	require.True(t, p.Cli.Opened())
	require.True(t, p.Srv.Opened())
	require.NoError(t, p.Cli.Err())
	st, ok := p.Srv.TLSState()
	require.True(t, ok)
	require.Equal(t, ALPN, st.NegotiatedProtocol)
	require.Equal(t, uint16(tls.VersionTLS13), st.Version)

	secret := bytes.Repeat([]byte("plaintext marker "), 200)
	_, err := p.Cli.Write(secret)
	require.NoError(t, err)
	require.NoError(t, p.Cli.CloseWrite())
	require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte("update marker")))
	p.Run(200 * time.Millisecond)
	got := make([]byte, 8000)
	n, _ := p.Srv.Read(got)
	require.Equal(t, secret, got[:n])
	u, ok := p.Srv.TakeUpdate()
	require.True(t, ok)
	require.Equal(t, "update marker", string(u.Payload))

	// On the wire: every packet is protected (the handshake's first under
	// the Initial keys, TestTLSFirstFlightsSealed), and no plaintext leaks.
	for _, sent := range p.Sent {
		d := sent.B
		require.NotContains(t, string(d), "plaintext marker")
		require.NotContains(t, string(d), "update marker")
		h, _, err := wire.ParseHeader(d)
		require.NoError(t, err)
		require.NotZero(t, h.Flags&wire.FlagProtected, "%v packet in the clear", h.Type)
	}
	require.Zero(t, p.Cli.Stats(p.Now).Unauthenticated+p.Srv.Stats(p.Now).Unauthenticated)
}

// A client that does not trust the server's CA fails the handshake with the
// certificate error, and the server hears the TLS alert.
func TestTLSUntrustedServerFails(t *testing.T) {
	cli := secure(t)
	cli.TLS.RootCAs = x509.NewCertPool()
	p := NewPair(t, cli, secure(t), Link{})
	p.Run(50 * time.Millisecond)
	require.True(t, p.Cli.Closed())
	require.ErrorIs(t, p.Cli.Err(), ErrHandshake)
	require.Contains(t, p.Cli.Err().Error(), "certificate")
	require.True(t, p.Srv.Closed())
	require.ErrorIs(t, p.Srv.Err(), ErrHandshake)
	require.Contains(t, p.Srv.Err().Error(), "alert")
	var alert tls.AlertError
	require.ErrorAs(t, p.Srv.Err(), &alert, "the peer's alert is wrapped, not only named")
	require.Equal(t, tls.AlertError(42), alert, "bad_certificate (RFC 8446 §6.2): crypto/tls's client sends it for an unknown CA")
}

// Mutual TLS: a server that requires a client certificate refuses a client
// without one and names the one it gets.
func TestTLSMutualAuthentication(t *testing.T) {
	srv := secure(t)
	srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	srv.TLS.ClientCAs = srv.TLS.RootCAs
	cli := secure(t)
	cli.TLS.Certificates = nil
	p := NewPair(t, cli, srv, Link{})
	p.Run(100 * time.Millisecond)
	require.ErrorIs(t, p.Srv.Err(), ErrHandshake)
	require.True(t, p.Cli.Closed())

	p = NewPair(t, secure(t), srv, Link{}) // the shared config carries a certificate
	p.Run(100 * time.Millisecond)
	require.NoError(t, p.Srv.Err())
	st, ok := p.Srv.TLSState()
	require.True(t, ok)
	require.Len(t, st.PeerCertificates, 1)
	require.Equal(t, "localhost", st.PeerCertificates[0].Subject.CommonName)
	// The verified chain runs from that certificate to the CA.
	require.Len(t, st.VerifiedChains, 1)
	require.Len(t, st.VerifiedChains[0], 2)
	require.Same(t, st.PeerCertificates[0], st.VerifiedChains[0][0])
	require.True(t, st.VerifiedChains[0][1].IsCA)
	// Between calls the session keeps the certificate's DER, not its
	// parsed form (peercerts.go), and each call parses it afresh.
	require.Nil(t, p.Srv.sec.state.PeerCertificates)
	require.Nil(t, p.Srv.sec.state.VerifiedChains)
	require.Equal(t, st.PeerCertificates[0].Raw, p.Srv.sec.peer.der[0])
	again, _ := p.Srv.TLSState()
	require.NotSame(t, st.PeerCertificates[0], again.PeerCertificates[0])
	require.True(t, again.PeerCertificates[0].Equal(st.PeerCertificates[0]))
}

// Losing the first copy of every handshake datagram only costs time.
func TestTLSHandshakeSurvivesLoss(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{})
	seen := map[string]bool{}
	p.Filter = func(_ *Session, d []byte) bool {
		h, _, _ := wire.ParseHeader(d)
		if h.Type != wire.TypeInitial && h.Type != wire.TypeCrypto && h.Type != wire.TypeAccept {
			return true
		}
		k := string(d[28:min(len(d), 60)]) + string(rune(h.Type))
		if h.Flags&wire.FlagProtected != 0 {
			k = h.Type.String() + string(rune(h.Epoch)) // ciphertext differs per copy
		}
		first := !seen[k]
		seen[k] = true
		return !first
	}
	p.Run(5 * time.Second)
	require.True(t, p.Cli.Opened())
	require.NoError(t, p.Cli.Err())
	require.NoError(t, p.Srv.Err())
	_, err := p.Cli.Write([]byte("after a lossy handshake"))
	require.NoError(t, err)
	p.Run(time.Second)
	got := make([]byte, 64)
	n, _ := p.Srv.Read(got)
	require.Equal(t, "after a lossy handshake", string(got[:n]))
}

// The Accept lost while the session ticket that follows it arrives: the
// ticket, under the application keys, must not end the client's handshake
// (only the Accept confirms it, RFC 9001 §4.1.2), or the client drops its
// Finished and has nothing left to resend, while the server waits for it
// to resend the Accept: stuck until HandshakeTimeout (several in 50
// handshakes through 30 % loss, in the interop suite's handshakeloss).
func TestTLSAcceptLostTicketArrives(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: 10 * time.Millisecond})
	dropped, tickets := 0, 0
	p.Filter = func(from *Session, d []byte) bool {
		h, _, _ := wire.ParseHeader(d)
		switch {
		case from == p.Srv && h.Type == wire.TypeAccept && dropped == 0:
			dropped++
			return false
		case from == p.Srv && h.Type == wire.TypeCrypto && h.Epoch == wire.EpochApp0:
			tickets++
		}
		return true
	}
	require.True(t, p.DriveUntil(p.Cli.Opened, 3*time.Second), "the client never opened")
	require.Equal(t, 1, dropped)
	require.Positive(t, tickets, "the ticket went")
	_, err := p.Cli.Write([]byte("after the Accept came again"))
	require.NoError(t, err)
	p.Run(time.Second)
	got := make([]byte, 64)
	n, _ := p.Srv.Read(got)
	require.Equal(t, "after the Accept came again", string(got[:n]))
}

// Part of the server's flight arrives after the client's timer has backed
// off (its first three flights lost): the client resends its flight 250 ms
// after that progress, not after the 2 s its timer had reached, so the
// server resends the part that was lost.
func TestTLSHandshakeProgressResetsBackoff(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: 10 * time.Millisecond})
	initials, lastPart := 0, 0
	var partial clock.Mono
	p.Filter = func(from *Session, d []byte) bool {
		h, _, _ := wire.ParseHeader(d)
		switch {
		case from == p.Cli && h.Type == wire.TypeInitial:
			initials++
			return initials > 6 // the ClientHello is two datagrams: three flights lost
		case from == p.Srv && h.Type == wire.TypeCrypto && h.Epoch == wire.EpochHandshake:
			lastPart++
			if lastPart == 1 {
				partial = p.Now
				return false // the first copy of the flight's encrypted part
			}
		}
		return true
	}
	require.True(t, p.DriveUntil(p.Cli.Opened, 10*time.Second), "the client never opened")
	require.NotZero(t, partial)
	took := p.Now.Sub(partial)
	t.Logf("opened %v after the partial flight (the timer had backed off to %v)", took, handshakeBackoff(3))
	require.Less(t, took, 500*time.Millisecond)
}

// A Retry starts the handshake over, its timer's backoff too (RFC 9002
// §6.3): after three lost flights the client's timer is at 2 s, but once
// the Retry has come, a lost Initial with its token goes again in 250 ms.
func TestTLSRetryResetsBackoff(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{Delay: 10 * time.Millisecond})
	var sent []clock.Mono // the client's Initials that carry the token
	p.Filter = func(from *Session, d []byte) bool {
		h, _, _ := wire.ParseHeader(d)
		if from != p.Cli || h.Type != wire.TypeInitial {
			return true
		}
		if in := openedInitial(t, d); len(in.Token) > 0 {
			sent = append(sent, p.Now)
		}
		return false // every Initial lost: the server never hears one
	}
	p.Run(2 * time.Second) // three flights, the timer backed off to 2 s
	require.Empty(t, sent)
	retry := AppendRetry(nil, pairConnID, p.Wall(p.Cli), []byte("a token"))
	p.Inject(p.Cli, retry)
	p.Run(time.Second)
	require.GreaterOrEqual(t, len(sent), 4, "the Initial with the token, at once and again") // two datagrams each
	require.Less(t, sent[2].Sub(sent[0]), 500*time.Millisecond, "resent %v after the first", sent[2].Sub(sent[0]))
}

// openedInitial opens a sealed Initial datagram d, as a listener does
// (OpenInitial), and decodes it.
func openedInitial(t testing.TB, d []byte) wire.Initial {
	t.Helper()
	h, _, err := wire.ParseHeader(d)
	require.NoError(t, err)
	body, err := OpenInitial(nil, &h, d)
	require.NoError(t, err)
	var in wire.Initial
	require.NoError(t, wire.ParseInitial(body, len(d), &in))
	return in
}

// The client's handshake timer: 250 ms, doubled per expiry, bounded by
// the data path's recovery.MaxBackoffRTO.
func TestHandshakeBackoff(t *testing.T) {
	for tries, want := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second} {
		require.Equal(t, want, handshakeBackoff(tries), "after %d expiries", tries)
	}
}

// Forged, corrupted, replayed or unprotected packets are dropped and
// counted; none is delivered and none closes the connection.
func TestTLSForgedAndReplayedPacketsDropped(t *testing.T) {
	p := NewPair(t, secure(t), secure(t), Link{})
	p.Run(50 * time.Millisecond)
	_, err := p.Cli.Write([]byte("genuine"))
	require.NoError(t, err)
	var data []byte
	p.Filter = func(from *Session, d []byte) bool {
		if h, _, _ := wire.ParseHeader(d); h.Type == wire.TypeData && data == nil {
			data = bytes.Clone(d)
		}
		return true
	}
	p.Run(100 * time.Millisecond)
	require.NotNil(t, data)
	wall := p.Wall(p.Srv)

	before := p.Srv.Stats(p.Now)
	// Replay the genuine data packet.
	require.False(t, p.Srv.Handle(p.Now, wall, bytes.Clone(data)))
	// Corrupt one ciphertext byte (of a packet number not yet seen, or it
	// would count as a replay).
	bad := bytes.Clone(data)
	bad[19] ^= 0x40
	bad[40] ^= 0x80
	require.False(t, p.Srv.Handle(p.Now, wall, bad))
	// Forge in the clear, with the right connection ID: data, FIN, close.
	hdr := func(t wire.Type, flags uint8, pn int64) []byte {
		return wire.AppendHeader(nil, wire.Header{Type: t, Flags: flags, ConnID: 7, PN: pn, Timestamp: wall})
	}
	evil := wire.AppendData(hdr(wire.TypeData, wire.FlagFIN, 99), &wire.Data{Offset: 7, Payload: []byte("EVIL")})
	require.False(t, p.Srv.Handle(p.Now, wall, evil))
	require.False(t, p.Srv.Handle(p.Now, wall, wire.AppendClose(hdr(wire.TypeClose, 0, 0), &wire.Close{})))
	// A protected-looking packet with a made-up tag.
	fake := append(hdr(wire.TypeClose, wire.FlagProtected, 1<<40), make([]byte, 21)...)
	fake[3] = wire.EpochApp0
	require.False(t, p.Srv.Handle(p.Now, wall, fake))

	after := p.Srv.Stats(p.Now)
	require.Equal(t, before.Replayed+1, after.Replayed)
	require.Equal(t, before.Unauthenticated+4, after.Unauthenticated)
	require.False(t, p.Srv.Closed(), "a forged close must not close")
	got := make([]byte, 64)
	n, _ := p.Srv.Read(got)
	require.Equal(t, "genuine", string(got[:n]))
	require.NoError(t, p.Cli.CloseWrite())
	p.Run(100 * time.Millisecond)
	n, err = p.Srv.Read(got)
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
}

// Key update (RFC 9001 §6): with a tiny interval both sides change keys
// many times during a transfer and the stream arrives intact.
func TestTLSKeyUpdate(t *testing.T) {
	cli, srv := secure(t), secure(t)
	cli.KeyUpdateInterval, srv.KeyUpdateInterval = 50, 80
	p := NewPair(t, cli, srv, Link{})
	p.Run(50 * time.Millisecond)
	pairStream(t, p, 300_000)
	require.Greater(t, p.Cli.Stats(p.Now).KeyUpdates, int64(3))
	require.Greater(t, p.Srv.Stats(p.Now).KeyUpdates, int64(3))
	require.Zero(t, p.Srv.Stats(p.Now).Unauthenticated)
}

// pairStream writes n bytes on p's client, steps a millisecond at a time
// (at most 20 s of virtual time) and requires the server to read them
// intact.
func pairStream(t *testing.T, p *Pair, n int) {
	t.Helper()
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i * 7)
	}
	var got []byte
	buf := make([]byte, 65536)
	w := want
	for i := 0; i < 20000 && len(got) < len(want); i++ {
		if len(w) > 0 {
			n, err := p.Cli.Write(w)
			require.NoError(t, err)
			w = w[n:]
		}
		p.Run(time.Millisecond)
		n, _ := p.Srv.Read(buf)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, want, got)
}

// A key update waits for the peer to follow the last one (RFC 9001
// §6.1): with an interval far below the packets in flight on a 100 ms
// round trip, a sender that updated again before the peer saw the first
// update would flip back to the phase bit of keys the peer holds as its
// previous ones, and the peer could open nothing it sent.
func TestTLSKeyUpdateWaitsForPeer(t *testing.T) {
	cli := secure(t)
	cli.KeyUpdateInterval = 20
	p := NewPair(t, cli, secure(t), Link{Delay: 50 * time.Millisecond})
	p.Run(500 * time.Millisecond)
	pairStream(t, p, 1_000_000)
	cs, ss := p.Cli.Stats(p.Now), p.Srv.Stats(p.Now)
	require.Greater(t, cs.KeyUpdates, int64(3))
	require.Equal(t, cs.KeyUpdates, ss.KeyUpdates, "the server followed every update")
	require.Zero(t, ss.Unauthenticated)
	require.Zero(t, cs.Unauthenticated)
}

func TestTLSConfigErrors(t *testing.T) {
	_, err := New(Config{TLS: &tls.Config{}}, 1, true, 0)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "ServerName")
	_, err = New(Config{TLS: &tls.Config{ServerName: "x"}}, 1, false, 0)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "certificate")
	require.True(t, errors.Is(err, ErrInvalidConfig))
}

// Handshake datagrams never exceed 1200 bytes, whatever either end's
// MaxDatagram: the peer's limit is not known yet, and every end accepts
// 1200 (a small-update client and a bulk server share a listener).
func TestTLSHandshakeDatagramsFit1200(t *testing.T) {
	cli, srv := secure(t), secure(t)
	cli.MaxDatagram, srv.MaxDatagram = 270, 9000
	p := NewPair(t, cli, srv, Link{})
	p.Record = true
	p.Run(50 * time.Millisecond)
	require.True(t, p.Cli.Opened())
	require.NoError(t, p.Cli.Err())
	for _, d := range p.Sent {
		require.LessOrEqual(t, len(d.B), wire.MinInitialSize)
	}
}

// BenchmarkSessionStreamTLS is BenchmarkSessionStream with packet
// protection: the sender's poll and seal, the receiver's open and handle
// and read, and the ACK both ways.
func BenchmarkSessionStreamTLS(b *testing.B) {
	p := OpenTLSPair(b, Link{})
	chunk := make([]byte, p.Cli.cfg.MSS())
	rd := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		p.Cli.out.write(chunk)
		p.Run(100 * time.Microsecond)
		p.Srv.in.read(rd)
	}
}

// Protected stream packets cost no allocation in steady state, on either
// side (seal, open, replay window, ACK).
func TestTLSStreamDoesNotAllocate(t *testing.T) {
	p := OpenTLSPair(t, Link{})
	chunk := make([]byte, p.Cli.cfg.MSS())
	rd := make([]byte, 64<<10)
	step := func() {
		p.Cli.out.write(chunk)
		p.Run(100 * time.Microsecond)
		p.Srv.in.read(rd)
	}
	for range 5000 { // past slow start, buffers grown
		step()
	}
	require.Zero(t, testing.AllocsPerRun(1000, step))
}

// crypto/tls runs a goroutine per handshake until it completes or is
// closed: every way a session ends mid-handshake must release it.
func TestTLSReleasedWhenHandshakeEnds(t *testing.T) {
	halfOpen := func(t *testing.T) *Session {
		cli, err := New(secure(t), 9, true, 0)
		require.NoError(t, err)
		defer cli.Abort(ErrClosed)
		srv, err := New(secure(t), 9, false, 0)
		require.NoError(t, err)
		d, _, ok := cli.Poll(0, 0, make([]byte, 0, 1500))
		require.True(t, ok)
		srv.Handle(0, 0, d) // the first Initial only: TLS waits for the rest
		require.NotNil(t, srv.sec.conn)
		return srv
	}
	drain := func(s *Session, now clock.Mono) {
		for {
			if _, _, ok := s.Poll(now, 0, make([]byte, 0, 1500)); !ok {
				return
			}
		}
	}
	t.Run("abort", func(t *testing.T) {
		s := halfOpen(t)
		s.Abort(ErrClosed)
		require.Nil(t, s.sec.conn)
	})
	t.Run("close", func(t *testing.T) {
		s := halfOpen(t)
		s.Close()
		drain(s, 0)
		require.True(t, s.Closed())
		require.Nil(t, s.sec.conn)
	})
	t.Run("close without amplification room", func(t *testing.T) {
		s := halfOpen(t)
		s.st.BytesSent = 3 * s.st.BytesReceived // the budget spent
		s.Close()
		drain(s, 0)
		require.True(t, s.Closed())
		require.Nil(t, s.sec.conn)
	})
	t.Run("idle timeout", func(t *testing.T) {
		s := halfOpen(t)
		now := clock.Mono(0).Add(time.Minute)
		s.Timeout(now)
		drain(s, now)
		require.True(t, s.Closed())
		require.Nil(t, s.sec.conn)
	})
}

// A server lets go of what only the handshake needed as soon as TLS
// completes, before the handshake is confirmed: a monitor's device may
// send nothing for a while after its Finished, and until its first 1-RTT
// packet the server would otherwise hold crypto/tls's state machine, its
// flight 2 and the reassembly buffers. The handshake read secret stays,
// for a Finished the client repeats because our Accept was lost
// (TestTLSHandshakeSurvivesLoss loses the Accept).
func TestTLSServerReleasesHandshakeStateAtCompletion(t *testing.T) {
	srv := secure(t)
	srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	srv.TLS.ClientCAs = srv.TLS.RootCAs
	p := NewPair(t, secure(t), srv, Link{})
	p.Run(100 * time.Millisecond)
	require.True(t, p.Cli.Opened())
	require.True(t, p.Srv.Opened())
	sec := p.Srv.sec
	require.False(t, sec.confirmed, "the client sent no 1-RTT packet: the handshake is not confirmed at the server")
	require.Nil(t, sec.conn, "TLS released")
	require.Nil(t, sec.hsWrite)
	require.Nil(t, sec.hsRead)
	require.NotEmpty(t, sec.hsSecret, "kept to read a repeated Finished")
	for lvl := range numLevels {
		require.Nil(t, sec.out[lvl].data, "level %d: flight kept", lvl)
		require.Nil(t, sec.in[lvl].frags, "level %d", lvl)
	}
	_, ok := p.Srv.TLSState()
	require.True(t, ok)
}

// A server whose handshake fails as TLS takes the ClientHello, once it
// has derived its keys (tls.Config.VerifyConnection runs there for a
// client it asks no certificate of, and on every resumption), sends its
// Close in the clear: the client, which never got the ServerHello, reads
// the alert at once instead of resending its Initial until it times out.
func TestTLSServerRefusalBeforeItsFlightReachesClient(t *testing.T) {
	srv := secure(t)
	srv.TLS.VerifyConnection = func(tls.ConnectionState) error { return errors.New("not taken here") }
	p := NewPair(t, secure(t), srv, Link{Delay: 10 * time.Millisecond})
	p.Run(100 * time.Millisecond)
	require.ErrorIs(t, p.Srv.Err(), ErrHandshake)
	require.ErrorContains(t, p.Srv.Err(), "not taken here")
	require.True(t, p.Cli.Closed(), "the client heard the refusal within one round trip")
	require.ErrorIs(t, p.Cli.Err(), ErrHandshake)
	var alert tls.AlertError
	require.ErrorAs(t, p.Cli.Err(), &alert)
	require.Equal(t, tls.AlertError(42), alert, "bad_certificate, as crypto/tls answers a VerifyConnection error")
}
