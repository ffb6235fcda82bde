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
//   - Controller: the window. New gives Eq. 2 ("owd"), NewEq7 the Eq. 7
//     variant ("owd-eq7"). Both satisfy cc.Controller and register
//     themselves with cc.Register.
//
// # State diagram
//
//	             OWD queueing > clamp(OWDmin/8, 4, 16 ms)
//	             or cwnd ≥ ssthresh or loss
//	┌──────────┐ ─────────────────────────────────▶ ┌────────────────────┐
//	│slow start│                                    │congestion avoidance│
//	└──────────┘ ◀──────────────────────────────────└────────────────────┘
//	     ▲         RTO; or base-delay probe (window     │   ▲
//	     │         to 2 packets for 2 SRTT, then        loss│   │ACK above
//	     │         slow start back to the old window)   ▼   │recover point
//	     │                                           ┌────────┐
//	     └────────────────── RTO ─────────────────── │recovery│
//	                                                 └────────┘
//
// In congestion avoidance each acknowledged packet applies Eq. 2:
//
//	OWDv > 2μ      cwnd −= 1/cwnd
//	μ < OWDv ≤ 2μ  cwnd unchanged
//	OWDv ≤ μ       cwnd += 1/cwnd
//
// (packets; the implementation counts bytes, MSS-scaled, with a float window
// so the small steps are not truncated away). The window never goes below 2
// packets.
//
// # Interpretations chosen (the paper is vague here)
//
//   - μ: SPEC §1 defines μ = max(μ_floor, β·OWDv_max), β = 0.5. μ_floor is
//     given as a delay (MuFloorDelay, 5 ms, the CoDel target) and converted to
//     OWDv units with the current OWDmin, so μ never means less than 5 ms of
//     queueing on any path. OWDv_max is seeded at every slow-start exit with
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
//     otherwise. Which variant is the better default is for the simulator
//     benchmark to decide (bench/RESULTS.md); until it has, the default
//     registry name "owd" is Eq. 2, the paper's main controller.
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
//   - Application-limited: the window grows only when the flow was using it
//     (cc.WindowLimited, RFC 7661); decreases always apply.
//   - Latecomers: a flow that starts on a standing queue takes that queue
//     for its base delay (LEDBAT's latecomer problem). As LEDBAT++
//     (draft-irtf-iccrg-ledbat-plus-plus §4.4), the controller periodically
//     drops to the 2-packet floor for 2 SRTT and slow-starts back to its old
//     window; the first slowdown comes 2 SRTT after the first slow-start
//     exit, the next ones 9× the last slowdown's duration later (≈10 %
//     throughput cost). While every flow does this, queues drain and each
//     re-measures OWDmin. DisableBaseDelayProbe turns it off.
package owd
