package transport

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// drainUpdates reads updates until ReadUpdate fails and returns how many
// it got and the error.
func drainUpdates(t *testing.T, c *Conn) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for {
		if _, err := c.ReadUpdate(ctx); err != nil {
			require.NoError(t, ctx.Err(), "ReadUpdate did not see the close")
			return n, err
		}
		n++
	}
}

// A source that sends updates (and possibly a stream, fully acknowledged)
// and closes normally ends the monitor's ReadUpdate with io.EOF, not with
// an error; Err says the peer closed, as plain ErrPeerClosed.
func TestCleanCloseEndsReadUpdateWithEOF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"updates only", nil},
		{"updates and stream", randomBytes(200<<10, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, cli, srv := pair(t, Config{}, Config{})
			defer l.Close()
			defer srv.Close()

			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(srv)
				got <- b
			}()
			if tc.stream != nil {
				_, err := cli.Write(tc.stream)
				require.NoError(t, err)
			}
			for i := range 5 {
				require.NoError(t, cli.SendUpdate([]byte{byte(i)}))
				// Sent before the next replaces it (only the freshest
				// unsent update is ever sent).
				require.Eventually(t, func() bool { return cli.Stats().UpdatesSent > int64(i) }, 5*time.Second, time.Millisecond)
			}
			require.NoError(t, cli.Close())

			n, err := drainUpdates(t, srv)
			require.Positive(t, n)
			require.Equal(t, io.EOF, err)
			require.Equal(t, ErrPeerClosed, srv.Err())
			require.Equal(t, len(tc.stream), len(returns(t, got, "the stream reader")))
		})
	}
}

// An abort (Close with stream bytes unacknowledged, Linger < 0) is not a
// clean end: ReadUpdate reports it as an error wrapping ErrPeerClosed.
func TestAbortEndsReadUpdateWithError(t *testing.T) {
	small := testConfig(Config{SendBuffer: 16 << 10, ReceiveWindow: 16 << 10})
	cliCfg := small
	cliCfg.Linger = -1
	l, cli, srv := pair(t, small, cliCfg)
	defer l.Close()
	defer srv.Close()

	require.NoError(t, cli.SendUpdate([]byte("reading")))
	require.NoError(t, cli.SetWriteDeadline(time.Now().Add(200*time.Millisecond)))
	_, err := cli.Write(make([]byte, 1<<20)) // the peer does not read: fills up
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, cli.Close()) // no linger: nothing to report

	_, err = drainUpdates(t, srv)
	require.ErrorIs(t, err, ErrPeerClosed)
	require.NotEqual(t, io.EOF, err)
	require.ErrorIs(t, err, ErrStreamAborted)
}

// Conn.Abort tells the peer its stream is not whole: the peer reads every
// byte that arrived, acknowledged or not, and then ErrStreamAborted — never
// io.EOF, which Close would have given — and the aborting end's Close after
// it does nothing more.
func TestAbortEndsPeerReadWithStreamAborted(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer srv.Close()

	part := []byte("the first part of an upload")
	_, err := cli.Write(part)
	require.NoError(t, err)
	got := make([]byte, len(part))
	_, err = io.ReadFull(srv, got)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cli.Stats().StreamBytesAcked == int64(len(part)) },
		5*time.Second, time.Millisecond, "every byte acknowledged before the abort")

	require.NoError(t, cli.Abort())
	require.NoError(t, cli.Close(), "Close after Abort does nothing")
	_, err = srv.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrStreamAborted)
	require.ErrorIs(t, err, ErrPeerClosed)
	require.NotErrorIs(t, err, io.EOF)
	select {
	case <-cli.Done():
	default:
		t.Fatal("Abort returned before the connection ended")
	}
}
