package netem

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// AC is a WMM access category (IEEE 802.11-2020 §10.2.4.2 EDCA; Wi-Fi
// Alliance WMM). The constants are in priority order, highest first: the
// WMM discipline serves a category only when every category before it is
// empty.
type AC uint8

const (
	ACVoice      AC = iota // AC_VO, user priorities 6 and 7
	ACVideo                // AC_VI, user priorities 4 and 5
	ACBestEffort           // AC_BE, user priorities 0 and 3
	ACBackground           // AC_BK, user priorities 1 and 2
	numACs
)

func (a AC) String() string {
	switch a {
	case ACVoice:
		return "voice"
	case ACVideo:
		return "video"
	case ACBestEffort:
		return "best-effort"
	case ACBackground:
		return "background"
	}
	return "unknown"
}

// DSCP code points RFC 8325 §4 names beside those of the tin mapping
// (RFC 2474 class selectors, RFC 2597 assured forwarding).
const (
	dscpCS2 = 16
	dscpCS3 = 24
)

// UPOf maps a DSCP to an IEEE 802.1D/802.11 user priority (0..7) as
// RFC 8325 "Mapping Diffserv to IEEE 802.11" §4 recommends (its summary
// table, Figure 1) for the code points it names, so that the IETF service
// classes land in the access category they want rather than where the
// three high bits of the DSCP would put them:
//
//	CS7, CS6   network control        → 7 voice
//	EF, VA     telephony              → 6 voice (three high bits: 5, video)
//	CS5        signaling              → 5 video
//	AF4x, CS4  conferencing, real-time interactive → 4 video
//	AF3x, CS3  streaming, broadcast video → 4 video (three high bits: 3, best effort)
//	AF2x       low-latency data       → 3 best effort
//	CS2        OAM                    → 0 best effort (three high bits: 2, background)
//	AF1x       high-throughput data   → 0 best effort (three high bits: 1, background;
//	                                      RFC 8325 keeps it out of AC_BK so it is not starved)
//	CS0        standard               → 0 best effort
//	CS1        low-priority data      → 1 background
//	LE         lower effort           → 1 background (RFC 8622 §8, which updates RFC 8325)
//
// Choice for CS6 and CS7: RFC 8325 treats both as network control, which
// an operator either maps to UP 7 or does not pass onto the wireless hop
// at all (CS7 is reserved for future use). A bottleneck queue must place
// them somewhere; we take UP 7, voice, which is also what the ACP
// prioritisation study ("Coexistence of Age Sensitive Traffic and High
// Throughput Flows: Does Prioritization Help?") relies on when it marks
// update packets CS7 for the highest priority.
//
// Any other code point gets the default derivation RFC 8325 sets out to
// correct for the named ones: the three most significant bits of the
// DSCP (dscp>>3).
func UPOf(dscp uint8) uint8 {
	d := dscp & 0x3f
	switch d {
	case dscpCS7, dscpCS6:
		return 7
	case dscpEF, dscpVA:
		return 6
	case dscpCS5:
		return 5
	case 34, 36, 38, dscpCS4, 26, 28, 30, dscpCS3: // AF41–43, CS4, AF31–33, CS3
		return 4
	case 18, 20, 22: // AF21–23
		return 3
	case dscpCS2, 10, 12, 14, 0: // CS2, AF11–13, CS0
		return 0
	case dscpCS1, dscpLE:
		return 1
	}
	return d >> 3
}

// ACOfUP maps a user priority to its access category (IEEE 802.11-2020
// §10.2.4.2, the UP-to-AC table): 1, 2 → background; 0, 3 → best effort;
// 4, 5 → video; 6, 7 → voice. Values above 7 are taken modulo 8.
func ACOfUP(up uint8) AC {
	switch up & 7 {
	case 1, 2:
		return ACBackground
	case 0, 3:
		return ACBestEffort
	case 4, 5:
		return ACVideo
	}
	return ACVoice
}

// ACOf maps a DSCP to its access category: ACOfUP(UPOf(dscp)).
func ACOf(dscp uint8) AC { return ACOfUP(UPOf(dscp)) }

// WMMQueue is the queue inside each access category.
type WMMQueue string

const (
	// WMMFIFO is a drop-tail FIFO per category (the default).
	WMMFIFO WMMQueue = "fifo"
	// WMMCoDel is an RFC 8289 CoDel per category: tail drop at the
	// category's limit, CoDel drops at dequeue.
	WMMCoDel WMMQueue = "codel"
)

