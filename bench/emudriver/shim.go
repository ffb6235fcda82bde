package emudriver

import (
	"errors"
	"net"
	"net/netip"
	"sync"
)

// socketBuf is the socket buffer size the shim and taps ask for, as the
// relay does (the kernel caps it at rmem_max / wmem_max).
const socketBuf = 4 << 20

// maxDatagram bounds the datagrams the shim and taps carry (IPv4 UDP).
const maxDatagram = 65535

// shim is the relay's target: the server side's view of the bottleneck.
// The relay forwards every client's datagrams to one address, so the shim
// stands there and
//
//   - passes fresh datagrams on to the Listener, each relay back socket
//     through a proxy socket of its own (so the Listener's replies map back
//     to it), after handing them to onFresh: they have just crossed the
//     forward link, which is where their one-way delay ends;
//   - hands the driver's cbr datagrams (cbrMagic) to onCBR instead: it is
//     the sink of forward cbr flows and learns, from their hello
//     datagrams, the back socket of each reverse cbr flow;
//   - sends reverse cbr datagrams (WriteTo) from its own address to such
//     a back socket, which the relay accepts as a reply of the server and
//     puts on the reverse link.
//
// The shim adds one loopback hop (two syscalls and a goroutine hand-off,
// tens of µs) between the relay and the server, in both directions.
type shim struct {
	conn    *net.UDPConn
	target  *net.UDPAddr
	onFresh func(b []byte)
	onCBR   func(b []byte, from netip.AddrPort)

	mu      sync.Mutex
	proxies map[netip.AddrPort]*net.UDPConn
	closed  bool
	wg      sync.WaitGroup

	closeOnce sync.Once
}

func newShim(target *net.UDPAddr, onFresh func([]byte), onCBR func([]byte, netip.AddrPort)) (*shim, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	setBuffers(c)
	s := &shim{conn: c, target: target, onFresh: onFresh, onCBR: onCBR, proxies: map[netip.AddrPort]*net.UDPConn{}}
	s.wg.Add(1)
	go s.readLoop()
	return s, nil
}

func setBuffers(c *net.UDPConn) {
	_ = c.SetReadBuffer(socketBuf) // best effort, as the relay
	_ = c.SetWriteBuffer(socketBuf)
}

// Addr is where the relay sends (its Target).
func (s *shim) Addr() *net.UDPAddr { return s.conn.LocalAddr().(*net.UDPAddr) }

// WriteTo sends b from the shim's address to a relay back socket.
func (s *shim) WriteTo(b []byte, to netip.AddrPort) error {
	_, err := s.conn.WriteToUDPAddrPort(b, to)
	return err
}

func (s *shim) readLoop() {
	defer s.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP errors reported on a later read
		}
		b := buf[:n]
		if isCBR(b) {
			s.onCBR(b, from)
			continue
		}
		s.onFresh(b)
		if p := s.proxy(from); p != nil {
			_, _ = p.Write(b) // a refused write is a lost datagram, as on a network
		}
	}
}

// proxy returns the socket that stands for the relay back socket from
// towards the Listener, opening it on first use (nil once closed).
func (s *shim) proxy(from netip.AddrPort) *net.UDPConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.proxies[from]; ok || s.closed {
		return p
	}
	p, err := net.DialUDP("udp4", nil, s.target)
	if err != nil {
		return nil
	}
	setBuffers(p)
	s.proxies[from] = p
	s.wg.Add(1)
	go s.readProxy(p, from)
	return p
}

// readProxy carries the Listener's replies on p back to the relay.
func (s *shim) readProxy(p *net.UDPConn, to netip.AddrPort) {
	defer s.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := p.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		_, _ = s.conn.WriteToUDPAddrPort(buf[:n], to)
	}
}

// Close closes every socket and waits for the shim's goroutines.
func (s *shim) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		ps := make([]*net.UDPConn, 0, len(s.proxies))
		for _, p := range s.proxies {
			ps = append(ps, p)
		}
		s.mu.Unlock()
		_ = s.conn.Close()
		for _, p := range ps {
			_ = p.Close()
		}
		s.wg.Wait()
	})
}

// tap stands between the client of a reverse flow and the relay: the
// client dials the tap, the tap forwards to the relay from a socket of
// its own, marked with the flow's DSCP (what crosses the forward link
// for a reverse flow is its ACKs), and hands every datagram coming back
// to observe before passing it on — it has just crossed the reverse link.
type tap struct {
	front   *net.UDPConn // the client sends here
	up      *net.UDPConn // connected to the relay
	observe func(b []byte)

	mu     sync.Mutex
	client netip.AddrPort // learned from the first datagram

	wg        sync.WaitGroup
	closeOnce sync.Once
}

func newTap(relay *net.UDPAddr, dscp uint8, observe func([]byte)) (*tap, error) {
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	up, err := net.DialUDP("udp4", nil, relay)
	if err != nil {
		_ = front.Close()
		return nil, err
	}
	setBuffers(front)
	setBuffers(up)
	if err := setTOS(up, dscp); err != nil {
		_ = front.Close()
		_ = up.Close()
		return nil, err
	}
	t := &tap{front: front, up: up, observe: observe}
	t.wg.Add(2)
	go t.fromClient()
	go t.fromRelay()
	return t, nil
}

// Addr is where the client dials.
func (t *tap) Addr() *net.UDPAddr { return t.front.LocalAddr().(*net.UDPAddr) }

func (t *tap) fromClient() {
	defer t.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := t.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		t.mu.Lock()
		t.client = from
		t.mu.Unlock()
		_, _ = t.up.Write(buf[:n])
	}
}

func (t *tap) fromRelay() {
	defer t.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := t.up.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		t.observe(buf[:n])
		t.mu.Lock()
		to := t.client
		t.mu.Unlock()
		if to.IsValid() {
			_, _ = t.front.WriteToUDPAddrPort(buf[:n], to)
		}
	}
}

// Close closes both sockets and waits for the tap's goroutines.
func (t *tap) Close() {
	t.closeOnce.Do(func() {
		_ = t.front.Close()
		_ = t.up.Close()
		t.wg.Wait()
	})
}
