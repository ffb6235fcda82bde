package cc

import (
	"math"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// BBR (Bottleneck Bandwidth and Round-trip propagation time), version 1, as
// the Linux kernel ships it (net/ipv4/tcp_bbr.c since Linux 5.1, when the
// ACK-aggregation allowance was added; the algorithm is unchanged through
// the 6.x kernels). References: N. Cardwell, Y. Cheng, C. S. Gunn,
// S. Hassas Yeganeh, V. Jacobson, "BBR: Congestion-Based Congestion
// Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-
// control-00 (the BBRv1 revision); draft-cheng-iccrg-delivery-rate-
// estimation-00 for the rate samples (bbr_rate.go).
//
// # The model
//
// BBR does not take loss or delay as the signal of congestion. It builds an
// explicit model of the path from two numbers and sends to fit it:
//
//	btlBw    = windowed max of the delivery rate, over 10 round trips
//	minRTT   = min of the RTT samples, over 10 s
//	BDP      = btlBw · minRTT
//	pacing   = pacingGain · btlBw
//	cwnd     = cwndGain · BDP + ACK-aggregation allowance + send quantum
//
// The pacing rate does the work; cwnd is a cap that keeps at most about
// two BDPs in flight when the model is wrong. The gains change with the
// mode:
//
//	          |
//	          V
//	 +---> STARTUP  ----+      pacing 2/ln2, cwnd 2/ln2: double each round
//	 |        |         |      until the rate grew < 25 % in 3 rounds
//	 |        V         |
//	 |      DRAIN   ----+      pacing ln2/2: empty the queue Startup made,
//	 |        |         |      until inflight <= BDP
//	 |        V         |
//	 +---> PROBE_BW ----+      8 phases of about one minRTT each:
//	 |      ^    |      |      pacing 1.25, 0.75, 1, 1, 1, 1, 1, 1; cwnd 2
//	 |      +----+      |
//	 |                  |
//	 +---- PROBE_RTT <--+      minRTT 10 s old: cwnd 4 packets for
//	                           max(200 ms, one round), then back
//
// Leaving ProbeRTT goes to ProbeBW if Startup had found the pipe full, else
// back to Startup.
//
// # What we follow, and where we differ
//
//   - Startup's cwnd gain is 2/ln2 as in tcp_bbr.c (bbr_update_gains gives
//     Startup and Drain cwnd_gain = high_gain), not the 2 of later drafts:
//     we are checked against the kernel.
//   - The long-term bandwidth ("lt_bw") policer detection of tcp_bbr.c is
//     implemented and on by default (BBRConfig.NoLongTermBandwidth turns it
//     off): two 4–16-round intervals with ≥ 20 % loss and rates within
//     12.5 % (or 4 kbit/s) of each other mean a token-bucket policer, and
//     then the flow paces at their average rate with gain 1 for 48 rounds.
//     Cellular and ISP policers are common on IoT paths, and without it
//     ProbeBW's 1.25 phase loses a fifth of its packets to them.
//   - ACK aggregation (Linux 5.1, bbr_update_ack_aggregation): the most data
//     acknowledged beyond btlBw·elapsed within an ACK epoch, max-filtered
//     over 5–10 rounds, capped at cwnd and at 100 ms of btlBw, is added to
//     the cwnd target once the pipe is full, so that ACKs arriving in
//     bursts (Wi-Fi, cellular, delayed ACKs) do not starve the sender
//     between bursts.
//   - The send quantum: tcp_bbr.c adds 3 TSO bursts to the cwnd target
//     (bbr_quantization_budget), rounds it up to an even number of packets
//     and adds 2 more in the 1.25 phase. We have no TSO, but the session's
//     pacer also sends in bursts (of up to 2 ms), so the same budget is kept
//     with the kernel's burst size (1 ms at the pacing rate, at least 2
//     packets above 1.2 Mbit/s, else 1; at most 127).
//   - Linux estimates the packets "in the network at the earliest departure
//     time" (EDT pacing, bbr_packets_in_net_at_edt). Our pacer is the
//     session's, which the controller does not see: we take inflight as it
//     is, plus one send quantum in a phase that raises inflight.
//   - Loss recovery is RFC 6582's "recover" by packet number, as for the
//     other baselines (lossbased.go): the first loss of a packet sent after
//     the last recovery began starts recovery. In its first round BBR
//     follows packet conservation (cwnd = inflight + acknowledged, never
//     less than what is in flight), and each lost packet comes off cwnd;
//     after the first round cwnd grows by the bytes acknowledged towards
//     the target; when recovery ends the cwnd saved at its start is
//     restored. tcp_bbr.c does all of this on the ACK that reports the loss;
//     here losses are reported after the ACKs of the same frame, so the
//     deduction and the entry happen in OnLoss, with the bytes acknowledged
//     at that same instant counted as the ACK's.
//   - A retransmission timeout is Linux's TCP_CA_Loss: cwnd = 1 packet
//     (tcp_enter_loss), the cwnd before is saved and restored when an ACK of
//     a packet sent after the timeout arrives, full-pipe detection restarts
//     its count, and the timeout counts as the end of a round and a loss for
//     the long-term sampler (bbr_set_state).
//   - Floors: cwnd is never below 4 packets (bbrMinPipeCwnd), except after
//     a retransmission timeout, when it is 1 packet until the next ACK.
//     Linux may let packet conservation take cwnd to 1 or 2 packets in
//     recovery at tiny windows; we keep 4 there.
//   - Application-limited: the Controller contract has no "the application
//     has nothing to send" event, so it is inferred at each send (see
//     OnPacketSent): a packet that leaves with room in cwnd, long after the
//     pacer would have let it out (more than 2 pacing intervals + 2 ms) and
//     not right after an ACK, loss or timeout (more than 2 ms since), was
//     sent because the application wrote, not because the path let it: the
//     flow was application-limited, and the rate samples of everything now
//     in flight are marked so (draft-cheng §3.4). The limits: a pacer timer
//     that wakes more than 2 ms late marks a bulk flow app-limited for one
//     flight (harmless: app-limited samples can still raise btlBw, never
//     lower it), and an application writing exactly at the pacing rate is
//     not detected (its samples then describe its own rate, as TCP's would
//     without the tcp_rate_check_app_limited call).
//   - Units of the pacing rate: the model counts payload bytes (what
//     OnPacketSent and OnAck report), but the session's pacer spaces
//     datagrams by their size with fresh's header and frame (54 bytes more
//     on a data packet). Paced at the model's rate, a 1400-byte flow would
//     send 3.9 % below it, a larger margin than the kernel's 1 %, and never
//     fill the pipe in the gain-1 phases (less goodput and a shorter queue
//     than kernel BBR's through the TUN router; the repository's bench
//     results have the numbers). Linux paces on payload bytes, so to be the kernel's BBR the
//     rate handed out is scaled by (MSS + overhead)/MSS:
//     BBRConfig.PacketOverhead, by default DefaultBBRPacketOverhead.
//   - The ProbeBW starting phase is random in Linux (prandom_u32_max): here
//     it is drawn from a generator seeded by BBRConfig.Seed, so a simulation
//     is reproducible.
//   - min_rtt's "is_ack_delayed" exemption is moot: the session removes the
//     peer's ACK delay from the sample (RFC 9002 §5.3).
//
// Every "packet" below is one MSS of bytes; windows and inflight are bytes.

// BBR gains and constants, with the kernel's values and reasons.
const (
	// bbrHighGain is Startup's pacing and cwnd gain, 2/ln(2) ≈ 2.885: the
	// smallest gain whose pacing rate doubles every round, sending as many
	// packets per round as slow start would (paper, "Startup").
	bbrHighGain = 2 / math.Ln2
	// bbrDrainGain is Drain's pacing gain, ln(2)/2 = 1/bbrHighGain: it
	// drains the queue Startup built in about one round.
	bbrDrainGain = math.Ln2 / 2
	// bbrCwndGain is ProbeBW's cwnd gain (unitless): two BDPs, so delayed
	// and stretched ACKs do not leave the pacer without a window.
	bbrCwndGain = 2.0
	// bbrPacingMargin: Linux paces 1 % below the model's rate
	// (bbr_pacing_margin_percent) so the average rate sits a little under
	// btlBw and the bottleneck queue stays small.
	bbrPacingMargin = 0.99
	// bbrCycleLen is the number of ProbeBW phases.
	bbrCycleLen = 8
	// bbrCycleRand: the starting phase is drawn from the bbrCycleRand phases
	// other than the draining one (0.75), so flows that start together do not
	// probe together.
	bbrCycleRand = 7
	// bbrBwRounds is the btlBw filter's window in round trips: one gain
	// cycle plus 2, so the 1.25 phase's sample survives a whole cycle.
	bbrBwRounds = bbrCycleLen + 2
	// bbrMinRTTWindow is how long a minRTT sample is trusted (10 s): long
	// enough to span the queue's natural lulls, short enough to follow a
	// route change.
	bbrMinRTTWindow = 10 * time.Second
	// bbrProbeRTTDuration is the least time spent at bbrMinPipeCwnd in
	// ProbeRTT (200 ms): with the 10 s window about 2 % of the time.
	bbrProbeRTTDuration = 200 * time.Millisecond
	// bbrMinPipeCwnd is the cwnd floor and ProbeRTT's cwnd, in packets:
	// with an ACK every other packet, 4 keep two ACK-clocked pairs going.
	bbrMinPipeCwnd = 4
	// bbrFullBwThresh: Startup's rate must grow by this factor (25 %) in a
	// round for the pipe to count as not yet full.
	bbrFullBwThresh = 1.25
	// bbrFullBwCount is how many rounds without that growth mean full (3).
	bbrFullBwCount = 3
	// bbrInitialCwndPackets is the cwnd target before any RTT sample, and the
	// delivered amount (packets) under which Startup grows cwnd regardless
	// of the target (Linux's TCP_INIT_CWND, 10).
	bbrInitialCwndPackets = 10
	// bbrNominalRTT is the RTT the initial pacing rate is computed with
	// before any sample (1 ms, as Linux: fast, so the initial window is not
	// held back by a guess).
	bbrNominalRTT = time.Millisecond

	// Long-term (policer) bandwidth estimation, tcp_bbr.c's lt_* constants.

	// bbrLTIntervalMinRounds is the shortest sampling interval (4 rounds).
	bbrLTIntervalMinRounds = 4
	// bbrLTIntervalMaxRounds: an interval longer than 16 rounds is
	// discarded, too long to describe one policer state.
	bbrLTIntervalMaxRounds = 4 * bbrLTIntervalMinRounds
	// bbrLTLossThresh: an interval with lost/delivered at least 50/256
	// (≈ 20 %) is "lossy", as a policer's drops are.
	bbrLTLossThresh = 50.0 / 256
	// bbrLTBwRatio: two intervals' rates within 1/8 of each other are
	// "consistent", a policer's fixed token rate.
	bbrLTBwRatio = 1.0 / 8
	// bbrLTBwDiff: ... or within 4 kbit/s of each other.
	bbrLTBwDiff = 4 * KbitPerSecond
	// bbrLTBwMaxRounds is how long the policed rate is used before probing
	// again (48 rounds).
	bbrLTBwMaxRounds = 48

	// ACK aggregation, tcp_bbr.c's extra_acked_* constants.

	// bbrExtraAckedGain scales the aggregation allowance (1).
	bbrExtraAckedGain = 1.0
	// bbrExtraAckedWindowRounds: each of the filter's two slots covers 5
	// rounds, so the allowance is the max of the last 5–10 rounds.
	bbrExtraAckedWindowRounds = 5
	// bbrExtraAckedMax caps the allowance at 100 ms of btlBw: aggregation
	// beyond that is a stall, not a burst to provision for.
	bbrExtraAckedMax = 100 * time.Millisecond
	// bbrAckEpochResetPackets: an ACK epoch longer than 2^20 packets is
	// restarted (Linux's field width; an epoch that old says nothing).
	bbrAckEpochResetPackets = 1 << 20

	// Send quantum (tcp_bbr.c's TSO budget).

	// bbrQuantumTime is the burst Linux sizes TSO segments for: the
	// pacing rate >> sk_pacing_shift (10), about 1 ms of sending.
	bbrQuantumTime = time.Second / 1024
	// bbrMinQuantumRate: below 1.2 Mbit/s the burst is 1 packet, above 2.
	bbrMinQuantumRate = 1200 * KbitPerSecond
	// bbrMaxQuantumPackets: at most 127 packets per burst (Linux's u7).
	bbrMaxQuantumPackets = 127
	// bbrQuantumBursts is how many bursts the budget holds: one in the
	// sender's queue, one being sent, one in the receiver's ACK batching.
	bbrQuantumBursts = 3

	// bbrCwndClamp caps cwnd at 2^32 bytes (Linux's snd_cwnd_clamp plays
	// this role): a nonsense sample must not drive the window to infinity.
	bbrCwndClamp ByteCount = 1 << 32

	// Application-limited inference (see the file comment).

	// bbrAppLimitedSlack is the time after an ACK, loss or timeout within
	// which a send counts as triggered by it, and the lateness allowed to
	// the pacer's timer (2 ms: the session's pacer burst allowance, and
	// above a user-space timer's usual lateness).
	bbrAppLimitedSlack = 2 * time.Millisecond
)

// bbrPacingGainCycle is ProbeBW's pacing gain per phase: probe for more
// bandwidth, drain what the probe queued, then cruise at the estimate.
var bbrPacingGainCycle = [bbrCycleLen]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

// Metrics.Mode names of BBR.
const (
	ModeStartup  = "startup"
	ModeDrain    = "drain"
	ModeProbeBW  = "probe_bw"
	ModeProbeRTT = "probe_rtt"
)

type bbrMode uint8

const (
	bbrStartup bbrMode = iota
	bbrDrain
	bbrProbeBW
	bbrProbeRTT
)

func (m bbrMode) String() string {
	switch m {
	case bbrDrain:
		return ModeDrain
	case bbrProbeBW:
		return ModeProbeBW
	case bbrProbeRTT:
		return ModeProbeRTT
	default:
		return ModeStartup
	}
}

// bbrCAState is Linux's congestion-avoidance state as far as BBR reads it.
type bbrCAState uint8

const (
	bbrOpen     bbrCAState = iota // no loss outstanding
	bbrRecovery                   // fast recovery (RFC 6582)
	bbrLoss                       // after a retransmission timeout
)

// DefaultBBRPacketOverhead is the bytes per data packet that fresh's pacer
// counts beyond the payload: the 28-byte header and the 26-byte data frame
// (the session paces datagrams by size without IP/UDP).
const DefaultBBRPacketOverhead ByteCount = 54

// BBRConfig configures BBR. The zero value is tcp_bbr.c's BBR with
// DefaultMSS, a 10-packet initial window, seed 0 and fresh's packet
// overhead.
type BBRConfig struct {
	// MSS is the maximum segment size in bytes; <= 0 selects DefaultMSS.
	MSS ByteCount
	// InitialWindow is the initial cwnd in bytes; <= 0 selects
	// InitialWindowPackets·MSS. Never below 4 packets.
	InitialWindow ByteCount
	// Seed seeds the choice of ProbeBW's starting phase (Linux draws it at
	// random); the same seed gives the same phases.
	Seed uint64
	// NoLongTermBandwidth turns off the policer detection (lt_bw).
	NoLongTermBandwidth bool
	// NoAckAggregation turns off the ACK-aggregation cwnd allowance.
	NoAckAggregation bool
	// PacketOverhead is the bytes per packet the pacer counts beyond the
	// payload OnPacketSent reports; the pacing rate is scaled by
	// (MSS + PacketOverhead)/MSS so that payload leaves at the model's rate.
	// 0 selects DefaultBBRPacketOverhead; negative means none (a pacer that
	// counts payload only).
	PacketOverhead ByteCount
}

// BBR is BBR v1 congestion control; see the comment at the top of bbr.go.
type BBR struct {
	mss        ByteCount
	cwnd       ByteCount
	pacingRate Bandwidth
	ssthresh   ByteCount // set on entering Drain, for Metrics; 0 = infinite
	inFlight   ByteCount // bytes outstanding, as the driver reported them
	rtt        RTTStats
	rate       rateSampler
	rng        uint64 // splitmix64 state

	ltEnabled, aggEnabled bool
	overhead              ByteCount // PacketOverhead, resolved

	started bool // an event has been seen (initialises the time stamps)

	mode               bbrMode
	btlBw              maxFilter
	roundCount         uint64
	nextRoundDelivered ByteCount
	roundStart         bool

	minRTT            time.Duration // 0 = no sample yet
	minRTTStamp       clock.Mono
	probeRTTDone      clock.Mono
	probeRTTDoneSet   bool
	probeRTTRoundDone bool
	idleRestart       bool
	hasSeenRTT        bool

	pacingGain, cwndGain float64
	fullBwReached        bool
	fullBw               Bandwidth
	fullBwCount          int
	cycleIndex           int
	cycleStamp           clock.Mono

	// Recovery (RFC 6582 recover by packet number, see lossbased.go).
	largestSent        PacketNumber
	recover            PacketNumber
	state              bbrCAState
	packetConservation bool
	priorCwnd          ByteCount
	pendingLoss        ByteCount // bytes lost since the last ACK (the kernel's rs->losses)

	// Event times for the application-limited inference.
	lastSend      clock.Mono
	lastSendBytes ByteCount
	sentAny       bool
	lastEvent     clock.Mono // last ACK, loss or timeout
	lastAck       clock.Mono
	ackedAtLast   ByteCount // bytes acknowledged at lastAck (the frame being processed)

	// Long-term bandwidth (policer) sampling.
	ltIsSampling    bool
	ltUseBw         bool
	ltRoundCount    int
	ltBw            Bandwidth
	ltLastDelivered ByteCount
	ltLastLost      ByteCount
	ltLastStamp     clock.Mono

	// ACK aggregation.
	ackEpochStamp     clock.Mono
	ackEpochAcked     ByteCount
	extraAcked        [2]ByteCount
	extraAckedRounds  int
	extraAckedWinSlot int
}

var _ Controller = (*BBR)(nil)

func init() {
	Register("bbr", func(mss ByteCount) Controller { return NewBBR(BBRConfig{MSS: mss}) })
}

// NewBBR returns a BBR controller in Startup.
func NewBBR(cfg BBRConfig) *BBR {
	mss, iw := sizeDefaults(cfg.MSS, cfg.InitialWindow)
	overhead := cfg.PacketOverhead
	switch {
	case overhead == 0:
		overhead = DefaultBBRPacketOverhead
	case overhead < 0:
		overhead = 0
	}
	b := &BBR{
		mss:         mss,
		overhead:    overhead,
		cwnd:        min(max(iw, bbrMinPipeCwnd*mss), bbrCwndClamp),
		rate:        newRateSampler(),
		rng:         cfg.Seed,
		ltEnabled:   !cfg.NoLongTermBandwidth,
		aggEnabled:  !cfg.NoAckAggregation,
		largestSent: InvalidPacketNumber,
		recover:     InvalidPacketNumber,
		pacingGain:  bbrHighGain,
		cwndGain:    bbrHighGain,
	}
	b.initPacingRate()
	return b
}

// Name returns "bbr".
func (b *BBR) Name() string { return "bbr" }

// start initialises the time stamps at the first event (Linux does it in
// bbr_init, at connection start; a sans-I/O controller first learns the time
// with its first event).
func (b *BBR) start(now clock.Mono) {
	if b.started {
		return
	}
	b.started = true
	b.minRTTStamp = now
	b.ackEpochStamp = now
	b.ltLastStamp = now
}

// random returns a pseudo-random number in [0, n) (splitmix64).
func (b *BBR) random(n int) int {
	b.rng += 0x9e3779b97f4a7c15
	z := b.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % uint64(n))
}

