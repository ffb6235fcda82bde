package session

import (
	"bytes"
	"testing"
	"time"

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

// A fade that holds packets rather than losing them (a cellular link's
// buffer: the AT&T LTE uplink trace's 4 s fade) ends with the packets it
// held arriving first, slowly, at the rate the link comes back with: the
// retransmission timeout had declared all of them lost, so their ACKs
// acknowledge nothing in flight. They are the path answering all the
// same: the first one clears PathDead, not the ACK of the newest
// retransmission at the back of the queue.
func TestPathDeadClearsOnLateAck(t *testing.T) {
	p := OpenPair(t, Config{}, Link{Delay: 20 * time.Millisecond, Rate: 5e6})
	bulkFor(p, time.Second)
	// The client's datagrams wait in a FIFO (held): nothing leaves it in
	// the fade, then one per 200 ms, oldest first. The server's cross.
	var held [][]byte
	queueing, fading := true, true
	p.Filter = func(from *Session, d []byte) bool {
		if from == p.Cli && queueing {
			held = append(held, bytes.Clone(d))
			return false
		}
		return !fading
	}
	bulkFor(p, 5*time.Second)
	require.True(t, p.Cli.PathDead(), "five seconds of fade: dead")
	require.Greater(t, len(held), 2, "the fade held the packets sent into it")
	fading = false
	d := held[0]
	held = held[1:]
	p.Inject(p.Srv, d)
	p.Run(200 * time.Millisecond)
	require.False(t, p.Cli.PathDead(), "the ACK of the first held packet (of %d) is the path answering", len(held)+1)
	for len(held) > 0 {
		d, held = held[0], held[1:]
		p.Inject(p.Srv, d)
		p.Run(20 * time.Millisecond)
	}
	queueing = false
	got := bulkFor(p, 2*time.Second)
	require.Positive(t, got)
	require.False(t, p.Cli.PathDead())
}
