// Package cc holds fresh's congestion-control contract and its baseline
// controllers: NewReno, CUBIC, H-TCP, a Vegas-style RTT-delay controller,
// BBR (v1, as Linux ships it) and Copa.
// The one-way-delay controller (package owd) and the age-of-information
// regulator (package acp) implement the same contract elsewhere.
//
// # The Controller contract
//
// A Controller is a sans-I/O state machine, shaped like quic-go's
// SendAlgorithm. Events go in, each carrying the current monotonic time
// (clock.Mono) as an argument:
//
//   - OnPacketSent for every packet that counts toward bytes in flight;
//   - OnAck once per newly acknowledged packet, in packet-number order, with
//     the packet's size, its RTT sample (if it yields one), the receiver's
//     one-way-delay sample and the bytes in flight before the ACK. A delayed
//     ACK covering two packets is two calls, so windows grow by the bytes
//     acknowledged (byte counting, RFC 3465) whatever the ACK policy;
//   - OnLoss once per packet declared lost;
//   - OnRetransmissionTimeout when the RTO (or QUIC's persistent congestion)
//     fires.
//
// Decisions come out: Window (bytes), PacingRate (bit/s), CanSend, and a
// Metrics snapshot (a plain struct; it never allocates). Nothing in this
// package reads a clock, sleeps, starts a goroutine or touches a socket, so
// the same controller runs under real sockets, the simulator's virtual time
// and the emulator unchanged. Controllers are not safe for concurrent use;
// the driver serialises calls.
//
// Packet numbers are never reused: retransmitted data travels under a new
// number, as in QUIC (RFC 9000 §12.3), so every ACK is unambiguous, and a
// packet declared lost leaves bytes in flight at once (RFC 9002 §7.3). Those
// two facts shape how the TCP algorithms below were carried over.
//
// # Registry
//
// Register makes a Factory available under a name and New builds a fresh
// controller by name with a given MSS; Names lists what is registered. This
// package registers "reno", "cubic", "htcp", "rttdelay", "bbr" and "copa" in
// init, each with its zero-value Config; owd registers "owd" and "owd-eq2". Every
// benchmark scenario therefore swaps controllers by name alone. The
// update-rate policies of package acp are not Controllers (acp.Policy has
// no window, so it is no congestion control for a stream) and are not
// registered: acp.NewPolicy builds them by name.
//
// # Units
//
// Windows are ByteCount (bytes, scaled by the MSS where an algorithm thinks
// in packets); rates are Bandwidth (bit/s); times are clock.Mono and
// time.Duration. Internally the baselines keep the window as a float64 byte
// count so that per-ACK increases far below one byte (MSS·acked/cwnd at
// large windows) accumulate instead of being truncated; Window reports the
// whole bytes. CUBIC's and H-TCP's formulas are evaluated in their native
// units (segments, seconds) and converted at the edge.
//
// # What the baselines share
//
// All four embed one piece of bookkeeping (lossbased.go):
//
//   - Initial window 10 packets (RFC 6928); a floor of 2 packets
//     (MinWindowPackets, RFC 5681 §3.1) after every reduction.
//   - Slow start while cwnd < ssthresh: cwnd += bytes acknowledged
//     (RFC 5681 §3.1 with RFC 3465 byte counting; per-packet ACKs make
//     RFC 3465's L limit moot). An ACK that would cross ssthresh stops at
//     ssthresh; the rest of it (at most one packet's worth, once) is not
//     carried into congestion avoidance.
//   - Application-limited flows do not grow (RFC 7661 §4.1): an ACK whose
//     PriorInFlight fails WindowLimited leaves the window alone.
//   - Recovery by packet number, RFC 6582's "recover" in QUIC terms. The
//     first loss of a packet numbered above recover is a congestion event:
//     the window is cut once and recover becomes the largest packet number
//     sent so far. Losses of packets numbered <= recover belong to that
//     event and never cut again, also after recovery has ended (RFC 9002
//     §7.3.2 says the same with send times). While in recovery, ACKs of
//     packets numbered <= recover (RFC 6582's partial ACKs) do not grow the
//     window; the first ACK of a packet sent after the cut (a full ACK)
//     ends recovery and already grows it, because it proves the reduced
//     window is being delivered.
//   - No window inflation or deflation. RFC 6582 inflates cwnd by one MSS
//     per duplicate ACK and deflates it on partial ACKs because TCP's
//     FlightSize still counts segments that have left the network. Here a
//     lost packet leaves bytes in flight when it is declared lost and its
//     data goes out again as a new packet, so bytesInFlight < cwnd already
//     lets exactly the right amount of new data out.
//   - ssthresh is computed from cwnd, not FlightSize. RFC 5681 eq. 4 says
//     max(FlightSize/2, 2·SMSS); RFC 9002 §7.3.2, RFC 9438 §4.6 (which
//     allows it "with other measures to prevent cwnd from growing when the
//     volume of bytes in flight is smaller than cwnd"), quic-go and Linux use
//     cwnd. Because the window never grows while application-limited, cwnd
//     is close to FlightSize whenever the flow was using it, and a flow that
//     was not is not punished below the window it had proved.
//   - Retransmission timeout: cwnd becomes the loss window LW = 1 MSS
//     (RFC 5681 §3.1; this is the one exception to the 2-packet floor, kept
//     as the RFC has it; RFC 9002's persistent congestion would use 2),
//     slow start follows. ssthresh is recomputed (by each algorithm's rule)
//     only if the timeout is a new congestion event: a timeout repeated with
//     no ACK in between holds ssthresh (RFC 5681 §3.1), and so does a
//     timeout during recovery, whose episode has already cut ssthresh once.
//     Recovery ends and recover moves to the largest packet sent, so the
//     mass loss the timeout implies cuts nothing further (RFC 6582 §3.2
//     step 6, retransmit timeouts).
//   - HyStart++ (RFC 9406), off by default, is an option of Reno, CUBIC and
//     H-TCP (Config.HyStart). In the initial slow start it tracks each
//     round's minimum RTT (rounds by packet number, at least 8 samples);
//     a rise of clamp(lastRoundMinRTT/8, 4 ms, 16 ms) switches to
//     Conservative Slow Start (growth ÷4), a fall back below the RTT that
//     triggered it resumes slow start, and after 5 CSS rounds (the partial
//     first one counting) ssthresh = cwnd. The first congestion event turns
//     it off for good (RFC 9406 §4.3: later slow starts stop at the
//     ssthresh that event set). RFC 9406's L limit is moot with per-packet
//     ACKs. The RTT-delay controller has its own slow-start exit and does
//     not offer it.
//   - PacingRate is PacingRate(cwnd, SRTT, slow start); CanSend is
//     bytesInFlight < cwnd. SRTT and the minimum RTT come from an RTTStats
//     fed with AckSample.RTT.
//
// # NewReno (Reno, "reno")
//
// References: RFC 5681 §3.1–§3.2, RFC 6582 §3.2, RFC 3465, RFC 9002 §7.3.
// Congestion avoidance adds MSS·acked/cwnd per acknowledged packet (RFC 5681
// eq. 3 with byte counting), a little under one MSS per window of ACKs.
// Loss: ssthresh = max(cwnd/2, 2·MSS), cwnd = ssthresh. Timeout: ssthresh =
// max(cwnd/2, 2·MSS) when it is a new event, cwnd = 1 MSS. Everything else
// is the shared behaviour above.
//
// # CUBIC (Cubic, "cubic")
//
// References: RFC 9438 §4.1–§4.8, §4.10, §5.8. Constants C = 0.4
// segments/s³, β_cubic = 0.7, α_cubic = 3(1−β)/(1+β) ≈ 0.529.
//
// In congestion avoidance, per acknowledged packet: t is the time since the
// epoch began, W_cubic(t) = C(t−K)³ + W_max, target = W_cubic(t+RTT) clamped
// to [cwnd, 1.5·cwnd], cwnd += (target−cwnd)/cwnd segments per segment
// acknowledged (§4.2, §4.4, §4.5). The Reno-friendly estimate grows by
// W_est += α·acked/cwnd, with α = 1 once W_est reaches cwnd_prior (§4.3);
// whenever W_cubic(t) < W_est the window is set to W_est. A loss sets
// W_max = cwnd (or cwnd·(1+β)/2 with fast convergence, on by default, if cwnd
// did not regain the previous W_max, §4.7), cwnd_prior = cwnd, ssthresh =
// cwnd = β·cwnd (§4.6) and ends the epoch. Interpretations:
//
//   - The RTT in W_cubic(t+RTT) is SRTT, as §4.2 says; with no sample yet
//     it is 0 (target = W_cubic(t)).
//   - The epoch (t_epoch, cwnd_epoch) starts at the first ACK that grows the
//     window in congestion avoidance, i.e. after recovery, not at the loss.
//     K = ∛((W_max − cwnd_epoch)/C) (eq. 2), which is ∛(W_max(1−β)/C) after
//     a plain loss. If W_max is unset or not above cwnd_epoch — the first
//     congestion avoidance stage without a loss (§4.10) or the first after
//     a timeout (§4.8, which clears W_max) — K = 0 and W_max = cwnd_epoch;
//     W_est always restarts at cwnd_epoch, and cwnd_prior is cwnd_epoch if
//     no reduction has happened yet.
//   - Application-limited and idle periods (§5.8: t "MUST NOT include these
//     periods"): the window does not grow, and when the flow is
//     window-limited again the epoch start moves forward by the length of
//     the stretch, measured from the first ACK that found the flow
//     application-limited to the first that found it window-limited again.
//     An idle period is covered too, since the ACKs draining the flight
//     before it are application-limited. We shift rather than restart the
//     epoch so the curve keeps its W_max and K, as the RFC's wording asks.
//   - An ACK never lowers the window: in the Reno-friendly region cwnd =
//     max(cwnd, W_est).
//   - Timeout (§4.8): cwnd = 1 MSS as Reno, ssthresh = β·cwnd,
//     cwnd_prior = cwnd, W_max cleared (see above).
//   - With HyStart++ on (CubicConfig.HyStart), slow start may end without
//     a loss; the epoch then starts as §4.10 describes (see above).
//   - Not done: undoing spurious congestion events (§4.9; the Controller
//     interface has no "that loss was spurious" event).
//
// # H-TCP (HTCP, "htcp")
//
// References: D. Leith, R. Shorten, "H-TCP: TCP for high-speed and
// long-distance networks", PFLDnet 2004; draft-leith-tcp-htcp-06.
// Per acknowledged packet in congestion avoidance cwnd += 2(1−β)·α·MSS·
// acked/cwnd, where α(Δ) = 1 for Δ <= Δ_L and 1 + 10(Δ−Δ_L) + ((Δ−Δ_L)/2)²
// beyond, Δ is the time since the last congestion event in seconds and
// Δ_L = 1 s. On a congestion event cwnd = ssthresh = β·cwnd with the
// adaptive backoff β = RTTmin/RTTmax clamped to [0.5, 0.8]. Interpretations:
//
//   - β in 2(1−β) is the β of the last backoff; before the first it is 0.5,
//     so the increase is exactly Reno's until Δ_L has passed.
//   - RTTmin is the connection's minimum RTT. RTTmax is the largest RTT
//     sample of a packet sent since the last congestion event (reset at
//     every event): the RTT with the queue at its fullest in this epoch.
//     Samples of packets sent before the event are ignored, since they
//     still carry the queue the event is draining.
//   - Adaptive reset (on by default): if the throughput before this event,
//     estimated as B = cwnd/RTTmax (the paper's bandwidth-delay relation
//     for the moment before backoff), differs from the previous event's by
//     more than Δ_B = 20 %, β = 0.5 so that flows converge after a change.
//     Without RTT samples in the epoch (two events within one RTT) β = 0.5.
//     NoAdaptiveBackoff fixes β = 0.5.
//   - RTT scaling (off by default): for Δ > Δ_L, α ← max(1, α·RTTmin/RefRTT),
//     RefRTT = 100 ms, so flows of different RTTs gain window at the same
//     rate per second. The paper writes α·T_min with T_min in seconds; we
//     name the reference explicitly and do not clamp above.
//   - Δ counts from the last loss event or timeout; before any event (which
//     only matters if congestion avoidance is reached without one) from the
//     first packet sent.
//   - One ACK adds at most the bytes it acknowledges (slow start's rate):
//     α(Δ) has no upper bound, and after a long quiet stretch a single ACK
//     would otherwise grow the window by terabytes (found by the invariant
//     fuzz test: 20 minutes without congestion, then one ACK).
//   - Timeout: as Reno (ssthresh = cwnd/2, cwnd = 1 MSS), and the adaptive
//     state is forgotten (β = 0.5, no throughput history) because the path
//     may have changed; Δ restarts.
//
// # RTT delay, Vegas-style (RTTDelay, "rttdelay")
//
// Reference: L. Brakmo, L. Peterson, "TCP Vegas: End to End Congestion
// Avoidance on a Global Internet", IEEE JSAC 13(8), 1995, §3.2–§3.3.
// Once per round trip it computes expected = W/baseRTT, actual = W/RTT and
// diff = (expected − actual)·baseRTT = W(1 − baseRTT/RTT) packets, its
// estimate of its own packets queued at the bottleneck: diff < α = 2 → +1 MSS,
// diff > β = 4 → −1 MSS, otherwise hold. Slow start ends when diff > γ = 1.
// Loss halves the window as Reno. Metrics reports Signal = SignalRTT once an
// RTT sample exists.
//
// This controller is the control group for the one-way-delay controller:
// its signal is the round-trip time, which also contains the queueing delay
// of the ACK (reverse) path. Under reverse-path congestion it sees delay its
// data never met and backs off for it; comparing it with owd on the same
// scenario shows what the receiver-stamped one-way delay buys.
// Interpretations:
//
//   - A round lasts from the ACK that starts it to the ACK of the first
//     packet sent after it started (packet numbers, not timers). RTT is the
//     smallest sample of the round (Vegas uses the minimum RTT seen in the
//     last RTT, filtering ACK compression); baseRTT is the smallest sample
//     ever (RTTStats.Min) and never expires — Vegas's known weakness after
//     a route change, not addressed here.
//   - W is the window when the round began, the window the round's samples
//     were measured with (it differs from the current window by at most
//     1 MSS in congestion avoidance, by up to ×2 in slow start).
//   - Slow start grows by byte counting every round (Vegas's growth only
//     every other RTT is not done). When diff > γ it ends with cwnd cut to
//     W − (diff − γ) packets — the window that would leave γ packets queued,
//     since slow start overshot during the round that measured the queue —
//     and ssthresh = cwnd.
//   - An increase needs at least one window-limited ACK in the round
//     (RFC 7661); a decrease does not. A decrease also lowers ssthresh to
//     cwnd, so that a delay-driven cut does not restart slow start.
//   - Rounds begun before a loss, or during recovery, are not evaluated:
//     their samples carry the queue the reduction is draining.
//   - With the defaults, delay alone never takes the window below about
//     β/(1 − baseRTT/RTT) packets; the 2-packet floor still applies.
//
// # Copa (Copa, "copa")
//
// Reference: V. Arun, H. Balakrishnan, "Copa: Practical Delay-Based
// Congestion Control for the Internet", NSDI 2018, §2. The published
// delay-based peer of the one-way-delay controller. Per ACK it compares the
// rate cwnd/RTTstanding with the target 1/(δ·d_q) (d_q = RTTstanding −
// RTTmin; RTTstanding the minimum RTT over srtt/2, RTTmin over 10 s) and
// moves the window by v/(δ·cwnd) packets toward it, v a velocity that
// doubles each round once the window has moved one way for three rounds;
// it paces at 2·cwnd/RTTstanding. Slow start doubles the window until the
// rate exceeds the target. Metrics.Mode is "slow_start", "default"
// (δ = 0.5, losses ignored) or "competitive": when the queue has not been
// nearly empty (d_q <= 10 % of RTTmax − RTTmin) once in 5 RTTs, a buffer
// filler is assumed and 1/δ grows by 1 per round and halves on a loss,
// until the queue is seen nearly empty again. The floor is 2 packets; a
// retransmission timeout sets 2 packets and restarts slow start. copa.go's
// header says every choice the paper leaves open.
//
// # BBR (BBR, "bbr")
//
// References: Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson, "BBR:
// Congestion-Based Congestion Control", ACM Queue 2016;
// draft-cardwell-iccrg-bbr-congestion-control-00;
// draft-cheng-iccrg-delivery-rate-estimation-00. BBR v1 as Linux's
// tcp_bbr.c has it since 5.1 (with the ACK-aggregation allowance and the
// long-term "lt_bw" policer detection): a model of the path — btlBw, the
// 10-round max of the delivery rate, and minRTT, the 10 s minimum RTT —
// and a pacing rate of gain·btlBw with cwnd = gain·BDP + allowances. It
// does not share the loss-based bookkeeping above: losses do not cut the
// model, only cwnd during recovery (packet conservation in the first round,
// the cwnd restored after). Metrics.Mode is "startup", "drain", "probe_bw"
// or "probe_rtt"; InSlowStart is true in Startup. Its floor is 4 packets
// (1 after a retransmission timeout until the next ACK). The delivery-rate
// samples are kept inside the controller, per packet number; whether the
// flow is application-limited is inferred at each send, since the contract
// has no such event. bbr.go's header says every constant, every choice and
// where it differs from the kernel.
package cc
