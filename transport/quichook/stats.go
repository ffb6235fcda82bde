package quichook

import (
	"net/netip"
	"sort"
	"time"

	"github.com/fresh-udp/fresh/cc"
)

// counters are the PacketConn's totals, under PacketConn.mu.
type counters struct {
	shimSent, shimReceived     int64
	plainSent, plainReceived   int64
	feedbackSent               int64
	feedbackReceived           int64
	hellosSent, hellosReceived int64
	queueDrops                 int64
	malformed, oversize        int64
	duplicates                 int64
	sendErrors                 int64
	peersRefused, peersEvicted int64
	unauthenticated            int64
	outOfWindow                int64
	versionMismatch            int64
	amplificationLimited       int64
	unvalidatedEvicted         int64
	owdDiscarded               int64
}

// Stats is a snapshot of the hook (PacketConn.Stats): datagram counters since
// New and one PeerStats per peer address.
type Stats struct {
	// ShimSent and ShimReceived count QUIC datagrams that went with the
	// shim header (through the controller); PlainSent and PlainReceived
	// those that went without (to or from a peer without the hook, or
	// before the peer's hello arrived).
	ShimSent, ShimReceived   int64
	PlainSent, PlainReceived int64
	// FeedbackSent and FeedbackReceived count feedback datagrams.
	FeedbackSent, FeedbackReceived int64
	// HellosSent and HellosReceived count hellos and their answers.
	HellosSent, HellosReceived int64
	// QueueDrops counts quic-go datagrams dropped because a peer's queue
	// stayed full for Config.QueueWait.
	QueueDrops int64
	// Malformed counts shim datagrams dropped as undecodable or
	// impossible (feedback acknowledging what was never sent); Oversize
	// datagrams too big for quic-go's buffer; Duplicates shimmed
	// datagrams received twice (still handed to quic-go, which drops
	// them itself).
	Malformed, Oversize, Duplicates int64
	// SendErrors counts failed socket writes (the datagram is lost).
	SendErrors int64
	// SendCalls counts the sender goroutine's sendmmsg calls and
	// SendMessages the messages in them, each a lone datagram or a
	// segmented run: ShimSent / SendCalls is the batching achieved.
	SendCalls, SendMessages int64
	// PeersRefused counts datagrams of validated peers beyond
	// Config.MaxPeers while none had been idle long enough to make room;
	// PeersEvicted the validated peers forgotten to make room (silent for
	// 30 s, nothing in flight); UnvalidatedEvicted the unvalidated entries
	// (hello only, or not yet answered) that made room for newer ones.
	PeersRefused, PeersEvicted, UnvalidatedEvicted int64
	// Unauthenticated counts shim datagrams without this end's cookie for
	// their source address: spoofed, or from a hook that lost it. The
	// hook learns nothing from them; a data datagram's QUIC payload still
	// goes to quic-go, which authenticates its own packets. OutOfWindow
	// counts data datagrams with the cookie whose sequence number jumped
	// too far ahead (their payload goes to quic-go too).
	Unauthenticated, OutOfWindow int64
	// VersionMismatch counts hellos from a hook of another shim version
	// (left unanswered: both ends stay plain QUIC).
	VersionMismatch int64
	// AmplificationLimited counts replies (hello answers) not sent because
	// the address, not yet validated, had not sent a third of their size.
	AmplificationLimited int64
	// OWDDiscarded counts the one-way-delay samples of feedback that were
	// impossible (below zero, above the datagram's round trip, or below
	// the smallest so far, each beyond the clocks' uncertainty) and were
	// not given to the controller: the screen package transport's
	// Stats.OWDDiscarded counts for fresh's own connections. Per peer in
	// PeerStats.OWDDiscarded.
	OWDDiscarded int64
	Peers        []PeerStats
}

