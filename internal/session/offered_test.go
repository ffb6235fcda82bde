package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/acp"
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// offerCounter is an update policy that counts the updates offered to it.
type offerCounter struct {
	acp.Policy
	offered []clock.Mono
}

func (o *offerCounter) OnUpdateOffered(now clock.Mono) { o.offered = append(o.offered, now) }

// TestSendUpdateTellsTheSource: every SendUpdate, sent or superseded, is
// offered to a policy that observes the source (acp.SourceObserver), so the
// regulator learns the application's reading rate.
func TestSendUpdateTellsTheSource(t *testing.T) {
	var oc *offerCounter
	s, err := New(Config{NewUpdatePolicy: func(size cc.ByteCount) (acp.Policy, error) {
		p, err := acp.NewLazy(acp.Config{UpdateSize: size})
		oc = &offerCounter{Policy: p}
		return oc, err
	}}, 1, true, 0)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, s.SendUpdate(clock.Mono(i*1000), 0, []byte{1, 2, 3}))
	}
	require.Equal(t, []clock.Mono{0, 1000, 2000}, oc.offered)
	require.Equal(t, int64(2), s.Stats(0).UpdatesSuperseded, "two replaced before any was sent")
}
