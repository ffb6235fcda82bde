package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/owd"
)

// pmtuPath makes p's link drop every datagram larger than *mtu bytes
// (UDP payload), both ways: an emulated path MTU the test may change.
func pmtuPath(p *Pair, mtu *int) {
	p.Filter = func(_ *Session, d []byte) bool { return len(d) <= *mtu }
}

// bulkFor keeps the client's send buffer full and the server reading for
// d of virtual time; it returns the stream bytes the server read.
func bulkFor(p *Pair, d time.Duration) int64 {
	chunk := make([]byte, 16<<10)
	rd := make([]byte, 64<<10)
	var got int64
	for end := p.Now.Add(d); p.Now.Before(end); {
		_, _ = p.Cli.Write(chunk)
		p.Run(time.Millisecond)
		for {
			n, _ := p.Srv.Read(rd)
			if n == 0 {
				break
			}
			got += int64(n)
		}
	}
	return got
}

// largestData is the largest Data datagram the client sent at or after
// from, in p.Sent.
func largestData(p *Pair, from clock.Mono) int {
	n := 0
	for _, d := range p.Sent {
		if d.From == p.Cli && !d.At.Before(from) && wire.Type(d.B[1]) == wire.TypeData {
			n = max(n, len(d.B))
		}
	}
	return n
}

// Discovery converges to the largest candidate size the path carries, up
// to the ceiling, and stream data goes in datagrams of that size.
func TestPMTUConvergesToPathMTU(t *testing.T) {
	for _, tc := range []struct {
		name             string
		path, ceiling    int
		want             int
		tls              bool
		wantProbesLostLE int64
	}{
		{"ethernet, default ceiling", 1500 - 28, 0, 1452, false, 0},
		{"loopback: the ceiling", 65535, 0, DefaultMaxDatagramPMTUD, false, 0},
		{"loopback, ceiling 9000", 65535, 9000, 9000, false, 0},
		{"tunnel 1420", 1420, 0, 1400, false, 3},
		{"tunnel 1300", 1300, 0, 1280, false, 3},
		{"below every candidate", 1250, 0, 1200, false, 3},
		{"IPv4 PPPoE under a 1472 ceiling", 1470, 1472, 1464, false, 3},
		{"TLS, tunnel 1420", 1420, 0, 1400, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{MaxDatagram: tc.ceiling}
			if tc.tls {
				cfg.TLS = loopbackTLS(t)
			}
			p := NewPair(t, cfg, cfg, Link{Delay: 10 * time.Millisecond, Rate: 50e6})
			mtu := tc.path
			pmtuPath(p, &mtu)
			p.Open()
			p.Record = true
			require.Positive(t, bulkFor(p, 3*time.Second))
			st := p.Cli.Stats(p.Now)
			require.Equal(t, tc.want, st.DatagramSize, "%+v", st)
			require.LessOrEqual(t, st.PMTUProbesLost, tc.wantProbesLostLE, "MAX_PROBES lost at the one size above the path's")
			require.Zero(t, st.PMTUBlackHoles)
			require.Zero(t, st.PacketsLost, "nothing but probes was lost")
			settled := p.Now.Add(-time.Second)
			require.Equal(t, tc.want, largestData(p, settled), "stream data goes at the discovered size")
			t.Logf("%s: %d bytes after %d probes (%d lost)", tc.name, st.DatagramSize, st.PMTUProbesSent, st.PMTUProbesLost)
		})
	}
}

// lossCounter is the owd controller, counting the losses and timeouts it
// is told of.
type lossCounter struct {
	cc.Controller
	losses, rtos int
}

func (l *lossCounter) OnLoss(now clock.Mono, e cc.LossEvent) {
	l.losses++
	l.Controller.OnLoss(now, e)
}

func (l *lossCounter) OnRetransmissionTimeout(now clock.Mono) {
	l.rtos++
	l.Controller.OnRetransmissionTimeout(now)
}