// OnPacketSent records the packet for rate sampling and infers whether the
// flow is application-limited (see the file comment).
func (b *BBR) OnPacketSent(now clock.Mono, pn PacketNumber, bytes ByteCount, bytesInFlight ByteCount) {
	b.start(now)
	prior := max(bytesInFlight-bytes, 0)
	if b.sentAny && prior < b.cwnd {
		gap := time.Duration(0)
		if b.pacingRate > 0 {
			gap = time.Duration(float64(b.lastSendBytes+b.overhead) * 8 / float64(b.pacingRate) * float64(time.Second))
		}
		if now.Sub(b.lastSend) > 2*gap+bbrAppLimitedSlack && now.Sub(b.lastEvent) > bbrAppLimitedSlack {
			b.rate.markAppLimited(max(bytesInFlight, 0))
		}
	}
	if prior == 0 && b.sentAny && b.rate.appLimited != 0 {
		b.onRestartFromIdle(now)
	}
	b.rate.onSent(now, pn, prior)
	b.inFlight = max(bytesInFlight, 0)
	b.largestSent = max(b.largestSent, pn)
	b.lastSend, b.lastSendBytes, b.sentAny = now, max(bytes, 0), true
}

// onRestartFromIdle is Linux's CA_EVENT_TX_START for an app-limited flow:
// the aggregation epoch restarts, ProbeBW paces at btlBw (no reason to
// probe with a flow that has nothing to send) and ProbeRTT may be over.
func (b *BBR) onRestartFromIdle(now clock.Mono) {
	b.idleRestart = true
	b.ackEpochStamp = now
	b.ackEpochAcked = 0
	switch b.mode {
	case bbrProbeBW:
		b.setPacingRate(b.bw(), 1)
	case bbrProbeRTT:
		b.checkProbeRTTDone(now)
	}
}

