package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/transport"
)

// lbHosts are two servers (hosts, ServerID 0 and 1) behind a load
// balancer of the given kind; each counts the updates it reads per
// client name.
type lbHosts struct {
	lb      *emu.LoadBalancer
	ls      [2]*transport.Listener
	mu      sync.Mutex
	updates [2]map[string]int
}

func newLBHosts(t *testing.T, byConnID bool) *lbHosts {
	t.Helper()
	h := &lbHosts{updates: [2]map[string]int{{}, {}}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	key := new([32]byte) // one reset key for both hosts, as one service's
	var backends []string
	for i := range 2 {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		tr := &transport.Transport{Conn: udp, ServerID: []byte{byte(i)}, StatelessResetKey: key}
		t.Cleanup(func() { _ = tr.Close(); _ = udp.Close() })
		l, err := tr.Listen(withTLS(transport.Config{}))
		require.NoError(t, err)
		h.ls[i] = l
		backends = append(backends, udp.LocalAddr().String())
		wg.Go(func() {
			for {
				c, err := l.Accept(ctx)
				if err != nil {
					return
				}
				wg.Go(func() {
					for {
						u, err := c.ReadUpdate(ctx)
						if err != nil {
							return
						}
						h.mu.Lock()
						h.updates[i][string(u.Payload)]++
						h.mu.Unlock()
					}
				})
			}
		})
	}
	var err error
	h.lb, err = emu.NewLoadBalancer(emu.LoadBalancerConfig{Backends: backends, ByConnID: byConnID})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.lb.Close() })
	return h
}

func (h *lbHosts) got(host int, name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.updates[host][name]
}

// survivors dials clients through the balancer, moves each to a new port
// (Conn.Migrate: the rebinding of a NAT in front of the device) and
// counts those whose update after the move still reaches their host, and
// those whose Migrate said the new path reset them.
func (h *lbHosts) survivors(t *testing.T, clients int) (ok, resets int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range clients {
		c, err := transport.Dial(ctx, h.lb.Addr().String(), withTLS(transport.Config{}))
		require.NoError(t, err)
		before := fmt.Sprintf("%02d before", i)
		require.NoError(t, c.SendUpdate([]byte(before)))
		require.Eventually(t, func() bool { return h.got(0, before)+h.got(1, before) > 0 }, 10*time.Second, time.Millisecond)
		host := 0
		if h.got(1, before) > 0 {
			host = 1
		}
		mctx, mcancel := context.WithTimeout(ctx, time.Second)
		err = c.Migrate(mctx)
		mcancel()
		after := fmt.Sprintf("%02d after", i)
		if errors.Is(err, transport.ErrStatelessReset) {
			resets++
		}
		if err == nil {
			require.NoError(t, c.SendUpdate([]byte(after)), "Migrate returned nil: the connection is up")
			deadline := time.Now().Add(time.Second)
			for h.got(host, after) == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if h.got(host, after) > 0 {
				ok++
			}
		}
		require.Zero(t, h.got(1-host, after), "an update reached a host that does not hold the connection")
		_ = c.Abort()
	}
	return ok, resets
}

// Two hosts behind a UDP load balancer, 16 devices, each rebinding once:
// a balancer that routes by the server ID in the connection ID keeps all
// of them; one that routes by the 4-tuple keeps only those whose new
// 4-tuple happens to hash to the same host. The host that does not know
// the others sends them no stateless reset, although it shares the key:
// the ID is the other host's, which may hold it (an attacker choosing its
// source port could otherwise draw the token of a live connection, RFC
// 9000 §21.11), so their Migrate fails at its deadline and they time out.
// What the scale-out docs claim for each kind, measured.
func TestLoadBalancerKindsAcrossRebinding(t *testing.T) {
	const clients = 16
	cid := newLBHosts(t, true)
	kept, resets := cid.survivors(t, clients)
	per, byID := cid.lb.Forwarded()
	t.Logf("connection-ID balancer: %d of %d connections survived a rebinding; datagrams per host %v, %d routed by ID", kept, clients, per, byID)
	require.Equal(t, clients, kept)
	require.Zero(t, resets)
	require.Positive(t, per[0])
	require.Positive(t, per[1])
	require.Positive(t, byID)

	tuple := newLBHosts(t, false)
	kept, resets = tuple.survivors(t, clients)
	per, _ = tuple.lb.Forwarded()
	t.Logf("4-tuple balancer: %d of %d connections survived a rebinding; datagrams per host %v", kept, clients, per)
	// All 16 new 4-tuples hashing to the old host: 2⁻¹⁶.
	require.Less(t, kept, clients)
	require.Zero(t, resets, "the host without the connection withholds its reset: the ID is the other's")
	withheld := tuple.ls[0].Stats().StatelessResetsWithheld + tuple.ls[1].Stats().StatelessResetsWithheld
	require.GreaterOrEqual(t, withheld, int64(clients-kept), "each lost connection's datagrams reached the other host, which counted them")
	require.Zero(t, tuple.ls[0].Stats().StatelessResetsSent+tuple.ls[1].Stats().StatelessResetsSent)
}
