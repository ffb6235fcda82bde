// Package acp measures the age of information and regulates the rate of
// status updates with the Age Control Protocol (T. Shreedhar, S. K. Kaul,
// R. D. Yates, "An Age Control Transport Protocol for Delivering Fresh
// Updates in the Internet-of-Things", arXiv:1811.03353).
//
// # Age of information
//
// A source sends status updates to a monitor. Update i is generated at g_i and
// received at r_i. The monitor's age at time t is Δ(t) = t − g*(t), where
// g*(t) is the newest generation time received by t: it grows at one second
// per second and drops at each delivery of a fresher update, a sawtooth. An
// update older than one already delivered changes nothing. The time-average
// age is the area under the sawtooth divided by the time; the peak age is the
// height of a tooth, the age just before a useful delivery.
//
// Sending too slowly makes the monitor wait for news; sending too fast makes
// updates queue behind each other, so each arrives old. AgeMeter measures
// age (mean, peaks, time-weighted percentiles) in O(1) memory; Regulator
// chooses the rate; Lazy and Fixed are the baselines it is judged against.
//
// # The Age Control Protocol
//
// ACP (T. Shreedhar, S. K. Kaul, R. D. Yates, "An Age Control Transport
// Protocol for Delivering Fresh Updates in the Internet-of-Things",
// arXiv:1811.03353, Algorithm 1) works in control epochs of length T, the
// smoothed RTT. Over epoch k the source measures the time-average backlog B̄_k
// (updates sent and not yet acknowledged), the time-average age at the
// monitor Δ̄_k, and Z, the smoothed inter-arrival time of ACKs. With
// b_k = B̄_k − B̄_{k−1} and δ_k = Δ̄_k − Δ̄_{k−1}:
//
//	b_k   δ_k   action
//	> 0   > 0   previous epoch in this row too: γ += 1, MDEC(γ); else DEC
//	< 0   > 0   INC, γ = 0     (backlog fell but age rose: too slow)
//	> 0   < 0   INC, γ = 0     (backlog grew and age fell: more helps)
//	< 0   < 0   DEC, γ = 0     (age fell as the backlog drained)
//	= 0 or = 0  keep the rate  (no new information)
//
// INC targets a backlog change b* = +κ, DEC b* = −κ, MDEC(γ)
// b* = −(1 − 2^−γ)·B̄_k (κ = 1 update). The new rate
//
//	λ_{k+1} = 1/Z + b*/T, clamped to [λ_min, λ_max],
//
// delivers at the rate ACKs return (which keeps the backlog where it is) plus
// b* extra updates over the next epoch. The regulator starts at one update per
// RTT. It is rate based: the transport asks NextSendTime, sends the freshest
// update it has when the time comes, and never retransmits one (a newer
// update replaces it).
//
// # Interpretations
//
// The paper leaves these open or is vague about them; each is a choice made
// here.
//
// Epoch boundaries. The first epoch starts at the regulator's first event.
// Epoch k ends at the first event (OnUpdateSent, OnAck, OnLoss,
// OnRetransmissionTimeout or Tick) at which now − start ≥ T, where
// T = max(SRTT, Tuning.MinEpoch) is evaluated at that moment (InitialRTT
// before the first RTT sample, so the first epoch shrinks as soon as a sample
// arrives). Averages are over the epoch's actual length. An event closes the
// due epoch before applying its own change, so an update sent or acknowledged
// at the boundary belongs to the new epoch. Drivers need not call Tick: sends
// happen at least every 1/λ_min; Tick at EpochEnd closes epochs on time.
//
// B̄_k. The backlog B(t) is piecewise constant: +1 when an update is sent, −1
// when it is acknowledged, declared lost or evicted from the ring. B̄_k is its
// exact integral over the epoch divided by the epoch's length.
//
// Δ̄_k. The regulator places each acknowledged update on the monitor's
// sawtooth at (g_i, r_i) and integrates exactly. The sender learns about the
// monitor only when ACKs come back, so at the close of an epoch it knows the
// sawtooth up to a horizon H = now − lag, where lag = (ACK arrival − r_i) of
// the latest ACK (the reverse delay plus ACK delay); H never goes back behind
// the latest delivery. Δ̄_k is the time average over [H_{k−1}, H_k]: the
// monitor's timeline of the epoch, seen one lag later. Integrating to now
// instead would credit each epoch with age the next one corrects. If reverse
// delay grows, a delivery can turn up with r_i before the horizon already
// integrated; it is counted as received at the horizon (a small
// overestimate, bounded by the reverse-delay jitter). Δ̄ is undefined before
// the first delivery (the sawtooth starts at the first r_i) and in an epoch
// whose horizon did not advance.
//
// True age or RTT approximation (Tuning.AgeSource). The original ACP
// estimates age from ACK arrivals. fresh's ACKs carry the receiver's
// offset-corrected OWD, so by default r_i = send time + OWD: the true monitor
// age, an improvement over the original. That needs AckSample.OWDValid,
// ClockSynced, and a plausible sample (0 ≤ OWD ≤ RTT sample, the same
// consistency test as the owd controller's RTT fallback); otherwise, per ACK, the regulator falls back to the
// original approximation r_i ≈ ACK arrival − RTT/2, with the ACK's own RTT
// sample (SRTT, then InitialRTT, if it carries none). Signal() and
// EpochStats.Signal say which was used (cc.SignalOWD or cc.SignalRTT).
// AgeFromRTT forces the approximation, for comparison.
//
// No ACK in an epoch. Z keeps its value. The horizon still advances with
// time, so the monitor's age keeps rising in the sender's view (it assumes
// nothing arrived): δ_k > 0 and, with updates piling up, b_k > 0, so the table
// answers DEC then MDEC: a path that stopped delivering is backed off
// geometrically, down to λ_min.
//
// Not enough information. The table needs b_k, δ_k and Z: an epoch acts only
// if it and the previous epoch both have a Δ̄ and at least two ACKs have
// given Z. Otherwise it keeps the rate. Until the table first sets the rate,
// the rate follows one update per SRTT (1/InitialRTT before a sample), or
// with Tuning.StartBurst a faster source's rate (see source.go).
//
// γ. γ counts the MDECs of the current run of consecutive (b>0, δ>0) epochs.
// The first epoch of a run is a DEC and sets γ = 0; each further epoch of the
// run does γ += 1 and MDEC(γ), so b* = −B̄/2, −3B̄/4, −7B̄/8, … Any other row
// ends the run, a "keep" epoch included (the previous epoch then did not fall
// in the row, literally).
//
// Z. An EWMA of the time between successive OnAck calls, gain 1/8
// (Tuning.ZGain, as SRTT's α in RFC 6298). OnAck is called per acknowledged
// update, so an ACK covering two updates contributes a zero interval and 1/Z
// stays the delivery rate in updates per second. Z = 0 makes 1/Z unbounded:
// the rate is then λ_max. With Tuning.ZCountsLosses an OnLoss that takes an
// update out of the backlog is a departure too (an interval sample, zero if
// it comes at the ACK's instant), so 1/Z is the rate at which the backlog
// empties, which is what "1/Z keeps the backlog where it is" needs. With
// Tuning.EpochZ = n, the rate set at the close of an epoch in which n or
// more departures happened uses Z = epoch length / departures (the epoch's
// own average, like B̄ and Δ̄); the EWMA goes on underneath and is used
// otherwise. EpochStats.Z is the Z the rate used.
//
// T in b*/T is the length of the next epoch, T = max(SRTT, MinEpoch) at the
// close, so the backlog moves by about b* over the epoch the rate applies to.
//
// Initial RTT: 1 s (Config.InitialRTT), RFC 6298's initial RTO: the first
// update goes at once, the next after 1 s unless an RTT sample arrives first.
//
// Clamps. λ_min defaults to 0.1 Hz, one update per 10 s: the regulator learns
// only from ACKs, so the rate must never reach 0, and a flow that MDEC drove
// down still probes the path every 10 s. λ_max defaults to 1000 Hz (8.2 Mbit/s
// of 1024-byte updates); it should be the application's sensing rate (no
// update can be fresher than the data it carries), which the application
// should set. It also bounds 1/Z under ACK compression.
//
// Loss. A lost update is never retransmitted, so OnLoss takes it out of the
// backlog. Its record stays, so if it was only late, its ACK still counts for
// age (not for the backlog again). Per-update state lives in a ring of
// Config.Capacity records (default 1024) indexed by packet number: sending
// packet number pn reuses the slot of pn − Capacity; if that update is still
// outstanding it is evicted and counted lost (Counters.Evicted). Nothing is
// allocated after construction.
//
// Retransmission timeout. The path may have changed entirely, so B̄_{k−1},
// Δ̄_{k−1} and γ no longer describe it: the regulator restarts at one update
// per SRTT and waits for two measured epochs, as at start.
//
// Rate, not window. Regulator, Lazy and Fixed have no window: the gate is
// NextSendTime, and Policy has only the events an update sender drives and
// the gate. OnUpdateSent takes the update's generation time, which the
// monitor's age counts from (a sender whose data is fresh passes the send
// time). A transport whose application hands it updates
// (SendUpdate) also calls OnUpdateOffered on a policy that implements
// SourceObserver, for every update offered, sent or not. Events stamped
// earlier than a previous event are taken at the previous event's time, so
// integrals never run backwards.
//
// # Refinements
//
// Read literally, the rule has seven weaknesses, each fixed by one refinement
// that Tuning switches on its own, for benchmarks; NewLiteral runs the rule
// without any.
//
//   - Near the start rate about one update is in flight, so 1/Z ≈ 1/T and a
//     single DEC (b*/T = −κ/T) sets λ ≈ 0, i.e. λ_min; from there an epoch
//     holds one update or none and recovery is slow. A queue with random
//     service times takes the literal rule there within seconds.
//     MinUpdatesPerRTT 1: λ_min is raised to MinUpdatesPerRTT/SRTT, so the
//     regulator never sends slower than Lazy (the zero-wait policy; slower
//     only leaves the path idle).
//   - On a path without noise the backlog is exactly constant at the start
//     rate, so b = 0 and the rule keeps one update per RTT for ever.
//     ExploreOnHold: a hold becomes an INC, so a steady path still gets
//     explored; if the step was wrong, the next epoch reads (b>0, δ>0) and
//     decreases.
//   - With κ = 1 the rule climbs one update per epoch, so a long fat path
//     whose age-optimal backlog is a hundred updates takes minutes to get
//     there. IncFraction 0.5: INC's b* = +max(κ, IncFraction·B̄_k), the
//     mirror of MDEC, so the climb is geometric.
//   - On a short link an epoch of one SRTT holds one update or none, so B̄
//     and Δ̄ are sampling noise and the sign table acts on noise (the
//     short-path failure reported for ACP on ESP32 devices). MinEpoch
//     200 ms: T = max(SRTT, MinEpoch), so each epoch averages over several
//     updates.
//   - 1/Z counts ACKs only, so under loss p the "keep the backlog" rate is
//     (1 − p)·λ and every step of the table is biased down by p·λ: at 5 %
//     loss and 100 Hz an INC of κ per 200 ms epoch is cancelled outright.
//     ZCountsLosses: a loss is a departure for Z (see Z above).
//   - The EWMA of Z spans the last ~8 ACKs, milliseconds on a fast path:
//     delay jitter bunches ACKs and λ = 1/Z + b*/T swings by tens of
//     percent between epochs, enough to run the bottleneck queue full.
//     EpochZ 8: Z over the epoch (like B̄ and Δ̄) when it had at least 8
//     departures.
//   - The age reveals a too-fast rate an epoch or two late, and INC lands
//     at that rate again: the rule cycles through the same overshoot every
//     few epochs, and where the backlog is large a single INC jumps past
//     the capacity by half of it. BinaryInc: the rate λ_k of an epoch whose
//     DEC starts a (b>0, δ>0) run is a ceiling C (the MDECs of the run
//     leave it); an INC from λ < C goes to at most
//     max(λ + κ/T, (λ + C)/2), the bisection of BIC (L. Xu, K. Harfoush,
//     I. Rhee, "Binary Increase Congestion Control for Fast, Long Distance
//     Networks", INFOCOM 2004), so the climb slows as it nears the rate
//     that last hurt and then probes past it by κ per epoch; an INC from
//     λ ≥ C clears C (the path got faster). DEC, MDEC and a first INC are
//     as the table says. EpochStats.Ceiling shows C; an RTO clears it.
//
// These seven were the previous default. Beside a flow that keeps the
// bottleneck queue full they made the regulator bistable: the table read
// the neighbour's sawtooth, the fixed-size steps were large at low rates
// and BinaryInc's ceiling held a run wherever it first landed, so the
// outcome depended on the draw (a few Hz on some seeds, several times that
// on others, on the same path: bench/results/history.md, "fresh's rule: the
// seven refinements were bistable"). fresh's regulator, below, keeps four
// of the ideas (MinUpdatesPerRTT, ExploreOnHold, geometric steps, MinEpoch)
// and replaces the rest.
//
// # fresh's regulator
//
// The recommended regulator (RecommendedTuning, the zero Config) keeps ACP's
// epochs, its measurement of B̄ and Δ̄ and its four rows, and changes how it
// decides and bounds the rate. Each rule has a switch in Tuning and its
// reasoning beside its code:
//
//   - Gradient (gradient.go): the sign table compares ρ, the send rate of
//     the updates each epoch acknowledges, instead of the backlog, so the
//     rows say whether sending faster made the monitor fresher; steps are
//     multiplicative, λ·(1+s) or λ/(1+s), with s adapted as in Rprop
//     (×1.2 when the direction repeats, ×0.5 when it reverses, within
//     [StepMin, StepMax] = [2 %, 50 %]), so noise gives small steps, not
//     modes. Two epochs without an ACK are a DEC.
//   - ExcessAge and NoiseBand (gradient.go): the age change is judged net
//     of the change in the updates' queueing delay, and a change within the
//     running mean of |δ| is no information (an explore INC).
//   - EpochUpdates (config.go): at high rates an epoch is 20 updates long
//     (never shorter than SRTT, never longer than MinEpoch), so a short
//     fast path is judged every few milliseconds.
//   - QueueBound (queuebound.go): at most K = 4 updates waiting at the
//     bottleneck, λ ≤ K/Q̄, where Q̄ is the updates' mean queueing delay
//     (OWD above its 10-minute base, as LEDBAT measures it; RTT above its
//     base without a trusted OWD). Beside a neighbour's standing queue,
//     more rate buys less than 1/(2K + 1) of its size in age.
//   - BacklogBound (backlogbound.go): at most B = 10 updates in flight,
//     λ ≤ B/SRTT (past B each 1 % of rate buys under 1/(B + 1) % of age,
//     while the updates' bytes come out of the elastic flows' share; sources
//     on one path see one SRTT, so the bound holds them at one rate), 6 for
//     10 s after the path showed a neighbour's queue, and
//     at most one of their ACKs in the return path's queue, λ ≤ 1/R̄
//     (R̄: RTT − OWD above its base), so that on a narrow uplink the
//     updates' ACKs do not crowd out a download's.
//   - DeliveryBound (delivery.go): once the path has shown its capacity C
//     (updates sent faster than delivered, at the largest delivery rate of
//     the last 10 s, and faster than any delivery rate of those 10 s by
//     more than the delivery rate's noise, taken as 3 % until measured),
//     the rate is held at C/(1 + StepMin) for 10 s; the
//     updates' own queue is drained at the delivery rate (ACP's 1/Z + b*/T
//     with b* = −n_q) rather than cut to K/Q̄; after a path change (more
//     than 2K queued) the delivery maximum is measured afresh, and after a
//     deep cut the rate resumes at the delivery rate once the queue has
//     drained.
//   - SourceHeadroom and StartBurst (source.go): a source that cannot
//     generate at will (a periodic sensor) holds the rate at (1 + h)·σ̂
//     when most sends wait for it (h = 1), so every reading leaves at once
//     and the rate is never inflated past what the source uses; and
//     readings offered while the gate is still closed (SourceObserver)
//     start the regulator at the source's rate, at most 10 updates per
//     RTT (RFC 6928's initial window), instead of climbing from one per
//     RTT while superseding.
//
// The rate then never goes below the MinUpdatesPerRTT floor nor above
// MaxRate. EpochStats reports every measurement (SendRate, DeliveryRate,
// QueueDelay, Queued, ReturnQueueDelay, SourceRate, Capacity) and which
// bound set the rate. Limits: a queue the first updates already find (a
// neighbour that filled it before the connection) is part of the base
// delay, as for LEDBAT, and the queue bound cannot see it; through an AQM
// that keeps the queue short (CoDel), or gives the updates a queue of their
// own (FQ-CoDel), the regulator has no signal that it takes a neighbour's
// bandwidth, and only the backlog bound limits what it takes: on a short
// path of small BDP, B updates per RTT can be more than 10 % of it.
//
// The judge is the time-average age against the best fixed rate for the
// same path (found by sweeping NewFixed), and where bulk flows share the path
// against the best fixed rate that costs them at most 10 % of their goodput,
// over ten seeds, on long and short, clean, lossy and shared paths; the
// benchmark results are in the repository's bench directory, not here.
//
// # Age metrics
//
// AgeMeter's measurement starts at the first delivery (age is undefined
// before); the mean is exact (area under the sawtooth); peaks are the tooth
// heights; percentiles are time-weighted (P95 is the age exceeded 5 % of the
// time, consistent with the time-average mean) and come from a fixed
// log-spaced histogram, 32 bins per octave (2.2 % resolution) from 10 µs to
// about 3 h, with an O(1) update per delivery. See AgeMeter.
//
// # Policies
//
// Policy is the common method set of Regulator, Lazy and Fixed. NewPolicy
// builds one by name: "acp" (NewRegulator, the default), "acp-literal"
// (NewLiteral) or "lazy" (NewLazy); PolicyNames lists them. A fixed rate
// only means something for a given path (a benchmark sweeps it to find the
// best one), so it has no name: build it with NewFixed.
//
// Update policies are not congestion controllers and are not in the cc
// registry: they have no window, so a stream run with one would have no
// congestion control at all. They share cc's event types (cc.AckSample,
// cc.LossEvent), because a transport feeds both from the same ACKs.
package acp