// OnAck runs BBR's per-ACK update (bbr_main): the rate sample, the model,
// the pacing rate, then cwnd.
func (b *BBR) OnAck(now clock.Mono, ack AckSample) {
	b.start(now)
	b.lastEvent = now
	acked := max(ack.Bytes, 0)
	if now == b.lastAck {
		b.ackedAtLast += acked
	} else {
		b.lastAck, b.ackedAtLast = now, acked
	}
	b.rtt.Update(ack.RTT)
	b.inFlight = max(b.inFlight-acked, 0)
	rs := b.rate.onAck(now, ack.PacketNumber, acked, b.rtt.Min())
	losses := b.pendingLoss
	b.pendingLoss = 0
	exitRecovery := b.state != bbrOpen && ack.PacketNumber > b.recover

	b.updateModel(now, rs, ack, acked, losses)
	b.setPacingRate(b.bw(), b.pacingGain)
	b.setCwnd(acked, exitRecovery)
}

// updateModel is bbr_update_model: bandwidth, aggregation, gain cycle, full
// pipe, drain, min RTT and the gains, in the kernel's order.
func (b *BBR) updateModel(now clock.Mono, rs rateSample, ack AckSample, acked, losses ByteCount) {
	b.updateBw(rs, losses)
	b.updateAckAggregation(rs, acked)
	if b.mode == bbrProbeBW && b.isNextCyclePhase(ack.PriorInFlight, losses) {
		b.advanceCyclePhase()
	}
	b.checkFullBwReached(rs)
	b.checkDrain()
	b.updateMinRTT(now, ack.RTT, acked)
	b.updateGains()
}

