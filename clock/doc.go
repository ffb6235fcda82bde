// Package clock is fresh's only source of time: the Clock interface and its
// implementations (manual, system), and Inband, the estimator that relates
// two hosts' wall clocks from the timestamps already on data packets and
// ACKs. The NTP-corrected clock, which needs a network client, lives in the
// subpackage ntpclock, so that this package (and every controller built on
// it) depends on the standard library alone.
//
// # Monotonic and wall time
//
// A Clock has two readings that are never mixed:
//
//   - Now() Mono: monotonic nanoseconds from an arbitrary origin, for
//     intervals (RTT, pacing, timers, epochs). No correction ever touches it.
//   - Wall() time.Time: wall-clock time, for the timestamps that cross the
//     wire and are compared with another host's clock (one-way delay, age).
//
// Keeping them apart means an NTP step or an in-band offset correction can
// never corrupt an RTT or a pacing interval: corrections are offsets applied
// only where a one-way delay is computed.
//
// Implementations: Manual (moved by its owner; WallOffset and SkewPPM give a
// host a deliberately wrong clock), System (the host clock), and
// ntpclock.Clock (a base Clock whose wall time is corrected by NTP). Wall
// stamps cross the wire as Stamp, microseconds since the Unix epoch.
//
// Controllers never read a clock: they get "now" as an argument. Only
// System.Now/Wall touch the host clock (system.go; internal/sansio enforces
// this); Inband is pure.
//
// # In-band offset and skew estimation
//
// Inband relates a sender's clock to a receiver's using NTP's on-wire
// exchange (RFC 5905 §8) on fresh's own packets: T1 data sent (sender
// clock), T2 data received (receiver clock), T3 ACK sent (receiver clock),
// T4 ACK received (sender clock). One exchange gives
//
//	θ = ((T2−T1) + (T3−T4)) / 2    δ = (T4−T1) − (T3−T2)
//
// where θ is receiver − sender (NTP's sign; the "offset" added to
// PRtime − PStime to get a one-way delay, sender − receiver, is −θ) and δ
// the round trip. A single θ is off by half the
// difference of the two paths' queueing delays, so, as NTP's clock filter
// (RFC 5905 §10) keeps the minimum-delay sample of the last eight, Inband
// keeps minimum-delay samples, but per direction and per window of time:
//
//  1. Envelope. Time (the sender's clock) is cut into Windows windows of
//     Window each (defaults 64 × 1 s, a ring of 16 bytes a window: fixed
//     memory, no allocation per sample). For every window Inband keeps the smallest forward
//     apparent delay T2−T1 (= OWD_f + θ) and the smallest reverse apparent
//     delay T4−T3 (= OWD_r − θ), with their times. Per-direction minima are
//     tighter than the minimum-δ pair: the forward and reverse minima need
//     not come from the same exchange.
//  2. Skew. θ drifts linearly with the clocks' relative skew, so the window
//     minima of each direction lie above a line of slope ±skew. The line is
//     the lower-convex-hull edge that spans the points' mean time (Moon,
//     Skelly & Towsley, INFOCOM 1999: the line below all points with the
//     least total distance to them). Unlike a least-squares fit it ignores
//     windows spent behind a standing queue, which only lift points. The two
//     directions' slopes are combined with inverse-variance weights (time
//     spread over mean height above the line), so in one-direction mode the
//     well-fed forward envelope dominates.
//  3. Offset. With the skew removed, the smallest forward value F₀ and the
//     smallest reverse value R₀ over the history give θ₀ = (F₀ − R₀)/2 at a
//     reference time, and θ(t) = θ₀ + skew·(t − ref).
//     ErrorBound = (F₀ + R₀)/2 is NTP's bound: θ lies within ±ErrorBound of
//     the estimate whatever the paths' asymmetry, if one-way delays are ≥ 0.
//
// OWD(sent, recv) = recv − sent − θ(sent) is the one-way delay the owd
// controller needs. Synced reports whether it may be used: both directions seen, at least
// MinWindows (default 8) windows of samples, a fitted skew within
// ±MaxSkewPPM (default 1000 ppm).
//
// One-direction mode. The receiver of a flow sees a (send stamp, arrival
// stamp) pair per data packet (AddForward) and only occasionally a round
// trip (AddExchange, or AddReverse for a reverse one-way sample). Forward
// samples alone yield the skew (slope) but never θ: a constant offset and a
// constant base delay are indistinguishable without a packet going the other
// way. One reverse sample anchors θ, with an error of about half that
// sample's queueing delay; more reverse samples shrink it.
//
// Limits, stated honestly:
//
//   - Path asymmetry. Every NTP-style method assumes equal base delays. With
//     base delays d_f ≠ d_r, θ is biased by (d_f − d_r)/2 and the forward OWD
//     comes out as (d_f + d_r)/2 plus queueing: the estimator cannot know,
//     and no in-band method can (TestInbandAsymmetryBias shows it). The bias
//     is always within ErrorBound. OWD *variation* (queueing, what the owd
//     controller reacts to) is unaffected.
//   - Persistent queues. A queue that never drains during the whole history
//     looks like base delay on that path and biases θ the same way.
//   - Clock steps. A step of either host's wall clock (e.g. an ntpclock.Clock's
//     step beyond 128 ms) breaks the envelope. A step of θ moves one
//     direction's apparent delays *below* that direction's envelope, which
//     queueing never does, so StepSamples (3) samples in a row more than
//     StepThreshold (20 ms) under it are taken as a step: the history is
//     reset and relearnt (Status().Steps counts these). Smaller steps, or
//     steps in the one direction the sender cannot see in one-direction
//     mode (θ rising: forward delays only go up, like queueing), are not
//     detected: call Reset. A path that became 20 ms shorter resets too,
//     which is right: its old envelope is obsolete. Skew changes
//     (temperature) are followed within the history length. After a reset
//     the other direction's samples stamped before the step (ACK echoes
//     and data still in flight) read the step low; they are held out until
//     that direction has two windows of current samples, or they would
//     become its new minimum and put θ off by half the step.
//   - Bogus stamps. A stamp far in the future empties the history (windows
//     age out). A sample more than StepThreshold under the envelope is held
//     out until confirmed, so one forged or corrupt low delay cannot pull
//     the envelope down; a smaller one can, until it ages out.
//   - Resolution. Stamps are whole µs; θ is evaluated at the send time,
//     not mid-flight (an error of skew × OWD, 2 µs at 100 ppm and 20 ms).
//
// Choices made where the literature leaves room: Offset's sign is NTP's
// (receiver − sender); the time axis is the sender's clock; the skew fit is
// the convex-hull lower envelope rather than least squares (robust to
// standing queues); the offset uses per-direction minima (a refinement of
// the clock filter); Synced is "enough windows and a plausible skew" rather
// than a test of fit stability over time; OWD returns ok=false rather than
// an error on the hot path (no allocation).
package clock
