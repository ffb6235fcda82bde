package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serverLife is one life of a server: its socket, Transport and Listener
// on addr ("127.0.0.1:0" for the first).
type serverLife struct {
	udp *net.UDPConn
	tr  *Transport
	ln  *Listener
}

func startServer(t *testing.T, addr string, key *[32]byte) *serverLife {
	t.Helper()
	udp, err := ListenUDP(addr, false)
	require.NoError(t, err)
	tr := &Transport{Conn: udp, StatelessResetKey: key}
	ln, err := tr.Listen(testConfig(Config{}))
	require.NoError(t, err)
	s := &serverLife{udp: udp, tr: tr, ln: ln}
	t.Cleanup(func() { s.tr.Close(); s.udp.Close() })
	return s
}

// crash ends the server as a killed process does: its socket is gone and
// no connection sends a Close.
func (s *serverLife) crash(t *testing.T) {
	t.Helper()
	require.NoError(t, s.udp.Close())
	require.NoError(t, s.tr.Close())
}

// restartedServer dials a server, exchanges a few bytes, crashes it and
// starts a new one on the same port with key2; it returns the new server
// and the client, whose connection belongs to the server's previous life.
func restartedServer(t *testing.T, key1, key2 *[32]byte, cliCfg Config) (*serverLife, *Conn) {
	t.Helper()
	s1 := startServer(t, "127.0.0.1:0", key1)
	addr := s1.ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, addr, testConfig(cliCfg))
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	srv, err := s1.ln.Accept(ctx)
	require.NoError(t, err)
	_, err = cli.Write([]byte("before the restart"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	_, err = srv.Read(buf)
	require.NoError(t, err)
	// Acknowledged: nothing of the first life is left to retransmit, so
	// what reaches the new server is what the client sends after.
	require.Eventually(t, func() bool { return cli.Stats().StreamBytesAcked == int64(len("before the restart")) },
		5*time.Second, time.Millisecond)

	s1.crash(t)
	return startServer(t, addr, key2), cli
}

// A server restarted on its port with the same StatelessResetKey resets
// the connections of its previous life: the client's next datagram draws
// a reset and its Conn ends with ErrStatelessReset at once (within a
// round trip, not at IdleTimeout), Read and Write return it, and a new
// Dial to the restarted server works.
func TestStatelessResetAfterRestart(t *testing.T) {
	key := [32]byte{1, 2, 3, 4}
	s2, cli := restartedServer(t, &key, &key, Config{})

	sent := time.Now()
	_, err := cli.Write([]byte("after the restart"))
	require.NoError(t, err)
	select {
	case <-cli.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no reset within 5 s")
	}
	t.Logf("reset %v after the client's first write to the restarted server", time.Since(sent).Round(10*time.Microsecond))
	require.ErrorIs(t, cli.Err(), ErrStatelessReset)
	_, err = cli.Write([]byte("more"))
	require.ErrorIs(t, err, ErrStatelessReset)
	_, err = cli.Read(make([]byte, 10))
	require.ErrorIs(t, err, ErrStatelessReset)
	// Counted once written, which may be just after the client read it.
	require.Eventually(t, func() bool { return s2.ln.Stats().StatelessResetsSent >= 1 }, time.Second, time.Millisecond)
	require.Zero(t, s2.ln.Stats().Connections, "a reset keeps no state")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	again, err := Dial(ctx, s2.ln.Addr().String(), testConfig(Config{}))
	require.NoError(t, err, "the restarted server accepts a new connection")
	defer again.Close()
	srv, err := s2.ln.Accept(ctx)
	require.NoError(t, err)
	_, err = again.Write([]byte("hello again"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := srv.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello again", string(buf[:n]))
}

// Without the same key the restarted server's resets carry tokens the
// client was never given: each is counted and ignored, and the client
// ends only at its idle timeout — the token check is what makes a reset
// count.
func TestStatelessResetWithAnotherKeyIgnored(t *testing.T) {
	s2, cli := restartedServer(t, &[32]byte{1}, nil, Config{IdleTimeout: 1500 * time.Millisecond})
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a device that keeps sending
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if cli.SendUpdate([]byte(`{"temp_c":21.5}`)) != nil {
					return
				}
			}
		}
	}()
	<-cli.Done()
	require.ErrorIs(t, cli.Err(), ErrIdleTimeout)
	require.False(t, errors.Is(cli.Err(), ErrStatelessReset))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "it lived on to its idle timeout")
	require.GreaterOrEqual(t, s2.ln.Stats().StatelessResetsSent, int64(1), "resets were sent …")
	require.GreaterOrEqual(t, cli.Stats().StatelessResetsIgnored, int64(1), "… and ignored")
}

// A plaintext connection gets no token, so even the same key resets
// nothing.
func TestStatelessResetNotInPlaintext(t *testing.T) {
	key := [32]byte{7}
	s1, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	tr := &Transport{Conn: s1, StatelessResetKey: &key}
	ln, err := tr.Listen(Config{Insecure: true})
	require.NoError(t, err)
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, addr, Config{Insecure: true, IdleTimeout: time.Second})
	require.NoError(t, err)
	defer cli.Close()
	_, err = ln.Accept(ctx)
	require.NoError(t, err)
	s1.Close()
	tr.Close()
	life := startServerInsecure(t, addr, &key)
	for !errors.Is(cli.Err(), ErrIdleTimeout) {
		if cli.SendUpdate([]byte("x")) != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.ErrorIs(t, cli.Err(), ErrIdleTimeout)
	require.GreaterOrEqual(t, life.ln.Stats().StatelessResetsSent, int64(1))
}

func startServerInsecure(t *testing.T, addr string, key *[32]byte) *serverLife {
	t.Helper()
	udp, err := ListenUDP(addr, false)
	require.NoError(t, err)
	tr := &Transport{Conn: udp, StatelessResetKey: key}
	ln, err := tr.Listen(Config{Insecure: true})
	require.NoError(t, err)
	s := &serverLife{udp: udp, tr: tr, ln: ln}
	t.Cleanup(func() { s.tr.Close(); s.udp.Close() })
	return s
}

// The reset settings are checked.
func TestStatelessResetConfig(t *testing.T) {
	udp, err := ListenUDP("127.0.0.1:0", false)
	require.NoError(t, err)
	defer udp.Close()
	tr := &Transport{Conn: udp, StatelessResetBurst: -1}
	_, err = tr.Listen(testConfig(Config{}))
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "StatelessResetBurst")
}

// A quiet device that sends nothing but keep-alive PINGs is reset too:
// its PINGs are padded to the shortest datagram a reset may answer.
func TestStatelessResetKeepAliveOnly(t *testing.T) {
	key := [32]byte{9}
	_, cli := restartedServer(t, &key, &key, Config{KeepAlive: 100 * time.Millisecond})
	start := time.Now()
	select {
	case <-cli.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a keep-alive drew no reset within 5 s")
	}
	t.Logf("reset %v after the restart, by a keep-alive", time.Since(start).Round(time.Millisecond))
	require.ErrorIs(t, cli.Err(), ErrStatelessReset)
}