// bw is the bandwidth the model uses: the policed rate if one was found,
// else the windowed max.
func (b *BBR) bw() Bandwidth {
	if b.ltUseBw {
		return b.ltBw
	}
	return b.btlBw.get()
}

// updateBw counts rounds (a round ends when a packet sent after the
// previous round ended is acknowledged, paper "Rounds") and folds the rate
// sample into the btlBw filter. App-limited samples may raise btlBw, never
// lower it: they measure the application, not the path.
func (b *BBR) updateBw(rs rateSample, losses ByteCount) {
	b.roundStart = false
	if !rs.valid {
		return
	}
	if rs.priorDelivered >= b.nextRoundDelivered {
		b.nextRoundDelivered = b.rate.delivered
		b.roundCount++
		b.roundStart = true
		b.packetConservation = false
	}
	b.ltSample(rs.isAppLimited, losses)
	if !rs.isAppLimited || rs.deliveryRate >= b.btlBw.get() {
		b.btlBw.update(bbrBwRounds, b.roundCount, rs.deliveryRate)
	}
}

// updateAckAggregation estimates how much more data the ACKs of the current
// epoch acknowledged than btlBw could have delivered in its time, the
// burstiness of the ACK stream (Linux 5.1, bbr_update_ack_aggregation).
func (b *BBR) updateAckAggregation(rs rateSample, acked ByteCount) {
	if !b.aggEnabled || acked <= 0 || !rs.valid {
		return
	}
	if b.roundStart {
		b.extraAckedRounds = min(b.extraAckedRounds+1, 31)
		if b.extraAckedRounds >= bbrExtraAckedWindowRounds {
			b.extraAckedRounds = 0
			b.extraAckedWinSlot ^= 1
			b.extraAcked[b.extraAckedWinSlot] = 0
		}
	}
	epoch := b.rate.deliveredTime.Sub(b.ackEpochStamp)
	expected := bytesAt(b.bw(), epoch)
	// ACKs slower than btlBw end the epoch: the aggregate is what arrives
	// faster than the path's rate, counted from the last time ACKs fell
	// behind it.
	if b.ackEpochAcked <= expected || b.ackEpochAcked+acked >= bbrAckEpochResetPackets*b.mss {
		b.ackEpochAcked = 0
		b.ackEpochStamp = b.rate.deliveredTime
		expected = 0
	}
	b.ackEpochAcked += acked
	extra := min(b.ackEpochAcked-expected, b.cwnd)
	if extra > b.extraAcked[b.extraAckedWinSlot] {
		b.extraAcked[b.extraAckedWinSlot] = extra
	}
}

