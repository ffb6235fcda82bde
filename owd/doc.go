// Package owd implements the one-way-delay congestion controller of
// "OWD-based congestion control for IoT" (seeds/owd-congestion-control-iot.txt,
// §3–5, Eq. 1, 2, 7) as resolved by fresh's SPEC §1.
//
// # Pieces
//
//   - Estimator (receiver side): OWD = PRtime − PStime + offset, offset being
//     the receiver's estimate of sender − receiver clock (package clock).
//     One sample per acknowledged packet travels back on the ACK.
//   - Analyzer (sender side): OWDmin over a LEDBAT-style bucket history
//     (RFC 6817 §4.4; default 10 × 1 min), OWDcur = min of the last 4
//     samples, OWDv = (OWDcur − OWDmin)/OWDmin (Eq. 1) with OWDmin floored at
//     1 ms, and the threshold μ = max(μ_floor, β·OWDv_max).
//   - Controller: the window. New gives the default "owd" (the Eq. 7 rule,
//     chosen by benchmark, see below), NewEq2 the paper's Eq. 2 ("owd-eq2"),
//     NewEq7 the Eq. 7 rule under its own name ("owd-eq7"). All satisfy
//     cc.Controller and register themselves with cc.Register.
//
// # State diagram
//
//	             OWD queueing > clamp(OWDmin/8, 4, 16 ms)
//	             or cwnd ≥ ssthresh or loss
//	┌──────────┐ ─────────────────────────────────▶ ┌────────────────────┐
//	│slow start│                                    │congestion avoidance│
//	└──────────┘ ◀──────────────────────────────────└────────────────────┘
//	     ▲                                              │   ▲
//	     │                                          loss│   │ACK above
//	     │  RTO                                         ▼   │recover point
//	     │                                           ┌────────┐
//	     └────────────────── RTO ─────────────────── │recovery│
//	                                                 └────────┘
//
// In congestion avoidance each acknowledged packet applies Eq. 2
// ("owd-eq2"):
//
//	OWDv > 2μ      cwnd −= 1/cwnd
//	μ < OWDv ≤ 2μ  cwnd unchanged
//	OWDv ≤ μ       cwnd += 1/cwnd
//
// or the normalised Eq. 7 ("owd", "owd-eq7"):
//
//	OWDv > μ       cwnd += (1 − D/d)/(D/d)²   (D = OWDcur, d = OWDmin)
//	OWDv ≤ μ       cwnd += 1/cwnd
//
// A base-delay probe (below) pins the window to 2 packets for 2 SRTT now
// and then, from congestion avoidance, and then restores it.
//
// (packets; the implementation counts bytes, MSS-scaled, with a float window
// so the small steps are not truncated away). The window never goes below 2
// packets.
//
// # Interpretations chosen (the paper is vague here)
//
//   - μ: SPEC §1 defines μ = max(μ_floor, β·OWDv_max), β = 0.5. μ_floor is
//     given as a delay, max(MuFloorDelay = 5 ms (the CoDel target),
//     JitterGain·J) with J the RFC 3550 interarrival jitter of the samples,
//     converted to OWDv units with the current OWDmin: μ never means less
//     than 5 ms of queueing, nor less than the path's own delay noise (on a
//     path with 0–10 ms of random per-packet delay, owd held 79 % of the
//     link without the jitter term and 96 % with it). The slow-start exit
//     threshold is raised to the same noise floor. OWDv_max is seeded at every slow-start exit with
//     the largest OWDv seen during that slow start ("measured in slow
//     start"), then "continuously updated": every sample in congestion
//     avoidance may raise it, and it decays exponentially with a 10 s time
//     constant so old peaks fade. A sample is judged against μ *before* it
//     updates OWDv_max; otherwise a new maximum could never be "> 2μ".
//   - Slow start: cwnd += acked bytes (RFC 5681). The early exit (on by
//     default) uses HyStart++'s threshold clamp(base/8, 4 ms, 16 ms)
//     (RFC 9406 §4.2) on one-way queueing delay, once OWDcur is a filtered
//     value (4 samples).
//   - Eq. 7: normalised by d_s = OWDmin as SPEC §1 requires:
//     Δw = (1 − D/d)/(D/d)² per ACK while OWDv > μ, Eq. 2's +1/cwnd
//     otherwise. SPEC asks to keep whichever wins as the default. Measured
//     side by side in the simulator (bench/RESULTS.md), Eq. 7 won: four
//     staggered flows reach Jain 1.00 (Eq. 2: 0.84, since additive
//     decrease never equalises windows), p95 queueing is lower on every
//     path, goodput under 2 % loss is higher; Eq. 2 keeps 2–3 % more
//     utilisation on clean paths. So "owd" is Eq. 7 and Eq. 2 stays
//     available as "owd-eq2".
//   - Loss differentiation: a loss while OWDv ≤ μ is non-congestive and
//     costs ×0.9 (NonCongestiveLossFactor; 1 = no reduction); otherwise the
//     window halves. Either way ssthresh := cwnd and the controller enters
//     recovery: losses of packets sent before the episode began do not reduce
//     again, partial ACKs do not grow the window, an ACK of a packet sent
//     after the loss ends it (RFC 6582's recover point, by packet number:
//     numbers are never reused, so no retransmission ambiguity exists).
//   - RTT fallback: an OWD sample is trusted if the ACK says ClockSynced and
//     0 < OWD ≤ max(latest RTT, SRTT) + 2 ms. One untrusted sample switches
//     the controller to RTT/2 (fed into a second analyzer that is always
//     kept warm); 16 trusted samples in a row switch it back. Missing
//     samples (OWDValid false) are no evidence either way. The signal in use
//     is exposed as Metrics().Signal.
//   - Reverse-path compensation (our addition, reverse.go): the window
//     handed to the sender is cwnd·RTT/(RTT − revQ), where revQ is the part
//     of the RTT increase that forward OWD does not explain, i.e. ACK-path
//     queueing. The paper's argument is that OWD is blind to reverse
//     congestion; a window controller is not, since it sends at
//     cwnd/RTT. The per-ACK window steps are divided by the same factor,
//     so the control loop keeps the gain it has on an uncongested ACK path
//     although its feedback now takes the whole inflated RTT. In the
//     simulator's reverse-congested scenario the window scaling took
//     "owd" from 26 % to 15 % below its uncongested goodput, the step
//     scaling (with the probe hold below) to 5 %.
//     DisableReverseCompensation turns both off.
//   - Application-limited: the window grows only when the flow was using it
//     (cc.WindowLimited, RFC 7661); decreases always apply.
//   - Latecomers: a flow that starts on a standing queue takes that queue
//     for its base delay (LEDBAT's latecomer problem). As LEDBAT++
//     (draft-irtf-iccrg-ledbat-plus-plus §4.4), the controller periodically
//     drops to the 2-packet floor for 2 SRTT so queues drain and every flow
//     re-measures OWDmin; the first slowdown comes 2 SRTT after the first
//     slow-start exit, the next ones max(9 × the last slowdown's length,
//     20 s) later. Unlike LEDBAT++ the window is restored at once after the
//     hold rather than slow-started back: the ramp cost 5–8 % of the link
//     in the simulator, the restore about 1 %. With reverse-path
//     compensation on, the hold is 2 round trips of the forward loop,
//     2·SRTT·(RTT − revQ)/RTT: the hold waits for the forward queue to
//     drain, and a queued ACK path would otherwise stretch every hold
//     (reverse-congested scenario: 13 % below the uncongested goodput
//     instead of 15 %). DisableBaseDelayProbe turns it off.
package owd
