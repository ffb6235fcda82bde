package transport

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Through real sockets: the receiver commits in steps as it "stores", and
// the sender's WaitCommitted returns only once the whole stream is
// committed — not when it was acknowledged, which happens first.
func TestCommitLoopback(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	data := randomBytes(1<<20, 2)
	go func() {
		_, _ = cli.Write(data)
		_ = cli.CloseWrite()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var stored int64
	buf := make([]byte, 64<<10)
	for {
		n, err := srv.Read(buf)
		stored += int64(n)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return cli.Stats().StreamBytesAcked == int64(len(data)) }, 5*time.Second, time.Millisecond)
	require.Zero(t, cli.Committed(), "every byte acknowledged, none committed")

	half := int64(len(data) / 2)
	require.NoError(t, srv.Commit(half))
	require.NoError(t, cli.WaitCommitted(ctx, half))
	require.GreaterOrEqual(t, cli.Committed(), half)

	waited := make(chan error, 2)
	for range 2 { // any number of waiters
		go func() { waited <- cli.WaitCommitted(ctx, int64(len(data))) }()
	}
	select {
	case err := <-waited:
		t.Fatalf("WaitCommitted returned %v before the commit", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, srv.Commit(stored))
	require.NoError(t, <-waited)
	require.NoError(t, <-waited)
	require.Equal(t, int64(len(data)), cli.Committed())

	err := cli.WaitCommitted(ctx, int64(len(data))+1)
	require.ErrorContains(t, err, "only 1048576 bytes were written")
	require.ErrorIs(t, srv.Commit(stored+1), ErrCommitBeyondRead)
	require.NoError(t, cli.Close())
	require.NoError(t, srv.Close())
}

// A receiver that commits part and closes with an application error: the
// sender learns both, the committed count first. WaitCommitted for the
// rest fails with the ApplicationError, never nil; Write fails with it too.
func TestCloseWithErrorLoopback(t *testing.T) {
	l, cli, srv := pair(t, Config{}, Config{})
	defer l.Close()
	defer cli.Close()
	data := randomBytes(256<<10, 3)
	go func() { _, _ = cli.Write(data) }()
	buf := make([]byte, 100_000)
	n, err := io.ReadFull(srv, buf)
	require.NoError(t, err)
	require.NoError(t, srv.Commit(int64(n)))
	require.ErrorIs(t, srv.CloseWithError(MaxApplicationCode+1, "x"), ErrInvalidConfig)
	require.NoError(t, srv.CloseWithError(3, "storage failed: disk full"))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = cli.WaitCommitted(ctx, int64(len(data)))
	require.Error(t, err)
	var ae *ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, uint32(3), ae.Code)
	require.Equal(t, "storage failed: disk full", ae.Reason)
	require.ErrorIs(t, err, ErrPeerClosed)
	require.ErrorContains(t, err, "100000 of 262144 bytes committed when the connection ended")
	require.Equal(t, int64(n), cli.Committed(), "the commit arrived before the close")
	_, err = cli.Write([]byte("more"))
	require.ErrorAs(t, err, &ae)
	_, err = cli.Read(buf)
	require.ErrorAs(t, err, &ae)
	require.False(t, errors.Is(err, io.EOF))
}

// WaitCommitted fails, never returns nil, when the connection ends before
// the commit: the peer aborts, or the peer closes normally without
// committing; and it gives up with ctx.
func TestWaitCommittedFailsWithoutCommit(t *testing.T) {
	for _, end := range []string{"abort", "close"} {
		t.Run(end, func(t *testing.T) {
			l, cli, srv := pair(t, Config{}, Config{})
			defer l.Close()
			defer cli.Close()
			_, err := cli.Write([]byte("never committed"))
			require.NoError(t, err)
			require.NoError(t, cli.CloseWrite())
			got, err := io.ReadAll(srv)
			require.NoError(t, err)
			require.Len(t, got, 15)

			short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, cli.WaitCommitted(short, 15), context.DeadlineExceeded)

			if end == "abort" {
				require.NoError(t, srv.Abort())
			} else {
				require.NoError(t, srv.Close())
			}
			ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel2()
			err = cli.WaitCommitted(ctx, 15)
			require.ErrorIs(t, err, ErrPeerClosed)
			require.ErrorContains(t, err, "0 of 15 bytes committed")
		})
	}
}