// isNextCyclePhase: a phase lasts one minRTT; the 1.25 phase also waits
// until inflight reached 1.25·BDP (or a loss says it will not fit), and the
// 0.75 phase ends early once inflight is down to the BDP.
func (b *BBR) isNextCyclePhase(priorInFlight, losses ByteCount) bool {
	fullLength := b.rate.deliveredTime.Sub(b.cycleStamp) > b.minRTT
	if b.pacingGain == 1 {
		return fullLength
	}
	inflight := max(priorInFlight, 0)
	bw := b.btlBw.get()
	if b.pacingGain > 1 {
		inflight += b.sendQuantum() * b.mss // the next burst raises it
		return fullLength && (losses > 0 || inflight >= b.inflightTarget(bw, b.pacingGain))
	}
	return fullLength || inflight <= b.inflightTarget(bw, 1)
}

func (b *BBR) advanceCyclePhase() {
	b.cycleIndex = (b.cycleIndex + 1) % bbrCycleLen
	b.cycleStamp = b.rate.deliveredTime
}

// enterProbeBW starts the gain cycle at a random phase other than 0.75
// (bbr_reset_probe_bw_mode: index 7 − rand(7), then advanced by one).
func (b *BBR) enterProbeBW() {
	b.mode = bbrProbeBW
	b.cycleIndex = bbrCycleLen - 1 - b.random(bbrCycleRand)
	b.advanceCyclePhase()
}

