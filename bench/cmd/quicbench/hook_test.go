package main

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
)

// The hook with owd keeps the bottleneck queue far shorter than quic-go's
// own CUBIC, which fills it, at a comparable goodput: the controller does
// drive quic-go. (The quicbench command measures this at length.)
func TestHookKeepsBottleneckQueueShort(t *testing.T) {
	if testing.Short() {
		t.Skip("two 4 s runs through the emulated bottleneck")
	}
	plain, err := runBottleneck(false, "owd", 0, 4*time.Second, time.Second)
	require.NoError(t, err)
	hook, err := runBottleneck(true, "owd", 0, 4*time.Second, time.Second)
	require.NoError(t, err)
	t.Log(plain.line())
	t.Log(hook.line())
	// The FIFO holds one BDP, 40 ms: CUBIC keeps it mostly full.
	require.Greater(t, plain.p95, 15*time.Millisecond, "plain quic-go fills the FIFO (without it the test shows nothing)")
	require.Less(t, float64(hook.p95), 0.6*float64(plain.p95), "the hook keeps the queue shorter")
	// Not starved for it. 4 s runs include slow start and the machine may
	// be loaded; 0.5× still fails a hook that halves goodput.
	require.Greater(t, hook.goodput, 0.5*plain.goodput, "at a comparable goodput")
}

// 20 MB through a lossy emulated path arrive byte-exact over the hook with
// each controller, and the hook's own loss detection saw the drops.
func TestHookUploadThroughLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("20 MB through the relay")
	}
	data := make([]byte, 20<<20)
	r := rand.New(rand.NewPCG(2, 3))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := scenario.Path{Rate: scenario.Rate(400e6), Delay: scenario.Duration(time.Millisecond), Loss: 0.02,
		Queue: scenario.Queue{Discipline: "fifo", Limit: 1000}}
	for _, name := range []string{"owd", "cubic"} {
		t.Run(name, func(t *testing.T) {
			p, err := newPair(true, name)
			require.NoError(t, err)
			defer p.close()
			relay, err := emu.NewRelay(emu.RelayConfig{Target: p.srvPC.LocalAddr().String(), Forward: path, Reverse: path, Seed: 3})
			require.NoError(t, err)
			defer relay.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			got := make(chan [32]byte, 1)
			go func() {
				defer close(got)
				conn, err := p.ln.Accept(ctx)
				if err != nil {
					return
				}
				defer conn.CloseWithError(0, "")
				s, err := conn.AcceptStream(ctx)
				if err != nil {
					return
				}
				h := sha256.New()
				if _, err := io.Copy(h, s); err == nil {
					got <- [32]byte(h.Sum(nil))
				}
			}()
			conn, s, err := p.dial(ctx, relay.Addr(), false)
			require.NoError(t, err)
			defer conn.CloseWithError(0, "")
			_, err = s.Write(data)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			sum, ok := <-got
			require.True(t, ok, "the server read the stream to its end")
			require.Equal(t, sha256.Sum256(data), sum, "byte-exact")
			rs, hs := relay.Stats(), p.cliHook.Stats()
			require.Positive(t, rs.Forward.Link.DroppedRandom, "the relay dropped datagrams")
			require.NotEmpty(t, hs.Peers)
			require.Positive(t, hs.Peers[0].Lost, "the hook saw the losses")
		})
	}
}
