package session

import (
	"bytes"
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
		p := OpenPair(t, Config{}, Link{})
		p.Cli.out.write([]byte("some stream data in flight"))
		p.Cli.updBuf = append(p.Cli.updBuf[:0], "update"...)
		p.Cli.updFresh = true
		p.Run(0)
		s := p.Srv
		if in[0]&1 == 1 {
			s = p.Cli
		}
		in = in[1:]
		rd, buf := make([]byte, 4096), make([]byte, 0, 1500)
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			n = min(n, len(in))
			dg := in[:n]
			in = in[n:]
			p.Now = p.Now.Add(time.Millisecond)
			if h, body, err := wire.ParseHeader(dg); err == nil && h.ConnID == s.connID {
				s.handle(p.Now, int64(p.Now)/1000, h, body, len(dg))
			}
			if d := s.NextTimeout(p.Now); d != 0 && !p.Now.Before(d) {
				s.Timeout(p.Now)
			}
			for range 64 { // drain what it wants to send, bounded
				if _, _, ok := s.poll(p.Now, int64(p.Now)/1000, buf); !ok {
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
			if s.commit.peer > s.out.next || s.commit.peer < 0 {
				t.Fatalf("peer's commit %d outside the %d bytes sent", s.commit.peer, s.out.next)
			}
			if st := s.Stats(p.Now); st.BytesReceived < 0 || st.PacketsReceived < 0 {
				t.Fatalf("negative counters: %+v", st)
			}
		}
	})
}

// sessionSeeds records the datagrams of a short real exchange (handshake,
// stream data with FIN, an update, ACKs, a close) and frames them as
// FuzzSession inputs, one per side and a few single-datagram ones.
func sessionSeeds(tb testing.TB) [][]byte {
	p := OpenPair(tb, Config{}, Link{Delay: 5 * time.Millisecond})
	p.Record = true
	p.Cli.out.write(make([]byte, 5000))
	p.Cli.out.finSet = true
	p.Cli.updBuf = append(p.Cli.updBuf[:0], "temperature 21.5"...)
	p.Cli.updFresh = true
	p.Run(300 * time.Millisecond)
	rd := make([]byte, 8192)
	for n, _ := p.Srv.Read(rd); n > 0; n, _ = p.Srv.Read(rd) {
	}
	_ = p.Srv.Commit(4000) // a Commit frame among the seeds
	p.Run(50 * time.Millisecond)
	var toSrv, toCli [][]byte
	for _, d := range p.Sent {
		if d.From == p.Cli {
			toSrv = append(toSrv, d.B)
		} else {
			toCli = append(toCli, d.B)
		}
	}
	p.Cli.close()
	if d, ok := p.Take(p.Cli); ok {
		toSrv = append(toSrv, bytes.Clone(d))
	}
	if p.Srv.CloseWithError(7, "storage failed") == nil { // an application CLOSE
		if d, ok := p.Take(p.Srv); ok {
			toCli = append(toCli, bytes.Clone(d))
		}
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