// A lost probe is not congestion (RFC 8899 §4.4): the controller is never
// told, and its window is not reduced, while the probes above the path's
// MTU are lost.
func TestPMTULostProbeDoesNotShrinkWindow(t *testing.T) {
	ctl := &lossCounter{}
	cfg := Config{NewController: func(mss cc.ByteCount) (cc.Controller, error) {
		c, err := owd.New(owd.Config{MSS: mss})
		ctl.Controller = c
		return ctl, err
	}}
	p := NewPair(t, cfg, Config{}, Link{Delay: 10 * time.Millisecond, Rate: 20e6})
	mtu := 1300
	pmtuPath(p, &mtu)
	p.Open()
	var lowest cc.ByteCount
	chunk := make([]byte, 16<<10)
	rd := make([]byte, 64<<10)
	for p.Cli.Stats(p.Now).PMTUProbesLost < pmtuMaxProbes && p.Now < clock.Mono(10*time.Second) {
		_, _ = p.Cli.Write(chunk)
		p.Run(time.Millisecond)
		for n, _ := p.Srv.Read(rd); n > 0; n, _ = p.Srv.Read(rd) {
		}
		if w := p.Cli.Stats(p.Now).Window; lowest == 0 || w < lowest {
			lowest = w
		}
	}
	st := p.Cli.Stats(p.Now)
	require.Equal(t, int64(pmtuMaxProbes), st.PMTUProbesLost, "the 1400-byte probes were lost")
	require.Zero(t, ctl.losses, "a lost probe is no loss to the controller")
	require.Zero(t, ctl.rtos)
	require.Zero(t, st.PacketsLost)
	require.Equal(t, cc.ByteCount(cc.InitialWindowPackets*cfgMSS(t, cfg)), lowest, "the window never fell below its initial size")
	require.Equal(t, 1280, st.DatagramSize)
}

func cfgMSS(t *testing.T, cfg Config) int {
	c, err := cfg.Resolve()
	require.NoError(t, err)
	return c.MSS()
}

// The controller counts its window in segments of the base size, so its
// initial window is that of 1200-byte datagrams whatever size discovery
// reaches (RFC 8899 §4.4).
func TestPMTUInitialWindowFromBase(t *testing.T) {
	c, err := Config{}.Resolve()
	require.NoError(t, err)
	require.Equal(t, DefaultMaxDatagramPMTUD, c.MaxDatagram, "the ceiling")
	require.Equal(t, pmtuBase-wire.HeaderLen-wire.DataOverhead, c.MSS())
	fixed, err := Config{DisablePathMTUDiscovery: true, MaxDatagram: 1400}.Resolve()
	require.NoError(t, err)
	require.Equal(t, 1400-wire.HeaderLen-wire.DataOverhead, fixed.MSS(), "without discovery every datagram is MaxDatagram")
	d, err := Config{DisablePathMTUDiscovery: true}.Resolve()
	require.NoError(t, err)
	require.Equal(t, 1200, d.MaxDatagram)
	require.Nil(t, newPMTU(false, 1400).candidates())
	require.Equal(t, []int{1280, 1400, 1452}, newPMTU(true, 1452).candidates())
	require.Equal(t, []int{1250}, newPMTU(true, 1250).candidates())
	require.Empty(t, newPMTU(true, 1000).candidates())
	require.Equal(t, 1000, newPMTU(true, 1000).size)
}

// A path whose MTU falls mid-connection (a black hole: full-size packets
// vanish, small ones cross) is detected: the size falls back to BASE,
// stream data keeps flowing, and a new search finds the new size.
func TestPMTUBlackHoleFallsBack(t *testing.T) {
	cfg := Config{}
	p := NewPair(t, cfg, cfg, Link{Delay: 10 * time.Millisecond, Rate: 20e6})
	mtu := 1500
	pmtuPath(p, &mtu)
	p.Open()
	require.Positive(t, bulkFor(p, 2*time.Second))
	require.Equal(t, 1452, p.Cli.Stats(p.Now).DatagramSize)

	mtu = 1300 // the route changes
	start := p.Now
	var fellBack time.Duration
	for p.Now.Sub(start) < 10*time.Second && fellBack == 0 {
		bulkFor(p, 10*time.Millisecond)
		if p.Cli.Stats(p.Now).PMTUBlackHoles > 0 {
			fellBack = p.Now.Sub(start)
		}
	}
	require.NotZero(t, fellBack, "the black hole is detected")
	require.Less(t, fellBack, 3*time.Second)
	got := bulkFor(p, 5*time.Second)
	st := p.Cli.Stats(p.Now)
	require.Greater(t, got, int64(5e6), "data flows again: %d bytes in 5 s at 20 Mbit/s", got)
	require.Equal(t, 1280, st.DatagramSize, "searched again: the largest candidate the new path carries")
	require.Equal(t, int64(1), st.PMTUBlackHoles)
	require.Equal(t, stateOpen, p.Cli.state)
	t.Logf("fell back after %v; %d bytes in the next 5 s; %d probes, %d lost", fellBack, got, st.PMTUProbesSent, st.PMTUProbesLost)

}

