package emu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/fresh-udp/fresh/transport"
)

// LoadBalancer is a userspace UDP load balancer in front of several
// servers (hosts), of one of the two kinds a fleet puts there: one that
// routes by the 4-tuple (every cloud's UDP load balancer, and the kernel's
// SO_REUSEPORT hash), or one that routes by the server ID in the
// connection ID (the IETF QUIC-LB draft's plaintext algorithm, which
// transport.Transport.ServerID lays out). It proxies: each client address
// gets its own upstream socket per server, so a server sees one source
// per client and a client's new address is a new source (a NAT
// rebinding), as through a real one.
//
// What each kind keeps: a 4-tuple balancer keeps a connection while its
// client's address stays; after a rebinding the new 4-tuple may hash to
// another server, which does not hold the connection (and, the ID being
// another server's, sends no stateless reset: the connection times out).
// A connection-ID balancer sends every datagram that
// names a server ID to that server whatever its source, so the
// connection survives rebinding (the server migrates it); datagrams with
// no routable ID (the client's first flight, which carries the client's
// own ID) go by the 4-tuple, as they must.
type LoadBalancer struct {
	cfg      LoadBalancerConfig
	front    *net.UDPConn
	backends []netip.AddrPort
	seed     maphash.Seed
	log      *slog.Logger

	mu     sync.Mutex
	ups    map[upKey]*net.UDPConn
	closed bool
	wg     sync.WaitGroup

	perBackend []atomic.Int64
	byID       atomic.Int64
}

// LoadBalancerConfig configures a LoadBalancer.
type LoadBalancerConfig struct {
	// Listen is the front address (default "127.0.0.1:0").
	Listen string
	// Backends are the servers' addresses; with ByConnID, backend i is
	// the server whose Transport.ServerID is the one byte i.
	Backends []string
	// ByConnID routes by the connection ID's server ID (1 byte, of
	// ConfigRotation); false routes every datagram by its 4-tuple.
	ByConnID       bool
	ConfigRotation uint8
	// Logger receives errors (nil: silent).
	Logger *slog.Logger
}

type upKey struct {
	client  netip.AddrPort
	backend int
}

// NewLoadBalancer listens on cfg.Listen and forwards until Close.
func NewLoadBalancer(cfg LoadBalancerConfig) (*LoadBalancer, error) {
	if len(cfg.Backends) == 0 || len(cfg.Backends) > 256 {
		return nil, fmt.Errorf("%w: LoadBalancerConfig.Backends: %d servers, want 1-256 (one per 1-byte server ID)", ErrInvalidConfig, len(cfg.Backends))
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	lb := &LoadBalancer{cfg: cfg, seed: maphash.MakeSeed(), log: cfg.Logger, ups: map[upKey]*net.UDPConn{},
		perBackend: make([]atomic.Int64, len(cfg.Backends))}
	for _, b := range cfg.Backends {
		ap, err := netip.ParseAddrPort(b)
		if err != nil {
			return nil, fmt.Errorf("%w: LoadBalancerConfig.Backends: %v", ErrInvalidConfig, err)
		}
		lb.backends = append(lb.backends, ap)
	}
	la, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: LoadBalancerConfig.Listen: %v", ErrInvalidConfig, err)
	}
	if lb.front, err = net.ListenUDP("udp", la); err != nil {
		return nil, err
	}
	lb.wg.Add(1)
	go lb.frontLoop()
	return lb, nil
}

// Addr is the front address clients send to.
func (lb *LoadBalancer) Addr() net.Addr { return lb.front.LocalAddr() }

// Forwarded returns the datagrams sent to each backend, and how many of
// all of them were routed by their connection ID.
func (lb *LoadBalancer) Forwarded() (perBackend []int64, byConnID int64) {
	for i := range lb.perBackend {
		perBackend = append(perBackend, lb.perBackend[i].Load())
	}
	return perBackend, lb.byID.Load()
}

// Close stops forwarding and closes every socket.
func (lb *LoadBalancer) Close() error {
	lb.mu.Lock()
	lb.closed = true
	err := lb.front.Close()
	for _, u := range lb.ups {
		_ = u.Close()
	}
	lb.mu.Unlock()
	lb.wg.Wait()
	return err
}

// route picks the backend of a datagram from client.
func (lb *LoadBalancer) route(b []byte, client netip.AddrPort) int {
	// fresh's header carries the 8-byte connection ID at bytes 4-11 in
	// every version (the version invariants).
	if lb.cfg.ByConnID && len(b) >= 12 {
		if id, ok := transport.ServerIDOf(binary.BigEndian.Uint64(b[4:12]), 1, lb.cfg.ConfigRotation); ok && int(id[0]) < len(lb.backends) {
			lb.byID.Add(1)
			return int(id[0])
		}
	}
	var h maphash.Hash
	h.SetSeed(lb.seed)
	a := client.Addr().As16()
	_, _ = h.Write(a[:])
	var p [2]byte
	binary.BigEndian.PutUint16(p[:], client.Port())
	_, _ = h.Write(p[:])
	return int(h.Sum64() % uint64(len(lb.backends)))
}

func (lb *LoadBalancer) frontLoop() {
	defer lb.wg.Done()
	buf := make([]byte, DefaultMaxDatagram)
	for {
		n, from, err := lb.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				lb.log.Warn("emu: load balancer read", "err", err)
			}
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		i := lb.route(buf[:n], from)
		up := lb.upstream(from, i)
		if up == nil {
			return
		}
		if _, err := up.Write(buf[:n]); err == nil {
			lb.perBackend[i].Add(1)
		}
	}
}

// upstream is client's socket towards backend i, opened on first use,
// with a goroutine that sends the backend's answers back to the client.
func (lb *LoadBalancer) upstream(client netip.AddrPort, i int) *net.UDPConn {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.closed {
		return nil
	}
	k := upKey{client, i}
	if u := lb.ups[k]; u != nil {
		return u
	}
	u, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(lb.backends[i]))
	if err != nil {
		lb.log.Warn("emu: load balancer upstream", "backend", lb.backends[i], "err", err)
		return nil
	}
	lb.ups[k] = u
	lb.wg.Add(1)
	go func() {
		defer lb.wg.Done()
		buf := make([]byte, DefaultMaxDatagram)
		for {
			n, err := u.Read(buf)
			if err != nil {
				if errors.Is(err, syscall.ECONNREFUSED) {
					// ICMP unreachable from a backend that is gone:
					// keep reading, as a real balancer keeps the flow.
					continue
				}
				if !errors.Is(err, net.ErrClosed) {
					lb.log.Warn("emu: load balancer upstream read", "err", err)
				}
				return
			}
			_, _ = lb.front.WriteToUDPAddrPort(buf[:n], client)
		}
	}()
	return u
}