// resetMode leaves ProbeRTT: to ProbeBW if the pipe was found full, else
// back to Startup.
func (b *BBR) resetMode() {
	if b.fullBwReached {
		b.enterProbeBW()
	} else {
		b.mode = bbrStartup
	}
}

// checkFullBwReached: once per round, with a sample that was not
// app-limited, Startup's pipe is full when btlBw grew less than 25 % for 3
// rounds in a row (paper, "Startup").
func (b *BBR) checkFullBwReached(rs rateSample) {
	if b.fullBwReached || !b.roundStart || rs.isAppLimited {
		return
	}
	if float64(b.btlBw.get()) >= float64(b.fullBw)*bbrFullBwThresh {
		b.fullBw = b.btlBw.get()
		b.fullBwCount = 0
		return
	}
	b.fullBwCount++
	b.fullBwReached = b.fullBwCount >= bbrFullBwCount
}

// checkDrain enters Drain when the pipe is full and leaves it for ProbeBW
// once inflight is down to the BDP target.
func (b *BBR) checkDrain() {
	if b.mode == bbrStartup && b.fullBwReached {
		b.mode = bbrDrain
		b.ssthresh = b.inflightTarget(b.btlBw.get(), 1)
	}
	if b.mode == bbrDrain && b.inFlight <= b.inflightTarget(b.btlBw.get(), 1) {
		b.enterProbeBW()
	}
}

// updateMinRTT keeps the 10 s minimum and runs ProbeRTT: when the minimum is
// 10 s old, cwnd drops to 4 packets until they have been in flight for
// max(200 ms, one round), which drains the queue so a fresh minimum can be
// measured (paper, "ProbeRTT").
func (b *BBR) updateMinRTT(now clock.Mono, rtt time.Duration, acked ByteCount) {
	expired := now.Sub(b.minRTTStamp) > bbrMinRTTWindow
	if rtt > 0 && (b.minRTT == 0 || rtt <= b.minRTT || expired) {
		b.minRTT = rtt
		b.minRTTStamp = now
	}
	if expired && !b.idleRestart && b.mode != bbrProbeRTT {
		b.mode = bbrProbeRTT
		b.saveCwnd()
		b.probeRTTDoneSet = false
	}
	if b.mode == bbrProbeRTT {
		// The low rate of ProbeRTT is not the path's: mark it app-limited.
		b.rate.markAppLimited(b.inFlight)
		if !b.probeRTTDoneSet && b.inFlight <= bbrMinPipeCwnd*b.mss {
			b.probeRTTDone = now.Add(bbrProbeRTTDuration)
			b.probeRTTDoneSet = true
			b.probeRTTRoundDone = false
			b.nextRoundDelivered = b.rate.delivered
		} else if b.probeRTTDoneSet {
			if b.roundStart {
				b.probeRTTRoundDone = true
			}
			if b.probeRTTRoundDone {
				b.checkProbeRTTDone(now)
			}
		}
	}
	if acked > 0 {
		b.idleRestart = false
	}
}

// checkProbeRTTDone ends ProbeRTT after its 200 ms (and its round): the
// minimum is fresh, cwnd comes back.
func (b *BBR) checkProbeRTTDone(now clock.Mono) {
	if !b.probeRTTDoneSet || !now.After(b.probeRTTDone) {
		return
	}
	b.minRTTStamp = now
	b.cwnd = max(b.cwnd, b.priorCwnd)
	b.resetMode()
}

func (b *BBR) updateGains() {
	switch b.mode {
	case bbrStartup:
		b.pacingGain, b.cwndGain = bbrHighGain, bbrHighGain
	case bbrDrain:
		b.pacingGain, b.cwndGain = bbrDrainGain, bbrHighGain
	case bbrProbeBW:
		b.pacingGain = bbrPacingGainCycle[b.cycleIndex]
		if b.ltUseBw {
			b.pacingGain = 1 // a policer's rate is not worth probing
		}
		b.cwndGain = bbrCwndGain
	case bbrProbeRTT:
		b.pacingGain, b.cwndGain = 1, 1
	}
}

// saveCwnd remembers the last cwnd that was good, to restore after
// recovery or ProbeRTT; during those cwnd is cut, so keep the larger.
func (b *BBR) saveCwnd() {
	if b.state == bbrOpen && b.mode != bbrProbeRTT {
		b.priorCwnd = b.cwnd
	} else {
		b.priorCwnd = max(b.priorCwnd, b.cwnd)
	}
}

// bytesAt is the data bw delivers in d.
func bytesAt(bw Bandwidth, d time.Duration) ByteCount {
	if d <= 0 {
		return 0
	}
	v := bw.BytesPerSecond() * d.Seconds()
	if !(v < float64(bbrCwndClamp)) {
		return bbrCwndClamp
	}
	return ByteCount(v)
}

// bdp is ceil(gain·bw·minRTT) rounded up to whole packets (rounding up
// avoids a feedback loop that shrinks the estimate), or the initial window
// before any RTT sample.
func (b *BBR) bdp(bw Bandwidth, gain float64) ByteCount {
	if b.minRTT == 0 {
		return bbrInitialCwndPackets * b.mss
	}
	v := gain * bw.BytesPerSecond() * b.minRTT.Seconds()
	if !(v < float64(bbrCwndClamp)) {
		return bbrCwndClamp
	}
	pkts := ByteCount(math.Ceil(v / float64(b.mss)))
	return pkts * b.mss
}