// A radio fade is not a black hole: for seconds the path carries nothing,
// small packets no more than full-size ones (the AT&T LTE uplink trace has
// a 2.2 s fade six seconds into it), and the retransmission timeouts that
// pile up in it must not drop the size to BASE and hold it below the
// ceiling for RAISE_TIMER. The PINGs the timeouts send are lost too, so
// nothing confirms a black hole, and the first full-size packet
// acknowledged after the fade clears the suspicion.
func TestPMTUFadeIsNotABlackHole(t *testing.T) {
	for _, fade := range []time.Duration{1500 * time.Millisecond, 2200 * time.Millisecond, 4 * time.Second} {
		t.Run(fade.String(), func(t *testing.T) {
			cfg := Config{}
			p := NewPair(t, cfg, cfg, Link{Delay: 20 * time.Millisecond, Rate: 5e6})
			fading := false
			p.Filter = func(*Session, []byte) bool { return !fading }
			p.Open()
			bulkFor(p, 2*time.Second)
			require.Equal(t, 1452, p.Cli.Stats(p.Now).DatagramSize)
			fading = true
			bulkFor(p, fade)
			timeouts := p.Cli.tr.Backoff()
			fading = false
			got := bulkFor(p, 3*time.Second)
			st := p.Cli.Stats(p.Now)
			t.Logf("fade %v: %d timeouts in it; %d bytes in the 3 s after; %d probes, %d lost", fade, timeouts, got, st.PMTUProbesSent, st.PMTUProbesLost)
			require.GreaterOrEqual(t, timeouts, pmtuBlackHoleEvents, "the fade held enough timeouts to have counted as a black hole")
			require.Zero(t, st.PMTUBlackHoles, "a fade is not a black hole")
			require.Equal(t, 1452, st.DatagramSize)
			require.Positive(t, got)
		})
	}
}

// A probe out when a fade begins is given up by the retransmission
// timeout with everything else: that is not a probe lost for its size.
// Three fades, each catching the search with a probe out, leave it free
// to reach the ceiling; counted as losses they ended it below.
func TestPMTUProbeLostInFadeNotCounted(t *testing.T) {
	cfg := Config{}
	p := NewPair(t, cfg, cfg, Link{Delay: 20 * time.Millisecond, Rate: 5e6})
	fading := false
	var fadeUntil clock.Mono
	p.Filter = func(from *Session, d []byte) bool {
		// The fade begins with the probe: it is lost with everything
		// sent for the next 1.5 s, both ways.
		if fading && from == p.Cli && wire.Type(d[1]) == wire.TypePMTUProbe {
			fading, fadeUntil = false, p.Now.Add(1500*time.Millisecond)
		}
		return !p.Now.Before(fadeUntil)
	}
	p.Open()
	for range pmtuMaxProbes {
		fading = true
		require.True(t, p.DriveUntil(func() bool {
			bulkFor(p, time.Millisecond)
			return !fading
		}, 5*time.Second), "a probe goes out")
		bulkFor(p, 2*time.Second)
	}
	bulkFor(p, 3*time.Second)
	st := p.Cli.Stats(p.Now)
	t.Logf("%d probes sent, %d lost", st.PMTUProbesSent, st.PMTUProbesLost)
	require.Zero(t, st.PMTUProbesLost, "no probe was lost for its size")
	require.Equal(t, 1452, st.DatagramSize)
}

// A path that black-holes large packets for a moment and then carries
// them again does not flap: after the fallback the new search stops
// below the size that vanished until RAISE_TIMER has passed, then finds
// it again.
func TestPMTUBlackHoleDoesNotFlap(t *testing.T) {
	cfg := Config{}
	p := NewPair(t, cfg, cfg, Link{Delay: 10 * time.Millisecond, Rate: 20e6})
	mtu := 1500
	pmtuPath(p, &mtu)
	p.Open()
	bulkFor(p, 2*time.Second)
	require.Equal(t, 1452, p.Cli.Stats(p.Now).DatagramSize)
	mtu = 1300
	require.True(t, p.DriveUntil(func() bool {
		bulkFor(p, time.Millisecond)
		return p.Cli.Stats(p.Now).PMTUBlackHoles > 0
	}, 10*time.Second))
	mtu = 1500 // back at once
	changes := p.Cli.pmtu.changes
	for range 9 {
		bulkFor(p, 100*time.Millisecond)
		p.Run(time.Minute)
		require.Equal(t, 1400, p.Cli.Stats(p.Now).DatagramSize, "searched again, below the size that vanished")
	}
	require.Equal(t, changes+2, p.Cli.pmtu.changes, "1200 → 1280 → 1400 once")
	p.Run(2 * time.Minute)
	bulkFor(p, time.Second)
	require.Equal(t, 1452, p.Cli.Stats(p.Now).DatagramSize, "RAISE_TIMER: searched above again")
	require.Equal(t, int64(1), p.Cli.Stats(p.Now).PMTUBlackHoles)
}

