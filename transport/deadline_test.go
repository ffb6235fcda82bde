package transport

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireTimeout checks err is a deadline error as net.Conn's are.
func requireTimeout(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.True(t, errors.As(err, &ne), "%T is not a net.Error", err)
	require.True(t, ne.Timeout())
}

// waitBlocked waits until a goroutine is parked inside method (such as
// "Read") of c, so that what the test does next finds the call blocked
// rather than racing its start. The goroutine dump is the only place the
// state shows: Conn keeps no count of its waiters.
func waitBlocked(t *testing.T, c *Conn, method string) {
	t.Helper()
	frame := []byte(fmt.Sprintf("transport.(*Conn).%s(%p", method, c))
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.Contains(g, []byte(" [select")) && bytes.Contains(g, frame) {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "no goroutine blocked in %s", frame)
}

// returns waits for a call running in the background to return.
func returns[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		panic("unreachable")
	}
}

type ioResult struct {
	n   int
	err error
}

// A deadline in the past fails Read and Write at once; the zero time
// clears it and they work again.
func TestDeadlineInThePast(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()

	past := time.Now().Add(-time.Second)
	require.NoError(t, cli.SetDeadline(past))
	buf := make([]byte, 16)
	_, err := cli.Read(buf)
	requireTimeout(t, err)
	n, err := cli.Write([]byte("late"))
	requireTimeout(t, err)
	require.Zero(t, n)

	// Data waiting does not matter: a passed deadline fails Read (as in
	// package net), and the data stays for the next Read.
	_, err = srv.Write([]byte("hello"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cli.Stats().StreamBytesReceived == 5 }, 5*time.Second, time.Millisecond)
	_, err = cli.Read(buf)
	requireTimeout(t, err)

	require.NoError(t, cli.SetDeadline(time.Time{}))
	n, err = cli.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))
	n, err = cli.Write([]byte("on time"))
	require.NoError(t, err)
	require.Equal(t, 7, n)
	n, err = io.ReadFull(srv, buf[:7])
	require.NoError(t, err)
	require.Equal(t, "on time", string(buf[:n]))
}

// A deadline that passes while Read is blocked ends it; so does one set in
// the past from another goroutine while it waits.
func TestReadDeadlineUnblocksRead(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	defer srv.Close()

	read := func() <-chan ioResult {
		ch := make(chan ioResult, 1)
		go func() {
			n, err := cli.Read(make([]byte, 16))
			ch <- ioResult{n, err}
		}()
		return ch
	}

	require.NoError(t, cli.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	r := returns(t, read(), "Read with a deadline")
	require.Zero(t, r.n)
	requireTimeout(t, r.err)

	// No deadline while it blocks; then one in the past.
	require.NoError(t, cli.SetReadDeadline(time.Time{}))
	ch := read()
	waitBlocked(t, cli, "Read")
	require.NoError(t, cli.SetReadDeadline(time.Now().Add(-time.Millisecond)))
	r = returns(t, ch, "Read after SetReadDeadline in the past")
	requireTimeout(t, r.err)

	// The stream survived: cleared, the next Read gets the data.
	require.NoError(t, cli.SetReadDeadline(time.Time{}))
	ch = read()
	_, err := srv.Write([]byte("still here"))
	require.NoError(t, err)
	r = returns(t, ch, "Read after the deadline was cleared")
	require.NoError(t, r.err)
	require.Equal(t, len("still here"), r.n)
}

// Extending a deadline that has not passed keeps a blocked Read waiting.
func TestReadDeadlineExtended(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	defer srv.Close()

	require.NoError(t, cli.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	ch := make(chan ioResult, 1)
	buf := make([]byte, 16)
	go func() {
		n, err := cli.Read(buf)
		ch <- ioResult{n, err}
	}()
	require.NoError(t, cli.SetReadDeadline(time.Now().Add(time.Hour)))
	// The test itself: real time passes the first deadline (300 ms) while
	// the extended one holds. Nothing to wait for but the clock.
	time.Sleep(600 * time.Millisecond)
	select {
	case r := <-ch:
		t.Fatalf("Read returned under the extended deadline: %d, %v", r.n, r.err)
	default:
	}
	_, err := srv.Write([]byte("x"))
	require.NoError(t, err)
	r := returns(t, ch, "Read")
	require.NoError(t, r.err)
	require.Equal(t, 1, r.n)
}

// A Write blocked on a full send buffer (the peer does not read) gives up
// at the write deadline with what it buffered; nothing is lost, and once
// the deadline is cleared and the peer reads, the rest goes through.
func TestWriteDeadlineUnblocksWrite(t *testing.T) {
	small := testConfig(Config{SendBuffer: 16 << 10, ReceiveWindow: 16 << 10})
	l, cli, srv := pair(t, small, small)
	defer l.Close()
	defer cli.Close()
	defer srv.Close()

	data := randomBytes(1<<20, 7)
	ch := make(chan ioResult, 1)
	go func() {
		n, err := cli.Write(data)
		ch <- ioResult{n, err}
	}()
	waitBlocked(t, cli, "Write") // the buffers are full
	require.NoError(t, cli.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	r := returns(t, ch, "blocked Write")
	requireTimeout(t, r.err)
	require.Positive(t, r.n)
	require.Less(t, r.n, len(data))

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(srv)
		got <- b
	}()
	require.NoError(t, cli.SetWriteDeadline(time.Time{}))
	n, err := cli.Write(data[r.n:])
	require.NoError(t, err)
	require.Equal(t, len(data)-r.n, n)
	require.NoError(t, cli.CloseWrite())
	b := returns(t, got, "the peer's ReadAll")
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(b))
}

// A Conn works where a net.Conn is expected: a line protocol through bufio
// against an echo server that only sees a net.Conn, with deadlines set
// through the interface.
func TestConnAsNetConn(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	defer srv.Close()

	echo := func(c net.Conn) error {
		if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return err
		}
		sc := bufio.NewScanner(c)
		w := bufio.NewWriter(c)
		for sc.Scan() {
			if _, err := fmt.Fprintf(w, "echo %s\n", sc.Text()); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		return sc.Err()
	}
	echoed := make(chan error, 1)
	go func() { echoed <- echo(srv) }()

	var nc net.Conn = cli
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	var sent bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&sent, "line %d\n", i)
	}
	_, err := io.Copy(nc, bytes.NewReader(sent.Bytes()))
	require.NoError(t, err)
	require.NoError(t, cli.CloseWrite())
	rd := bufio.NewReader(nc)
	for i := range 100 {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("echo line %d\n", i), line)
	}
	require.NoError(t, returns(t, echoed, "the echo server"))
}