// sendQuantum is the burst size in packets the cwnd budget provisions for
// (Linux's bbr_tso_segs_goal): about 1 ms at the pacing rate.
func (b *BBR) sendQuantum() ByteCount {
	minSegs := ByteCount(1)
	if b.pacingRate >= bbrMinQuantumRate {
		minSegs = 2
	}
	segs := bytesAt(b.pacingRate, bbrQuantumTime) / b.mss
	return min(max(segs, minSegs), bbrMaxQuantumPackets)
}

// quantizationBudget adds 3 bursts to a cwnd target, rounds it up to an
// even number of packets (fewer delayed ACKs held back at the receiver) and
// adds 2 packets in the 1.25 phase so it raises inflight even at tiny BDPs.
func (b *BBR) quantizationBudget(cwnd ByteCount) ByteCount {
	pkts := (cwnd + b.mss - 1) / b.mss
	pkts += bbrQuantumBursts * b.sendQuantum()
	pkts = (pkts + 1) &^ 1
	if b.mode == bbrProbeBW && b.cycleIndex == 0 {
		pkts += 2
	}
	return min(pkts*b.mss, bbrCwndClamp)
}

// inflightTarget is the BDP at gain plus the send-quantum budget.
func (b *BBR) inflightTarget(bw Bandwidth, gain float64) ByteCount {
	return b.quantizationBudget(b.bdp(bw, gain))
}

// ackAggregationCwnd is the ACK-aggregation allowance, once the pipe is
// full: the filtered extra acknowledged, capped at 100 ms of bandwidth.
func (b *BBR) ackAggregationCwnd() ByteCount {
	if !b.aggEnabled || !b.fullBwReached {
		return 0
	}
	extra := ByteCount(bbrExtraAckedGain * float64(max(b.extraAcked[0], b.extraAcked[1])))
	return min(extra, bytesAt(b.bw(), bbrExtraAckedMax))
}

// initPacingRate is high_gain·cwnd/RTT, with SRTT or, before any sample,
// the nominal 1 ms.
func (b *BBR) initPacingRate() {
	rtt := bbrNominalRTT
	if s := b.rtt.Smoothed(); s > 0 {
		rtt = s
		b.hasSeenRTT = true
	}
	b.pacingRate = b.pacingOf(rateOf(b.cwnd, rtt), bbrHighGain)
}

// pacingOf is bw·gain less the 1 % margin, in the pacer's bytes (payload
// plus the per-packet overhead).
func (b *BBR) pacingOf(bw Bandwidth, gain float64) Bandwidth {
	v := float64(bw) * gain * bbrPacingMargin * float64(b.mss+b.overhead) / float64(b.mss)
	if !(v < float64(maxSampleRate)) {
		return maxSampleRate
	}
	// At least 1 bit/s: 0 would mean "do not pace" to the session.
	return max(Bandwidth(v), 1)
}

// setPacingRate paces at gain·bw. Until the pipe is full the rate only
// rises, so a low early sample does not slow Startup down.
func (b *BBR) setPacingRate(bw Bandwidth, gain float64) {
	if !b.hasSeenRTT && b.rtt.Smoothed() > 0 {
		b.initPacingRate()
	}
	r := b.pacingOf(bw, gain)
	if b.fullBwReached || r > b.pacingRate {
		b.pacingRate = r
	}
}

// setCwnd is bbr_set_cwnd: recovery's conservation and restore first, then
// towards the target: grow by the bytes acknowledged, and once the pipe is
// full never above gain·BDP + aggregation + quantum. ProbeRTT caps it at 4
// packets.
func (b *BBR) setCwnd(acked ByteCount, exitRecovery bool) {
	floor := bbrMinPipeCwnd * b.mss
	if acked > 0 {
		if exitRecovery {
			// Recovery (or the timeout's loss state) is over: restore the
			// cwnd it started with.
			b.cwnd = max(b.cwnd, b.priorCwnd)
			b.packetConservation = false
			b.state = bbrOpen
		}
		if b.packetConservation {
			// First round of recovery: send one packet per packet
			// acknowledged (Jacobson's packet conservation).
			b.cwnd = max(b.cwnd, b.inFlight+acked, floor)
		} else {
			target := b.bdp(b.bw(), b.cwndGain) + b.ackAggregationCwnd()
			target = b.quantizationBudget(target)
			switch {
			case b.fullBwReached:
				b.cwnd = min(b.cwnd+acked, target)
			case b.cwnd < target || b.rate.delivered < bbrInitialCwndPackets*b.mss:
				b.cwnd += acked
			}
			b.cwnd = max(b.cwnd, floor)
		}
	}
	b.cwnd = min(b.cwnd, bbrCwndClamp)
	if b.mode == bbrProbeRTT {
		b.cwnd = min(b.cwnd, floor)
	}
}