// On a path whose MTU never changes the size settles and stays: over
// hours of virtual time the only changes are the first search's steps,
// however often RAISE_TIMER probes above, and random loss is not taken for
// a black hole.
func TestPMTUDoesNotFlap(t *testing.T) {
	t.Run("raise timer, 3 h", func(t *testing.T) {
		cfg := Config{}
		p := NewPair(t, cfg, cfg, Link{Delay: 20 * time.Millisecond, Rate: 10e6})
		mtu := 1420
		pmtuPath(p, &mtu)
		p.Open()
		msg := make([]byte, 4000)
		rd := make([]byte, 64<<10)
		for p.Now < clock.Mono(3*time.Hour) {
			_, _ = p.Cli.Write(msg)
			p.Run(500 * time.Millisecond)
			for n, _ := p.Srv.Read(rd); n > 0; n, _ = p.Srv.Read(rd) {
			}
			require.LessOrEqual(t, p.Cli.pmtu.changes, int64(2), "1200 → 1280 → 1400, then never again")
		}
		st := p.Cli.Stats(p.Now)
		require.Equal(t, 1400, st.DatagramSize)
		require.Zero(t, st.PMTUBlackHoles)
		raises := int64(3 * time.Hour / pmtuRaiseTimer)
		require.LessOrEqual(t, st.PMTUProbesLost, pmtuMaxProbes*(raises+1), "three lost probes per RAISE_TIMER")
		require.GreaterOrEqual(t, st.PMTUProbesLost, pmtuMaxProbes*(raises-1), "RAISE_TIMER re-probes")
		require.Zero(t, p.Spurious, "no deadline without something to do")
		t.Logf("3 h: %d size changes, %d probes sent, %d lost", p.Cli.pmtu.changes, st.PMTUProbesSent, st.PMTUProbesLost)
	})
	t.Run("1% random loss, bulk", func(t *testing.T) {
		cfg := Config{}
		p := NewPair(t, cfg, cfg, Link{Delay: 20 * time.Millisecond, Rate: 10e6, Loss: 0.01, Seed: 3})
		p.Open()
		bulkFor(p, 60*time.Second)
		st := p.Cli.Stats(p.Now)
		require.Positive(t, st.PacketsLost)
		require.Zero(t, st.PMTUBlackHoles, "congestion-free random loss is not a black hole")
		require.Equal(t, 1452, st.DatagramSize)
		require.LessOrEqual(t, p.Cli.pmtu.changes, int64(3))
	})
}

// Without discovery nothing is probed and every datagram is MaxDatagram.
func TestPMTUDisabled(t *testing.T) {
	p := OpenPair(t, Config{DisablePathMTUDiscovery: true, MaxDatagram: 1300}, Link{Delay: 5 * time.Millisecond, Rate: 20e6})
	p.Record = true
	bulkFor(p, time.Second)
	st := p.Cli.Stats(p.Now)
	require.Equal(t, 1300, st.DatagramSize)
	require.Zero(t, st.PMTUProbesSent)
	require.Equal(t, 1300, largestData(p, 0))
}

