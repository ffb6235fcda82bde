package loopback

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// A transfer on each in-process stack delivers every byte, and reports a
// time, a goodput that is the bytes over it, and the stack's detail.
func TestTransfers(t *testing.T) {
	const n = 1 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	certs, err := NewCerts()
	require.NoError(t, err)
	for name, run := range map[string]func() (Transfer, error){
		"fresh":   func() (Transfer, error) { return Fresh(ctx, "cubic", n, 0) },
		"quic-go": func() (Transfer, error) { return QUIC(ctx, certs, n) },
	} {
		tr, err := run()
		require.NoError(t, err, name)
		require.Equal(t, cc.ByteCount(n), tr.Bytes, name)
		require.Positive(t, tr.Elapsed, name)
		require.InEpsilon(t, float64(goodputOf(n, tr.Elapsed)), float64(tr.Goodput), 1e-9, name)
		require.Contains(t, tr.Detail, "avg datagram", name)
	}
}

func TestGoodputOf(t *testing.T) {
	require.Equal(t, cc.Bandwidth(8e6), goodputOf(1e6, time.Second))
	require.Zero(t, goodputOf(1e6, 0))
}
