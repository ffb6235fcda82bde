package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// The KV bucket's default share is an eighth of the storage, at most
// 1 GiB; the object store takes the rest; both whole KiB, never more
// than the storage together.
func TestDefaultLimits(t *testing.T) {
	for _, tc := range []struct{ total, upload, kv int64 }{
		{64 << 20, 56 << 20, 8 << 20},
		{20_000_000, 17_500_160, 2_499_584},
		{16 << 30, 15 << 30, 1 << 30},
		{1000, 0, 0},
	} {
		upload, kv := defaultLimits(tc.total)
		require.Equal(t, tc.upload, upload, "%d", tc.total)
		require.Equal(t, tc.kv, kv, "%d", tc.total)
		require.LessOrEqual(t, upload+kv, tc.total)
	}
}

// The embedded server's -max-store is divided between the buckets the
// monitor creates, and limits that would leave the KV bucket no room are
// refused before anything is created.
func TestRunLimitsTheBuckets(t *testing.T) {
	data := t.TempDir()
	r := startRun(t, "-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "off", "-data", data, "-max-store", "64MiB")
	require.Contains(t, r.stdout.String(), "JetStream storage 64MiB (-max-store); new buckets limited to 56MiB of uploads (-max-upload-store), 8MiB of updates (-max-kv-store)")
	nc, err := nats.Connect(natsLineRE.FindStringSubmatch(r.stdout.String())[1])
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for stream, want := range map[string]int64{"OBJ_fresh-uploads": 56 << 20, "KV_fresh-latest": 8 << 20} {
		require.Eventually(t, func() bool {
			st, err := js.Stream(ctx, stream)
			return err == nil && st.CachedInfo().Config.MaxBytes == want
		}, 10*time.Second, 10*time.Millisecond, stream)
	}
	r.stop(t)

	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-nats-listen", "127.0.0.1:0", "-metrics", "off", "-data", t.TempDir(),
		"-max-store", "64MiB", "-max-upload-store", "60MiB"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "-max-upload-store 60MiB and -max-kv-store 8MiB add up to more than JetStream's storage, 64MiB (-max-store)")
}
