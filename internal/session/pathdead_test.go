package session

import (
	"time"

	"testing"

	"github.com/stretchr/testify/require"
)

// sendUpdatesFor offers an update every 5 ms for d (a 200 Hz sensor) and
// returns how many the source sent meanwhile, and when PathDead first
// held (0 if it never did).
func sendUpdatesFor(t *testing.T, p *Pair, d time.Duration) (sent int64, deadAfter time.Duration) {
	t.Helper()
	start, before := p.Now, p.Cli.st.UpdatesSent
	for p.Now.Sub(start) < d {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte(`{"temp_c":21.5}`)))
		p.Run(5 * time.Millisecond)
		if deadAfter == 0 && p.Cli.PathDead() {
			deadAfter = p.Now.Sub(start)
		}
	}
	return p.Cli.st.UpdatesSent - before, deadAfter
}

// A path that goes silent is declared dead after PathDeadTimeouts
// timeouts in a row (a few seconds, well before the idle timeout), while
// the connection stays open; updates then go at most one per timeout,
// probes rather than a sensor's full rate into nothing; and the first
// acknowledgement after the path comes back clears it. A path that
// answers is never declared dead, however long it runs.
func TestPathDeadAfterConsecutiveTimeouts(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 20 * time.Millisecond, Rate: 10e6})
	healthy, dead := sendUpdatesFor(t, p, 10*time.Second)
	require.Zero(t, dead, "a path that answers is never dead")
	require.Greater(t, healthy, int64(500), "updates flow while the path answers")

	silent := true
	p.Filter = func(*Session, []byte) bool { return !silent }
	_, deadAfter := sendUpdatesFor(t, p, 6*time.Second)
	require.NotZero(t, deadAfter, "a silent path is declared dead")
	require.Less(t, deadAfter, 5*time.Second, "within the documented few seconds")
	require.Equal(t, stateOpen, p.Cli.state, "dead is not closed: only IdleTimeout closes")
	t.Logf("dead after %v of silence (%d timeouts)", deadAfter, p.Cli.tr.Backoff())

	probes, _ := sendUpdatesFor(t, p, 4*time.Second)
	require.LessOrEqual(t, probes, int64(4), "into a dead path: at most one update per timeout (2 s at most each), not 200/s")
	require.True(t, p.Cli.PathDead())

	silent = false
	require.True(t, p.DriveUntil(func() bool {
		_ = p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte(`{"temp_c":21.6}`))
		return !p.Cli.PathDead()
	}, 5*time.Second), "the path's first answer clears it")
	after, dead := sendUpdatesFor(t, p, 2*time.Second)
	require.Zero(t, dead)
	require.Greater(t, after, int64(50), "back to the policy's rate")
}
