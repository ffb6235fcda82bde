// Package netem models a bottleneck link in userspace: serialization at a
// rate (or delivery opportunities replayed from a cellular trace, or a
// random rate walk), a queue discipline in front of it, propagation delay,
// jitter and random loss. It is sans-I/O — every call carries now — so the same link
// runs under the discrete-event simulator (bench/sim, virtual time) and the
// real-time UDP relay (bench/emu). The kernel here has no netem, fq_codel or
// cake qdisc; this package is our replacement. No goroutines, timers,
// sockets or time.Now: written from the RFCs, not from the kernel's code.
//
// # The link model
//
//	Enqueue(now, p)                                                Poll(now)
//	  → random loss → corruption → queue discipline → transmitter → delay line →
//	    (DropRandom)   (one bit)     (DropOverflow,     Size·8/Rate   Delay + U[0,Jitter],
//	                                  DropAQM)          or a trace's  order kept
//	                                                    opportunities
//
// Stage by stage:
//
//   - Random loss is decided at the link's ingress, before the queue: a lost
//     packet never occupies the queue or the transmitter (as netem's loss
//     on the sending interface). Bernoulli loss with probability Loss, and
//     optionally a Gilbert–Elliott chain; a packet is lost if either model
//     loses it. The chain: in the good state a packet is lost with
//     LossGood, in the bad state with LossBad; after each packet the chain
//     moves good→bad with probability P and bad→good with R, so a bad
//     spell lasts 1/R packets on average and the chain is bad P/(P+R) of
//     the time. With LossGood = 0 and LossBad = 1 (Gilbert's model) loss
//     bursts have mean length 1/R. With Length set, every bad spell lasts
//     exactly Length packets instead (R unused), and the chain is bad
//     Length·P/(Length·P+1) of the time: bursts of a fixed length, as the
//     QUIC interop runner's (30 % in bursts of 3: P = 1/7, Length 3).
//   - Corruption (Corrupt, CorruptGE) is decided at the ingress too, for
//     each packet not lost, by a Bernoulli draw and a Gilbert–Elliott
//     chain of its own (the same model as loss, with loss_good and
//     loss_bad read as corruption probabilities): a corrupted packet has
//     one bit of Data flipped, at a position drawn uniformly over Data,
//     and Corrupted set, and goes on. It is a bit error that no checksum
//     on the way caught: the UDP relay (bench/emu) hands it to the
//     receiving application as the QUIC interop runner's corrupting
//     network does; through the TUN router the kernel's IP and UDP or TCP
//     checksums catch it, so there it is a loss. netem touches Data only
//     for this.
//   - The transmitter takes the queue's next packet the instant it is free
//     and holds it for TxTime(Size, Rate) = Size·8/Rate, rounded up to the
//     nanosecond so the link never exceeds its rate. QueueDelay is the time
//     from Enqueue to that instant.
//   - The delay line adds Delay plus a uniform jitter in [0, Jitter] drawn
//     per packet, but never reorders: ArrivedAt = max(previous ArrivedAt,
//     end of serialization + Delay + jitter). A packet drawn a small jitter
//     behind one drawn a large one waits for it, as on a real path where
//     jitter comes from queues that keep order (Linux netem reorders with
//     jitter unless told to keep order; we keep order because reordering
//     is a separate impairment and it would confuse loss detection).
//   - Poll returns packets whose ArrivedAt ≤ now, in order. Poll may be
//     called late; ArrivedAt stays the exact arrival time.
//
// All randomness comes from math/rand/v2 PCG generators seeded from
// LinkConfig.Seed, one stream each for Bernoulli loss, the Gilbert–Elliott
// chain, jitter, and corruption (its draw and its chain), so the same seed
// and the same calls give the same drops, delays and bit errors, and
// turning jitter or corruption on does not change which packets are lost.
// The FQ flow hash is seeded from Seed too.
//
// # Exactness and the call pattern
//
// now must be non-decreasing across calls (a smaller now is taken as the
// latest now seen). Every call first replays the link's own events up to
// now at their exact times: a transmission ends at txEnd, the packet goes
// on the delay line, and the next packet is dequeued (and the AQM decides)
// at txEnd — not when the caller happens to call. Events at the same
// instant as an Enqueue happen before it. So deliveries, queue delays,
// drops and stats are identical whether a driver steps through every
// NextEvent or only polls now and then (tested for every discipline).
// NextEvent returns the earliest time the link has something to do: the
// end of the current transmission or the oldest arrival on the delay line
// (which may already be ≤ now if the driver has not polled it yet).
//
// Scheduled changes (SetRate, SetDelay, SetJitter, SetLoss, ApplyChange)
// take effect at their now: the packet being serialized finishes at the
// old rate; packets leaving the transmitter from then on take the new
// delay and jitter (those already on the delay line keep theirs, and a
// shorter delay never lets a later packet overtake); packets enqueued
// from then on see the new loss. The CAKE thresholds follow the rate.
//
// # Capacity: a rate, a trace or a rate walk
//
// The transmitter's capacity is one of three (LinkConfig: exactly one of
// Rate, Trace, RateWalk):
//
//   - Rate: a fixed serialization rate, as above.
//   - Trace: a Mahimahi trace (bench/traces) replayed as mm-link replays
//     it (opportunity.go): each line is a delivery opportunity of 1500
//     bytes at that millisecond; the trace repeats with the period of its
//     last line. An opportunity carries up to 1500 bytes of queued
//     packets; a packet larger than what is left is carried partly and
//     finishes in a later one; bytes with nothing queued are wasted. A
//     packet leaves the queue (dequeue, CoDel's decision, QueueDelay) at
//     the opportunity that starts carrying it and goes on the delay line
//     at the one that finishes it. Opportunities at the instant of an
//     Enqueue come before it. NextEvent names the next opportunity only
//     while something is queued or being carried, so an idle trace link
//     does not wake its driver every millisecond. The replay starts at the
//     link's first now (the driver's start) from TraceStart, or from a
//     point drawn uniformly over the period from Seed (TraceStartRandom),
//     so seeds see different windows of a long trace. cake is refused: its
//     shaper and tin thresholds need a rate, and a trace has none.
//   - RateWalk: a fixed rate re-drawn at random (ratewalk.go): each rate
//     holds for U[HoldMin, HoldMax], then a new one is drawn log-uniformly
//     on [Min, Max], from Seed. CAKE's thresholds follow it.
//
// Utilisation (LinkStats.BusyTime): on a fixed rate or a walk, the time
// spent serializing; while a trace drives the link, the fraction of the
// opportunities' bytes that carried data, times that time — so a saturated
// trace link reads 100 %, whatever the trace's rate (BusySince gives a
// window's).
//
// A change of capacity (SetRate, or ApplyChange with a rate, trace or rate
// walk) applies to packets dequeued from its now on: a packet being
// serialized at a fixed rate finishes at it; a packet partly carried by a
// trace is finished by that trace. A change to a trace starts replaying it
// (from its trace_start) the moment the transmitter is free.
//
// The steady-state hot path does not allocate: queues and the delay line
// are power-of-two ring buffers that only grow, flow tables are allocated
// once per discipline, and each flow queue's ring is allocated on first
// use (bounded by the number of flow queues and the queue limit).
//
// # Disciplines
//
// Chosen by name in QueueConfig.Discipline; every one implements Queue,
// sets Packet.EnqueuedAt on Enqueue and reports drops through its
// DropFunc. Limits: a packet limit and/or a byte limit; both zero means
// DefaultLimit = 1000 packets (Linux's default, and the AQM paper's
// Table 1 for CoDel, FQ-CoDel and CAKE; the paper's FIFO used 500, which a
// scenario sets explicitly). ECN is not modelled (off, as in the paper):
// CoDel drops.
//
// fifo — drop-tail: an arriving packet that would exceed the packet or
// byte limit is dropped (DropOverflow).
//
// codel — RFC 8289 over one FIFO, tail drop at the limit. Defaults target
// 5 ms (§4.3) and interval 100 ms (§4.4). Sojourn time is now −
// EnqueuedAt at dequeue (§3). The state machine follows the RFC's
// pseudocode (§5): a dequeue with sojourn ≥ target starts the clock
// (first_above_time = now + interval); only a sojourn still ≥ target at
// or after first_above_time allows a drop, so the standing queue must
// have been above target for a whole interval; any dequeue below target
// resets it. In the dropping state the next drop is at drop_next +=
// interval/√count (§5.5), several drops at one dequeue if due; a dequeue
// below target leaves the state. On entering it within 16 intervals of
// the last drop schedule and with more than one drop since the last
// entry, count restarts at count − lastcount rather than 1 (the Linux
// variant the RFC's pseudocode gives). A sojourn equal to target counts
// as above (the RFC and Linux compare sojourn < target). The "maxpacket"
// rule: no drop while the bytes left in the queue are at most the largest
// packet the queue has held (RFC pseudocode; Linux uses the device MTU).
// One implementation (type codel) over any packet FIFO serves codel, every
// fq_codel flow queue and every cake flow queue.
//
// fq_codel — RFC 8290: Flows (default 1024, §5.1) queues selected by a
// seeded hash of Packet.FlowKey (the SplitMix64 finaliser of FlowKey XOR
// seed, reduced by multiply-shift; distinct keys may collide and share a
// queue as in Linux); DRR with quantum 1514 bytes (§4.1); new-flows and
// old-flows lists (§4.2): a flow that becomes active joins new flows with
// a full quantum and is served before old flows (the sparse-flow
// priority); a flow whose deficit is spent gets a quantum and goes to the
// tail of old flows; a flow left empty is removed, except that an empty
// new flow moves to old flows if there are any. CoDel runs per queue. On
// overflow of the total packet (or byte) limit the head packet of the
// flow with the largest byte backlog is dropped (§4.1.1), one packet at a
// time until under the limit (Linux drops a batch of up to 64 packets or
// half the fat flow to save CPU; one is enough here and closer to the
// RFC text). Drops by CoDel are not charged to a flow's deficit, as in
// Linux.
//
// cake — a CAKE-like DiffServ mode (Høiland-Jørgensen, Täht, Morton,
// "Piece of CAKE", 2018; tc-cake(8)), the AQM paper's "Diffserv mode = 3":
// three tins chosen by DSCP as CAKE's diffserv3 (TinOf): voice for CS7,
// CS6, EF, VA, CS5, CS4; bulk for CS1 and LE; best effort for the rest.
// Each tin is a full fq_codel flow scheduler (the same code). Tins have
// bandwidth thresholds as fractions of the link rate: voice 1/4, best
// effort 1, bulk 1/16. Our simplification of CAKE's tin scheduler:
//
//   - each tin has a one-packet-deep token bucket at its threshold rate:
//     after sending s bytes at t, the tin is within its threshold again at
//     t + s·8/(share·rate);
//   - at each dequeue the first backlogged tin within its threshold in the
//     order voice, bulk, best effort is served (strict priority up to the
//     threshold: voice gets at most 1/4 of the link with priority, and bulk
//     comes before best effort so its 1/16 cannot be starved — best
//     effort's threshold is the whole link, so it is nearly always within
//     it; this is the order of CAKE's tin scan);
//   - if no backlogged tin is within its threshold, the one that will be
//     soonest is served, which shares the link among over-threshold tins in
//     proportion to their thresholds. The scheduler is work-conserving: a
//     tin alone uses the whole link.
//
// CAKE's shaper is the link's own serialization rate (LinkConfig.Rate, or
// the rate walk's current rate; never a trace).
// The overflow limit is shared by the tins; the fattest flow of any tin
// loses its head packet. Per tin, CoDel's target is raised to at least the
// time to send 1.5 MTU (1514 B) at the tin's threshold rate and the
// interval stretched by the same amount (at least 2 × target), as CAKE
// tunes itself at low rates. Default target/interval are 5 ms/100 ms —
// CAKE's default "internet" preset and the scenario file's documented
// default; the paper's Table 1 ran CAKE with the "lan" preset (RTT 1 ms,
// CakeLANTarget/CakeLANInterval), which a scenario can set explicitly — we
// do not default to it because our scenarios have RTTs of tens to hundreds
// of ms, for which a 1 ms interval is the wrong preset.
//
// Not modelled from CAKE: COBALT's BLUE component (plain CoDel per flow),
// 8-way set-associative hashing (collisions share a queue as in
// fq_codel), host isolation ("triple-isolate" in Table 1: flows only, no
// per-host fairness), ACK filtering, overhead compensation, the
// diffserv4/8 and precedence modes, and the separate "sparse/bulk" flow
// counts of CAKE's DRR++.
//
// wmm — a Wi-Fi WMM-like strict-priority scheduler (wmm.go): four access
// categories (voice, video, best effort, background) chosen by DSCP through
// the 802.11 user priority as RFC 8325 maps them (CS7 and CS6 → voice; EF,
// VA → voice; CS5, AF4x, CS4, AF3x, CS3 → video; AF2x, CS2, AF1x, DF →
// best effort; CS1, LE → background). A category is served only while
// every higher one is empty; each holds a FIFO or a CoDel (ac_queue) of its
// own limit. Real EDCA gives probabilistic priority through contention
// windows and AIFS between stations; this models the limit of one station
// whose voice queue always wins. With only best-effort traffic it is
// exactly a fifo or codel of that limit.
//
// # References
//
//   - R. Netravali et al., "Mahimahi: Accurate Record-and-Replay for HTTP",
//     USENIX ATC 2015 (mm-link's trace-driven link); K. Winstein,
//     A. Sivaraman, H. Balakrishnan, "Stochastic Forecasts Achieve High
//     Throughput and Low Delay over Cellular Networks", USENIX NSDI 2013
//     (the cellular traces).
//   - IEEE 802.11-2020 §10.2.4.2 (EDCA access categories); RFC 8325,
//     Mapping Diffserv to IEEE 802.11.
//   - RFC 8289, Controlled Delay Active Queue Management (CoDel).
//   - RFC 8290, The Flow Queue CoDel Packet Scheduler and AQM (FQ-CoDel).
//   - T. Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A
//     Comprehensive Queue Management Solution for Home Gateways", IEEE
//     LANMAN 2018; tc-cake(8).
//   - Wang et al., "Assisting Mission-Critical Traffic Flows with Active
//     Queue Management in Industrial Internet of Things", arXiv:2607.14478,
//     Table 1 parameters.
//   - E. N. Gilbert, "Capacity of a burst-noise channel", 1960;
//     E. O. Elliott, "Estimates of error rates for codes on burst-noise
//     channels", 1963.
package netem
