package emu

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/cc"
)

// path is a scenario path at rate bit/s with a one-way delay.
func path(rate cc.Bandwidth, delay time.Duration) scenario.Path {
	return scenario.Path{Rate: scenario.Rate(rate), Delay: scenario.Duration(delay)}
}

const (
	gbps = cc.Bandwidth(1e9)
	mbps = cc.Bandwidth(1e6)
)

// udpServer is a test server on 127.0.0.1:0 that records every datagram's
// arrival and, if echo, sends it back to its source.
type udpServer struct {
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu      sync.Mutex
	arrived []time.Time
	sources map[netip.AddrPort]int
}

func startServer(t *testing.T, echo bool) *udpServer {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	_ = c.SetReadBuffer(4 << 20)
	s := &udpServer{conn: c, sources: map[netip.AddrPort]int{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.arrived = append(s.arrived, time.Now())
			s.sources[from]++
			s.mu.Unlock()
			if echo {
				_, _ = c.WriteToUDPAddrPort(buf[:n], from)
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		s.wg.Wait()
	})
	return s
}

func (s *udpServer) addr() string { return s.conn.LocalAddr().String() }

func (s *udpServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrived)
}

// spread is the time from the first to the last arrival.
func (s *udpServer) spread() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.arrived) < 2 {
		return 0
	}
	return s.arrived[len(s.arrived)-1].Sub(s.arrived[0])
}

func newRelay(t *testing.T, cfg RelayConfig) *Relay {
	t.Helper()
	r, err := NewRelay(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func dial(t *testing.T, r *Relay) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, r.Addr().(*net.UDPAddr))
	require.NoError(t, err)
	_ = c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ping sends an 8-byte sequence number and waits for its echo (skipping
// stale echoes), returning the round-trip time.
func ping(t *testing.T, c *net.UDPConn, seq uint64) time.Duration {
	t.Helper()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	start := time.Now()
	_, err := c.Write(b[:])
	require.NoError(t, err)
	buf := make([]byte, 64)
	require.NoError(t, c.SetReadDeadline(start.Add(2*time.Second)))
	for {
		n, err := c.Read(buf)
		require.NoError(t, err, "no echo for ping %d", seq)
		if n == 8 && binary.BigEndian.Uint64(buf[:8]) == seq {
			return time.Since(start)
		}
	}
}

// eventually polls cond every 5 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, d, 5*time.Millisecond, msg)
}
