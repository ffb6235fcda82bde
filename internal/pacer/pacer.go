// Package pacer spaces a sender's datagrams at its congestion controller's
// pacing rate. It is the one pacer of fresh's endpoints (the session that
// package transport drives, and the quic-go hook), sans-I/O: every call
// carries now, and the caller's timer waits for Next.
//
// The pacer is a leaky bucket in time rather than tokens: each datagram
// moves the earliest time of the next one on by size/rate. A sender that
// fell behind (its timer fired late, or it had nothing to send) may catch
// up by at most Burst worth of sending, as quic-go's pacer allows a burst
// of a few packets: a user-space timer cannot wake much more finely, and
// without the credit a paced sender would fall short of its rate; with no
// bound it would send a line-rate burst after every idle period, which a
// pacer exists to prevent (RFC 9002 §7.7).
package pacer

import (
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
)

// Burst is the most sending time the pacer lets a late sender make up.
const Burst = 2 * time.Millisecond

// Pacer is one sender's pacing state. The zero value lets the first
// datagram go at once. Not safe for concurrent use.
type Pacer struct {
	next clock.Mono // earliest time the next datagram may go
}

// OnSent moves the pacer on by one datagram of size bytes sent at now at
// rate (bit/s). A rate of 0 means the controller does not pace: the next
// datagram may go at once.
func (p *Pacer) OnSent(now clock.Mono, size cc.ByteCount, rate cc.Bandwidth) {
	if rate == 0 {
		p.next = 0
		return
	}
	gap := time.Duration(float64(size) * 8 / float64(rate) * float64(time.Second))
	p.next = max(p.next, now.Add(-Burst)).Add(gap)
}

// Ready reports whether a datagram may go at now.
func (p *Pacer) Ready(now clock.Mono) bool { return !now.Before(p.next) }

// Next is the earliest time the next datagram may go (in the past, or
// the zero Mono, when it may go now).
func (p *Pacer) Next() clock.Mono { return p.next }
