package e2e_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/transport"
)

// connectedOverLoss dials through a relay with fwdLoss and revLoss set
// once the handshake is over (the handshake under loss is not what these
// tests are about), seeding the relay's losses with seed.
func connectedOverLoss(t *testing.T, fwdLoss, revLoss float64, cliCfg transport.Config, seed uint64) (cli, srv *transport.Conn) {
	t.Helper()
	// The receiver's Close lingers until its latest Commit is
	// acknowledged, up to Linger. At the default 5 s, with 30 % of the
	// Commits and 10 % of their ACKs lost, the retransmission timer's
	// five or so tries in 5 s all failed in about one round of 150
	// (0.37^5), more often on a loaded machine whose timers fire late,
	// and the CLOSE then went without the Commit: a flake of the test's
	// bound, not of the promise, which is to linger. 30 s makes that
	// about one in 10^7.
	l, err := transport.Listen("127.0.0.1:0", withTLS(transport.Config{Linger: 30 * time.Second}))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	clean := path(100e6, time.Millisecond, 0, 1000)
	r, err := emu.NewRelay(emu.RelayConfig{Target: l.Addr().String(), Forward: clean, Reverse: clean, Seed: seed})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err = transport.Dial(ctx, r.Addr().String(), withTLS(cliCfg))
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	srv, err = l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, r.SetPath(&scenario.PathChange{Loss: &fwdLoss}, &scenario.PathChange{Loss: &revLoss}))
	return cli, srv
}

// A receiver that commits the whole stream and closes at once, through a
// path that loses 30 % of the datagrams from receiver to sender: the
// sender's WaitCommitted returns nil every time, because Close lingers
// until the latest Commit is acknowledged (lost Commits are sent again)
// instead of letting the CLOSE overtake it. Ten rounds, so that a Close
// that did not wait would lose a Commit in nearly every run (1 − 0.7^10),
// each round over other random losses.
func TestCommitThenCloseThroughLoss(t *testing.T) {
	for round := range 10 {
		cli, srv := connectedOverLoss(t, 0.05, 0.3, transport.Config{}, uint64(100+round))
		data := randomBytes(64<<10, uint64(round))
		go func() {
			if _, err := cli.Write(data); err == nil {
				_ = cli.CloseWrite()
			}
		}()
		got, err := io.ReadAll(srv)
		require.NoError(t, err)
		require.Len(t, got, len(data))
		require.NoError(t, srv.Commit(int64(len(got))))
		require.NoError(t, srv.Close())

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = cli.WaitCommitted(ctx, int64(len(data)))
		cancel()
		require.NoError(t, err, "round %d: committed %d of %d", round, cli.Committed(), len(data))
	}
}

// A receiver whose storage fails part-way commits what it stored and
// closes with CloseWithError, through loss both ways: the sender's
// Committed is exactly what was stored (CloseWithError lingers for the
// Commit's acknowledgement), and its WaitCommitted for the whole fails,
// never returns nil: with the application's code and reason when the
// CLOSE arrives, with ErrIdleTimeout when it was lost (a CLOSE is sent
// once; there is no closing period that would repeat it).
func TestStorageFailureThroughLoss(t *testing.T) {
	const stored = 300_000
	told := 0
	for round := range 4 {
		cli, srv := connectedOverLoss(t, 0.1, 0.3, transport.Config{IdleTimeout: 2 * time.Second}, uint64(200+round))
		data := randomBytes(1<<20, uint64(round))
		go func() { _, _ = cli.Write(data) }()
		_, err := io.ReadFull(srv, make([]byte, stored+12_345))
		require.NoError(t, err)
		require.NoError(t, srv.Commit(stored))
		require.NoError(t, srv.CloseWithError(1, "write upload.bin: no space left on device"))

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = cli.WaitCommitted(ctx, int64(len(data)))
		cancel()
		require.Error(t, err, "never nil")
		require.Equal(t, int64(stored), cli.Committed(), "round %d: %v; client %+v", round, err, cli.Stats())
		var ae *transport.ApplicationError
		if errors.As(err, &ae) {
			told++
			require.Equal(t, uint32(1), ae.Code)
			require.Equal(t, "write upload.bin: no space left on device", ae.Reason)
		} else {
			// The CLOSE was lost: the server, which no longer has the
			// connection, resets it at the client's next packet, or
			// (the reset lost too) the idle timeout ends it.
			require.True(t, errors.Is(err, transport.ErrStatelessReset) || errors.Is(err, transport.ErrIdleTimeout), "round %d: %v", round, err)
		}
	}
	t.Logf("the CLOSE with the reason arrived in %d of 4 rounds; the others ended with a stateless reset or at the idle timeout", told)
}