// ltSample is bbr_lt_bw_sampling: find a token-bucket policer from two
// lossy intervals at a consistent rate ("An Internet-Wide Analysis of
// Traffic Policing", SIGCOMM 2016, motivates it), and use its rate for 48
// rounds.
func (b *BBR) ltSample(appLimited bool, losses ByteCount) {
	if !b.ltEnabled {
		return
	}
	if b.ltUseBw {
		if b.mode == bbrProbeBW && b.roundStart {
			b.ltRoundCount++
			if b.ltRoundCount >= bbrLTBwMaxRounds {
				b.resetLT()
				b.enterProbeBW()
			}
		}
		return
	}
	// Start at the first loss: by then a policer's bucket is empty and the
	// rate measured is its token rate, not the burst before.
	if !b.ltIsSampling {
		if losses == 0 {
			return
		}
		b.resetLTInterval()
		b.ltIsSampling = true
	}
	if appLimited {
		b.resetLT() // an app-limited interval underestimates the rate
		return
	}
	if b.roundStart {
		b.ltRoundCount++
	}
	if b.ltRoundCount < bbrLTIntervalMinRounds {
		return
	}
	if b.ltRoundCount > bbrLTIntervalMaxRounds {
		b.resetLT()
		return
	}
	// End the interval at a loss, when the tokens ran out.
	if losses == 0 {
		return
	}
	lost := b.rate.lost - b.ltLastLost
	delivered := b.rate.delivered - b.ltLastDelivered
	if delivered <= 0 || float64(lost) < bbrLTLossThresh*float64(delivered) {
		return
	}
	d := b.rate.deliveredTime.Sub(b.ltLastStamp)
	if d < time.Millisecond {
		return
	}
	b.ltIntervalDone(rateOf(delivered, d))
}

// ltIntervalDone compares the finished interval's rate with the previous
// one's: consistent means policed.
func (b *BBR) ltIntervalDone(bw Bandwidth) {
	if b.ltBw > 0 {
		diff := max(bw, b.ltBw) - min(bw, b.ltBw)
		if float64(diff) <= bbrLTBwRatio*float64(b.ltBw) || diff <= bbrLTBwDiff {
			b.ltBw = (bw + b.ltBw) / 2
			b.ltUseBw = true
			b.pacingGain = 1
			b.ltRoundCount = 0
			return
		}
	}
	b.ltBw = bw
	b.resetLTInterval()
}

func (b *BBR) resetLTInterval() {
	b.ltLastStamp = b.rate.deliveredTime
	b.ltLastDelivered = b.rate.delivered
	b.ltLastLost = b.rate.lost
	b.ltRoundCount = 0
}

func (b *BBR) resetLT() {
	b.ltBw = 0
	b.ltUseBw = false
	b.ltIsSampling = false
	b.resetLTInterval()
}

// OnLoss takes the lost packet off cwnd and, for the first loss of a packet
// sent after the last recovery began, enters recovery: the cwnd is saved
// and set to what is in flight plus what was just acknowledged (packet
// conservation for the first round, which starts now).
func (b *BBR) OnLoss(now clock.Mono, loss LossEvent) {
	b.start(now)
	b.lastEvent = now
	bytes := max(loss.Bytes, 0)
	b.rate.onLost(loss.PacketNumber, bytes)
	b.inFlight = max(b.inFlight-bytes, 0)
	b.pendingLoss += bytes
	newEvent := b.state == bbrOpen && loss.PacketNumber > b.recover
	if newEvent {
		b.saveCwnd() // before the cut (Linux: bbr_ssthresh at tcp_enter_recovery)
	}
	floor := min(b.cwnd, bbrMinPipeCwnd*b.mss)
	b.cwnd = max(b.cwnd-bytes, floor)
	if !newEvent {
		return
	}
	b.state = bbrRecovery
	b.recover = max(b.largestSent, loss.PacketNumber)
	b.packetConservation = true
	b.nextRoundDelivered = b.rate.delivered // the first round starts now
	acked := ByteCount(0)
	if now == b.lastAck {
		acked = b.ackedAtLast
	}
	b.cwnd = max(b.inFlight+acked, bbrMinPipeCwnd*b.mss)
	if b.mode == bbrProbeRTT {
		b.cwnd = min(b.cwnd, bbrMinPipeCwnd*b.mss)
	}
}

// OnRetransmissionTimeout is Linux's TCP_CA_Loss for BBR: cwnd 1 packet
// until the next ACK, the cwnd before saved for when an ACK of a packet sent
// after the timeout arrives; full-pipe detection restarts its count; the
// timeout ends a round and is a loss for the long-term sampler.
func (b *BBR) OnRetransmissionTimeout(now clock.Mono) {
	b.start(now)
	b.lastEvent = now
	b.saveCwnd()
	b.state = bbrLoss
	b.recover = b.largestSent
	b.packetConservation = false
	b.cwnd = b.mss
	b.fullBw = 0
	b.roundStart = true
	b.ltSample(false, max(b.pendingLoss, 1))
}

// Window is cwnd in bytes.
func (b *BBR) Window() ByteCount { return b.cwnd }

// PacingRate is the model's rate times the mode's gain (1 % under).
func (b *BBR) PacingRate() Bandwidth { return b.pacingRate }

// CanSend reports whether bytesInFlight is below cwnd.
func (b *BBR) CanSend(bytesInFlight ByteCount) bool { return bytesInFlight < b.cwnd }

// BtlBw is the bandwidth estimate in use (the policed rate if one was
// found, else the 10-round max of the delivery rate).
func (b *BBR) BtlBw() Bandwidth { return b.bw() }

// Metrics reports the mode ("startup", "drain", "probe_bw", "probe_rtt"),
// cwnd, pacing rate, the 10 s minRTT and SRTT.
func (b *BBR) Metrics() Metrics {
	signal := SignalNone
	if b.minRTT > 0 {
		signal = SignalRTT
	}
	return Metrics{
		Window:      b.cwnd,
		Ssthresh:    b.ssthresh,
		PacingRate:  b.pacingRate,
		InSlowStart: b.mode == bbrStartup,
		InRecovery:  b.state != bbrOpen,
		SRTT:        b.rtt.Smoothed(),
		MinRTT:      b.minRTT,
		Signal:      signal,
		Mode:        b.mode.String(),
	}
}