// PeerStats is one peer's state.
type PeerStats struct {
	Addr netip.AddrPort
	// Hooked says the peer has the hook and proved it receives at its
	// address (it showed this end's cookie, and told its own); until then,
	// or for good with a peer without it, quic-go's datagrams go plain and
	// the controller is not involved.
	Hooked bool
	// CC is the controller's name, Metrics its state (window, pacing
	// rate, RTT and OWD state, the delay signal in use). These and the
	// fields below are zero for an address that has not shown this end's
	// cookie: it has no controller yet.
	CC      string
	Metrics cc.Metrics
	// InFlight is the shimmed bytes not yet acknowledged or declared lost;
	// Queued the datagrams waiting for the window or pacer.
	InFlight cc.ByteCount
	Queued   int
	// SRTT and MinRTT are the shim's own round-trip estimates (feedback).
	SRTT, MinRTT time.Duration
	// Acked, Lost and SpuriousLosses count shimmed datagrams by fate
	// (a spurious loss is one acknowledged after it was declared lost,
	// while its record was still kept: behind an older datagram in flight);
	// RTOs the retransmission timeouts (no feedback for an RTO with data
	// in flight).
	Acked, Lost, SpuriousLosses, RTOs int64
	// OWDDiscarded counts this peer's impossible one-way-delay samples
	// (see Stats.OWDDiscarded).
	OWDDiscarded int64
	// ClockSynced is whether this end's offset estimate of the peer's
	// clock is trusted (it stamps the OWD samples it reports).
	ClockSynced bool
	// HookBound is how long datagrams waited in the queue (the hook's
	// window or pacer held quic-go back); QUICBound how long, with
	// datagrams in flight, the queue was empty: quic-go sent less than the
	// hook allowed (its own congestion window or pacer, flow control, or
	// the application). Their ratio says which window binds.
	HookBound, QUICBound time.Duration
}

// Stats returns a snapshot.
func (c *PacketConn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	st := Stats{
		ShimSent: s.shimSent, ShimReceived: s.shimReceived,
		PlainSent: s.plainSent, PlainReceived: s.plainReceived,
		FeedbackSent: s.feedbackSent, FeedbackReceived: s.feedbackReceived,
		HellosSent: s.hellosSent, HellosReceived: s.hellosReceived,
		QueueDrops: s.queueDrops, Malformed: s.malformed, Oversize: s.oversize,
		Duplicates: s.duplicates, SendErrors: s.sendErrors, PeersRefused: s.peersRefused,
		PeersEvicted: s.peersEvicted, UnvalidatedEvicted: s.unvalidatedEvicted,
		Unauthenticated: s.unauthenticated, OutOfWindow: s.outOfWindow, VersionMismatch: s.versionMismatch,
		AmplificationLimited: s.amplificationLimited, SendCalls: c.batchCalls.Load(), SendMessages: c.batchMsgs.Load(),
		OWDDiscarded: s.owdDiscarded,
	}
	now := c.clk.Now()
	for _, p := range c.peers {
		c.account(p, now)
		ps := PeerStats{Addr: p.addr, Hooked: p.hooked()}
		if p.validated {
			ps.CC, ps.Metrics = p.tx.ctl.Name(), p.tx.ctl.Metrics()
			ps.InFlight, ps.Queued = p.tx.inFlight(), p.queue.n
			ps.SRTT, ps.MinRTT = p.tx.tr.RTT().Smoothed(), p.tx.tr.RTT().Min()
			ps.Acked, ps.Lost, ps.SpuriousLosses, ps.RTOs = p.tx.acked, p.tx.lost, p.tx.spurious, p.tx.rtos
			ps.OWDDiscarded = p.tx.owdDiscarded
			ps.ClockSynced, ps.HookBound, ps.QUICBound = p.rx.synced, p.busy, p.idle
		}
		st.Peers = append(st.Peers, ps)
	}
	sort.Slice(st.Peers, func(i, j int) bool { return st.Peers[i].Addr.String() < st.Peers[j].Addr.String() })
	return st
}