// WMMConfig configures the WMM-like discipline. Zero fields take the
// defaults noted.
type WMMConfig struct {
	// ACQueue is the queue inside each category ("": WMMFIFO).
	ACQueue WMMQueue
	// Limit and LimitBytes cap EACH category's backlog, not the total:
	// every access category has its own queue of this depth, as a Wi-Fi
	// driver keeps one queue per AC. With only one category in use the
	// discipline is then exactly a FIFO (or CoDel) of this limit. Both
	// zero: DefaultLimit packets per category.
	Limit      int
	LimitBytes int
	// Target and Interval are CoDel's parameters for WMMCoDel (0:
	// DefaultTarget, DefaultInterval); each category runs its own CoDel.
	Target   time.Duration
	Interval time.Duration
}

// wmmCat is one access category's queue and, for WMMCoDel, its CoDel state.
type wmmCat struct {
	q  pktQueue
	st codel
}

// WMM is a WMM-like strict-priority discipline: four access categories
// chosen by DSCP (ACOf), each a FIFO or a CoDel with its own limit, served
// in strict priority VO > VI > BE > BK — a category is served only when
// every higher one is empty, so a backlogged higher category starves the
// lower ones completely.
//
// 802.11 EDCA (IEEE 802.11-2020 §10.2.4.2) does not do that: each AC
// contends for the medium with its own AIFS and contention window, so a
// higher AC wins most but not all transmit opportunities (internal
// collisions go to the higher AC; external contention is random). WMM's
// priority is therefore probabilistic. We model its strict limit, which
// is what a single station with no contention from others approaches and
// what the ACP prioritisation study's "baseline priority" configuration
// (all flows from one Wi-Fi client) measures. Multi-station contention,
// TXOP limits and retries are not modelled.
type WMM struct {
	lim  limits
	kind WMMQueue
	prm  codelParams
	cats [numACs]wmmCat
	drop DropFunc
}

var _ Queue = (*WMM)(nil)

// NewWMM returns an empty WMM discipline. onDrop may be nil.
func NewWMM(cfg WMMConfig, onDrop DropFunc) (*WMM, error) {
	kind := cfg.ACQueue
	switch kind {
	case "":
		kind = WMMFIFO
	case WMMFIFO, WMMCoDel:
	default:
		return nil, fmt.Errorf("wmm: %w", invalid("ac_queue %q: want %s or %s", kind, WMMFIFO, WMMCoDel))
	}
	lim, err := newLimits(cfg.Limit, cfg.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("wmm: %w", err)
	}
	prm, err := newCodelParams(cfg.Target, cfg.Interval)
	if err != nil {
		return nil, fmt.Errorf("wmm: %w", err)
	}
	return &WMM{lim: lim, kind: kind, prm: prm, drop: dropOrNop(onDrop)}, nil
}

// Enqueue classifies p into its category and appends it, or tail-drops it
// (DropOverflow) if that category is full. Other categories are never
// touched: a full background queue does not drop voice, nor the reverse.
func (w *WMM) Enqueue(now clock.Mono, p *Packet) {
	c := &w.cats[ACOf(p.DSCP)]
	if w.lim.over(c.q.len()+1, c.q.bytes+p.Size) {
		w.drop(now, p, DropOverflow)
		return
	}
	p.EnqueuedAt = now
	c.q.push(p)
}

// Dequeue returns the head of the highest-priority non-empty category
// (after that category's CoDel drops, for WMMCoDel; if CoDel empties it,
// the next category is served), or nil if every category is empty.
//
// With WMMCoDel, a lower category's sojourn time includes the time it was
// starved by higher ones, so CoDel drops there once it is served again
// after a long starvation — the standing-queue signal is real (the queue
// did not drain), whatever caused it.
func (w *WMM) Dequeue(now clock.Mono) *Packet {
	for a := range w.cats {
		c := &w.cats[a]
		if c.q.len() == 0 {
			continue
		}
		if w.kind == WMMFIFO {
			return c.q.pop()
		}
		if p := c.st.dequeue(now, &c.q, w.prm, w.drop); p != nil {
			return p
		}
	}
	return nil
}

// Len is the total backlog in packets.
func (w *WMM) Len() int {
	n := 0
	for a := range w.cats {
		n += w.cats[a].q.len()
	}
	return n
}

// Bytes is the total backlog in bytes.
func (w *WMM) Bytes() int {
	b := 0
	for a := range w.cats {
		b += w.cats[a].q.bytes
	}
	return b
}

// ACLen is the backlog of category a in packets.
func (w *WMM) ACLen(a AC) int { return w.cats[a].q.len() }

// ACBytes is the backlog of category a in bytes.
func (w *WMM) ACBytes(a AC) int { return w.cats[a].q.bytes }
