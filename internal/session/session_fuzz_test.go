package session

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/internal/wire"
)

// FuzzSession feeds arbitrary datagrams to an open session, as the drivers
// do (ParseHeader, the connection-ID check, handle), interleaved with polls
// and timer expiries. Whatever a peer or an attacker sends, the session
// must not panic, must keep its invariants and must keep its memory bounded.
//
// Input: a byte choosing the side under attack (even: server, odd: client),
// then datagrams, each a 2-byte big-endian length and the bytes. Seeds are
// a real exchange's datagrams, so mutations start from valid frames.
func FuzzSession(f *testing.F) {
	for _, seed := range sessionSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		p := newSessionPair(t)
		p.cli.out.write([]byte("some stream data in flight"))
		p.cli.updBuf = append(p.cli.updBuf[:0], "update"...)
		p.cli.updFresh = true
		p.exchange()
		s := p.srv
		if in[0]&1 == 1 {
			s = p.cli
		}
		in = in[1:]
		rd := make([]byte, 4096)
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			n = min(n, len(in))
			dg := in[:n]
			in = in[n:]
			p.now = p.now.Add(time.Millisecond)
			if h, body, err := wire.ParseHeader(dg); err == nil && h.ConnID == s.connID {
				s.handle(p.now, int64(p.now)/1000, h, body, len(dg))
			}
			if d := s.NextTimeout(p.now); d != 0 && !p.now.Before(d) {
				s.Timeout(p.now)
			}
			for range 64 { // drain what it wants to send, bounded
				if _, _, ok := s.poll(p.now, int64(p.now)/1000, p.buf); !ok {
					break
				}
			}
			s.in.read(rd)
			if s.in.readable() > len(s.in.ring) {
				t.Fatalf("receive ring overrun: %d readable in a %d-byte ring", s.in.readable(), len(s.in.ring))
			}
			if len(s.in.ring) > s.cfg.ReceiveWindow || s.out.limit > s.cfg.SendBuffer {
				t.Fatalf("buffers grew past their maxima: ring %d, send limit %d", len(s.in.ring), s.out.limit)
			}
			if s.in.maxData() < s.in.advertised {
				t.Fatalf("MaxData %d below the %d advertised", s.in.maxData(), s.in.advertised)
			}
			if s.out.unacked() > s.out.limit {
				t.Fatalf("send buffer grew to %d > %d", s.out.unacked(), s.out.limit)
			}
			if st := s.Stats(p.now); st.BytesReceived < 0 || st.PacketsReceived < 0 {
				t.Fatalf("negative counters: %+v", st)
			}
		}
	})
}

// sessionSeeds records the datagrams of a short real exchange (handshake,
// stream data with FIN, an update, ACKs, a close) and frames them as
// FuzzSession inputs, one per side and a few single-datagram ones.
func sessionSeeds(tb testing.TB) [][]byte {
	p := newSessionPair(tb)
	var toSrv, toCli [][]byte
	p.cli.out.write(make([]byte, 5000))
	p.cli.out.finSet = true
	p.cli.updBuf = append(p.cli.updBuf[:0], "temperature 21.5"...)
	p.cli.updFresh = true
	for range 60 {
		p.now = p.now.Add(5 * time.Millisecond)
		for _, dir := range []struct {
			from, to *Session
			log      *[][]byte
		}{{p.cli, p.srv, &toSrv}, {p.srv, p.cli, &toCli}} {
			if d := dir.from.NextTimeout(p.now); d != 0 && !p.now.Before(d) {
				dir.from.Timeout(p.now)
			}
			for {
				d, _, ok := dir.from.poll(p.now, int64(p.now)/1000, p.buf)
				if !ok {
					break
				}
				*dir.log = append(*dir.log, append([]byte(nil), d...))
				h, body, err := wire.ParseHeader(d)
				if err != nil {
					tb.Fatal(err)
				}
				dir.to.handle(p.now, int64(p.now)/1000+5000, h, body, len(d))
			}
		}
	}
	p.cli.close()
	if d, _, ok := p.cli.poll(p.now, int64(p.now)/1000, p.buf); ok {
		toSrv = append(toSrv, append([]byte(nil), d...))
	}
	frame := func(side byte, dgs [][]byte) []byte {
		b := []byte{side}
		for _, d := range dgs {
			b = binary.BigEndian.AppendUint16(b, uint16(len(d)))
			b = append(b, d...)
		}
		return b
	}
	seeds := [][]byte{frame(0, toSrv), frame(1, toCli)}
	for i, d := range toSrv {
		if i%3 == 0 {
			seeds = append(seeds, frame(0, [][]byte{d}))
		}
	}
	for i, d := range toCli {
		if i%3 == 0 {
			seeds = append(seeds, frame(1, [][]byte{d}))
		}
	}
	return seeds
}
