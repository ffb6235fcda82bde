package session

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzHandshake feeds arbitrary datagrams to a TLS session in the middle
// of its handshake, through the public Handle/Poll API (so the packet
// protection, the Crypto reassembly and crypto/tls all see them). Input: a
// byte choosing the side (even: a server that has the client's Initial;
// odd: a client that has sent it), then datagrams as FuzzSession frames
// them. The session must not panic or hang, must bound what it buffers,
// and must never open on forged input: with the real peer's keys unknown,
// no input can complete the handshake.
func FuzzHandshake(f *testing.F) {
	for _, seed := range handshakeSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		p := NewPair(t, secure(t), secure(t), Link{})
		// The client's Initial reaches the server; nothing else moves.
		buf := make([]byte, 0, 1500)
		d, ok := p.Take(p.Cli)
		if !ok {
			t.Fatal("client sent no Initial")
		}
		p.Inject(p.Srv, d)
		s := p.Srv
		if in[0]&1 == 1 {
			s = p.Cli
		}
		in = in[1:]
		for len(in) >= 2 {
			n := min(int(binary.BigEndian.Uint16(in)), len(in)-2)
			dg := append([]byte(nil), in[2:2+n]...)
			in = in[2+n:]
			p.Now = p.Now.Add(time.Millisecond)
			wall := int64(p.Now) / 1000
			s.Handle(p.Now, wall, dg)
			if d := s.NextTimeout(p.Now); d != 0 && !p.Now.Before(d) {
				s.Timeout(p.Now)
			}
			for range 64 {
				if _, _, ok := s.Poll(p.Now, wall, buf); !ok {
					break
				}
			}
			if s.sec != nil {
				for _, in := range s.sec.in {
					if in.held > 1<<16 {
						t.Fatalf("handshake reassembly holds %d bytes", in.held)
					}
				}
			}
			if s.client && s.Opened() && s.Err() == nil {
				t.Fatal("a client opened on forged input")
			}
		}
	})
}

// handshakeSeeds frames the datagrams of a real handshake as FuzzHandshake
// inputs for both sides.
func handshakeSeeds(tb testing.TB) [][]byte {
	p := NewPair(tb, secure(tb), secure(tb), Link{})
	p.Record = true
	p.Run(30 * time.Millisecond)
	var toSrv, toCli []byte
	for _, d := range p.Sent {
		frame := binary.BigEndian.AppendUint16(nil, uint16(len(d.B)))
		frame = append(frame, d.B...)
		if d.From == p.Cli {
			toSrv = append(toSrv, frame...)
		} else {
			toCli = append(toCli, frame...)
		}
	}
	return [][]byte{append([]byte{0}, toSrv...), append([]byte{1}, toCli...), append([]byte{1}, toSrv...), append([]byte{0}, toCli...)}
}
