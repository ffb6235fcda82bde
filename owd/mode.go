package owd

import "github.com/fresh-udp/fresh/cc"

// mode is the controller's state. There is exactly one at a time; the
// package doc draws the diagram, and each mode has one transition function
// (onAckSlowStart, onAckAvoidance, onAckProbe, onAckCompetitive), as
// tcp_bbr.c keeps one function per BBR state. Loss recovery (RFC 6582) and
// the delay signal in use (one-way delay or the RTT/2 fallback) are
// orthogonal to it: a flow can be in recovery in any mode.
type mode uint8

const (
	// modeSlowStart: the window grows by the bytes acknowledged until the
	// queueing delay passes the exit threshold, ssthresh or a loss.
	modeSlowStart mode = iota
	// modeAvoidance: the delay rule (Eq. 7 or Eq. 2) steers the window
	// toward the threshold μ.
	modeAvoidance
	// modeProbe: a base-delay slowdown: the window is held at the probe
	// window for a few round trips so the queue drains, every flow
	// re-measures OWDmin, and the drain test tells whose queue it was.
	modeProbe
	// modeCompetitive: beside a buffer-filling flow the window is CUBIC's
	// (RFC 9438), until a slowdown shows the queue drains.
	modeCompetitive
)

// Mode names, as cc.Metrics.Mode and the benchmark's mode_s report them.
const (
	ModeSlowStart   = cc.ModeSlowStart // "slow_start"
	ModeAvoidance   = cc.ModeAvoidance // "avoidance"
	ModeProbe       = "probe"
	ModeCompetitive = "competitive"
)

// String returns the mode's name (ModeSlowStart, …).
func (m mode) String() string {
	switch m {
	case modeSlowStart:
		return ModeSlowStart
	case modeAvoidance:
		return ModeAvoidance
	case modeProbe:
		return ModeProbe
	case modeCompetitive:
		return ModeCompetitive
	}
	return "unknown"
}