// The black-hole rule, step by step on the discovery state: full-size
// losses, then a small packet that crosses. A full-size packet lost that
// was sent before the small one may have been dropped by a queue that
// has drained since (congestion): no black hole. One sent after the
// small one and lost is: the path carries small packets and not large.
func TestPMTUBlackHoleNeedsAFullSizeLossAfterASmallCrossed(t *testing.T) {
	at := func(ms int) clock.Mono { return clock.Mono(time.Duration(ms) * time.Millisecond) }
	p := newPMTU(true, 1452)
	p.setSize(1452)
	for i, pn := range []cc.PacketNumber{10, 20, 30} { // three timeouts' worth of full-size losses
		require.False(t, p.onBigLost(at(1000*(i+1)), at(1000*(i+1)-500), pn))
	}
	require.False(t, p.smallAcked)
	p.onSmallAcked(at(3200)) // a PING sent at 3.2 s crossed
	require.False(t, p.onBigLost(at(4000), at(3100), 40),
		"sent at 3.1 s, before the PING that crossed: the queue may have dropped it")
	require.Equal(t, 1452, p.size)
	require.True(t, p.onBigLost(at(5000), at(4100), 50),
		"sent at 4.1 s, after the PING that crossed, and lost: a black hole, to be confirmed")
	require.Equal(t, 1452, p.size, "not before the probes confirm it")

	// The confirmation: probes of the PLPMTU (each with a PING behind it
	// in the session). The first two lost for their size, the third as
	// well: a black hole.
	for i := range pmtuMaxProbes {
		n, ok := p.probeDue(at(5000 + 100*i))
		require.True(t, ok, "confirmation probe %d due", i)
		require.Equal(t, 1452, n, "a probe of the PLPMTU itself")
		p.onProbeSent(cc.PacketNumber(60+i), n)
		require.True(t, p.probeConfirms)
		require.Equal(t, 1452, p.size)
		p.probeLostForSize(at(5050 + 100*i))
	}
	require.Equal(t, pmtuBase, p.size, "three confirmation probes lost while their PINGs crossed")
	require.Equal(t, int64(1), p.blackHole)

	// A confirmation probe that arrives ends it: a queue dropped the
	// data, not the path.
	p = newPMTU(true, 1452)
	p.setSize(1452)
	p.state = pmtuSearchComplete
	for i, pn := range []cc.PacketNumber{10, 20, 30} {
		p.onBigLost(at(1000*(i+1)), at(1000*(i+1)-500), pn)
	}
	p.onSmallAcked(at(3200))
	require.True(t, p.onBigLost(at(5000), at(4100), 50))
	for i := range pmtuMaxProbes - 1 {
		n, _ := p.probeDue(at(5000))
		p.onProbeSent(cc.PacketNumber(60+i), n)
		p.probeLostForSize(at(5050))
	}
	n, ok := p.probeDue(at(5200))
	require.True(t, ok)
	p.onProbeSent(70, n)
	p.onProbeAcked(at(5300), 70)
	require.Equal(t, 1452, p.size)
	require.Zero(t, p.blackHole)
	require.False(t, p.confirming)
	require.Equal(t, pmtuSearchComplete, p.state, "a confirmation probe is no new search")
	_, ok = p.probeDue(at(5400))
	require.False(t, ok, "nothing more to confirm")

	// A probe lost while the RTT shows a standing queue decides nothing
	// (a nearly full byte-limited queue takes the PING, not the probe),
	// MAX_PROBES times at most: then losses count again, for a black hole
	// on a path whose delay swings must still be found.
	p = newPMTU(true, 1452)
	p.setSize(1452)
	for i, pn := range []cc.PacketNumber{10, 20, 30} {
		p.onBigLost(at(1000*(i+1)), at(1000*(i+1)-500), pn)
	}
	p.onSmallAcked(at(3200))
	require.True(t, p.onBigLost(at(5000), at(4100), 50))
	p.onRTT(900*time.Millisecond, 60*time.Millisecond) // the PING waited behind a backlog
	require.True(t, p.queued)
	for i := range 2 * pmtuMaxProbes {
		n, ok := p.probeDue(at(6000 + 100*i))
		require.True(t, ok)
		p.onProbeSent(cc.PacketNumber(80+i), n)
		p.probeLostForSize(at(6050 + 100*i))
		if i < 2*pmtuMaxProbes-1 {
			require.Equal(t, 1452, p.size, "loss %d: %d undecided, then counted", i, pmtuMaxProbes)
		}
	}
	require.Equal(t, pmtuBase, p.size)
	p.onRTT(75*time.Millisecond, 60*time.Millisecond)
	require.False(t, p.queued, "jitter is not a queue")
	p.onRTT(70*time.Millisecond, 20*time.Millisecond)
	require.True(t, p.queued)

	// A full-size packet acknowledged in between clears the suspicion.
	p = newPMTU(true, 1452)
	p.setSize(1452)
	for i, pn := range []cc.PacketNumber{10, 20, 30} {
		p.onBigLost(at(1000*(i+1)), at(1000*(i+1)-500), pn)
	}
	p.onSmallAcked(at(3200))
	p.onBigAcked(45)
	require.False(t, p.onBigLost(at(5000), at(4100), 50), "a full-size packet got through since")
	require.Equal(t, 1452, p.size)
}
