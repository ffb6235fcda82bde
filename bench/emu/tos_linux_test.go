//go:build linux

package emu

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
)

const tosCS7 = 56 << 2 // DSCP CS7 in the TOS byte

func setTOS(t *testing.T, c *net.UDPConn, tos int) {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, tos)
	}))
	require.NoError(t, serr)
}

// tosServer receives datagrams and reports each one's TOS byte and payload.
type tosDatagram struct {
	tos  uint8
	data string
}

func startTOSServer(t *testing.T) (*net.UDPConn, <-chan tosDatagram) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	require.NoError(t, enableRecvTOS(c, true))
	out := make(chan tosDatagram, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, oob := make([]byte, 2048), make([]byte, oobSize)
		for {
			n, oobn, _, _, err := c.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				return
			}
			out <- tosDatagram{parseTOS(oob[:oobn]), string(buf[:n])}
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	return c, out
}

func TestRelayReMarksTOS(t *testing.T) {
	srv, got := startTOSServer(t)
	r := newRelay(t, RelayConfig{Target: srv.LocalAddr().String(), Forward: path(gbps, 0), Reverse: path(gbps, 0)})
	c := dial(t, r)
	setTOS(t, c, tosCS7)
	_, err := c.Write([]byte("cs7"))
	require.NoError(t, err)
	select {
	case d := <-got:
		require.Equal(t, "cs7", d.data)
		require.Equal(t, uint8(tosCS7), d.tos, "TOS not re-marked on egress")
	case <-time.After(2 * time.Second):
		t.Fatal("nothing arrived")
	}
}

// Behind a CAKE queue, a CS7 datagram that arrives behind a backlog of
// best-effort ones overtakes them: the relay hands the DSCP it read to the
// link.
func TestRelayCS7OvertakesBacklog(t *testing.T) {
	const bulk = 40
	srv, got := startTOSServer(t)
	p := path(2*mbps, 0)
	p.Queue = scenario.Queue{Discipline: netem.DisciplineCake}
	r := newRelay(t, RelayConfig{Target: srv.LocalAddr().String(), Forward: p, Reverse: p})
	be, cs7 := dial(t, r), dial(t, r)
	setTOS(t, cs7, tosCS7)
	for range bulk {
		_, err := be.Write(make([]byte, 1000)) // 40 × 4.1 ms of backlog
		require.NoError(t, err)
	}
	_, err := cs7.Write([]byte("urgent"))
	require.NoError(t, err)
	for i := range bulk + 1 {
		select {
		case d := <-got:
			if d.data == "urgent" {
				t.Logf("CS7 datagram arrived %d of %d", i+1, bulk+1)
				require.Less(t, i, bulk/4, "CS7 waited behind the best-effort backlog")
				require.Equal(t, uint8(tosCS7), d.tos)
				return
			}
		case <-time.After(2 * time.Second):
			t.Fatal("datagrams missing")
		}
	}
	t.Fatal("CS7 datagram lost")
}

func TestParseTOS(t *testing.T) {
	buf := make([]byte, oobSize)
	require.Equal(t, uint8(0xb8), parseTOS(tosOOB(buf, 0xb8, true)))
	require.Equal(t, uint8(0xe0), parseTOS(tosOOB(buf, 0xe0, false)))
	require.Zero(t, parseTOS(nil))
	require.Zero(t, parseTOS(make([]byte, 3)))
}

func FuzzParseTOS(f *testing.F) {
	buf := make([]byte, oobSize)
	f.Add(append([]byte(nil), tosOOB(buf, 0xe0, true)...))
	f.Add(append([]byte(nil), tosOOB(buf, 0xe0, false)...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseTOS(b)
		if len(b) > 1 {
			_ = parseTOS(b[1:]) // unaligned
		}
	})
}
