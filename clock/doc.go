// Package clock is fresh's only source of time: the Clock interface and its
// implementations (manual, system, NTP-corrected), and Inband, the estimator
// that relates two hosts' wall clocks from the timestamps already on data
// packets and ACKs (SPEC §4).
//
// # Monotonic and wall time
//
// A Clock has two readings that are never mixed (STYLE principle 5):
//
//   - Now() Mono: monotonic nanoseconds from an arbitrary origin, for
//     intervals (RTT, pacing, timers, epochs). No correction ever touches it.
//   - Wall() time.Time: wall-clock time, for the timestamps that cross the
//     wire and are compared with another host's clock (one-way delay, age).
//
// Implementations: Manual (moved by its owner; WallOffset and SkewPPM give a
// host a deliberately wrong clock), System (the host clock), NTPClock (a base
// Clock whose wall time is corrected by NTP). Wall stamps cross the wire as
// Stamp, microseconds since the Unix epoch.
//
// Controllers never read a clock: they get "now" as an argument. Only
// System.Now/Wall, QueryNTP and NTPClock.Run touch the host clock or the
// network, all in system.go and ntp.go (internal/sansio enforces this); the
// NTP state (NTPState, ntpstate.go) and Inband are pure.
//
// # NTP-corrected clock
//
// NTPClock = base clock + correction. QueryNTP does one NTPv4 exchange with
// github.com/beevik/ntp, stamping T1 and T4 with the base clock's Wall (the
// library's GetSystemTime hook, so the measured offset is that of the base
// clock, whatever it is; this gives up kernel receive timestamps, a few µs),
// and rejects answers that fail ntp's Response.Validate (RFC 5905 sanity
// checks: kiss-of-death/stratum 0, leap indicator 3 "not synchronized",
// stale reference time, root distance over 16 s). A rejected answer wraps
// both ErrInvalidResponse and ntp's sentinel and changes nothing but the
// recorded error and the retry time. NTPState turns valid samples into a
// correction:
//
//   - Step or slew. The first valid sample is stepped (applied at once:
//     there is nothing to slew from; ntpd steps a large initial offset too,
//     and chrony does with makestep, e.g. Debian's default "makestep 1 3").
//     Later samples whose offset differs from the current correction by more
//     than StepThreshold (default 128 ms, ntpd's step threshold, RFC 5905
//     Appendix A STEPT) are stepped too; smaller ones are slewed: the
//     correction moves toward the new offset at MaxSlewPPM (default 500 ppm,
//     ntpd's and Linux adjtime's maximum slew; chrony's maxslewrate default
//     is far higher, 83 333 ppm). A slewed Wall stays continuous and
//     monotonic; a stepped Wall jumps, possibly backwards. A negative
//     StepThreshold never steps after the first sample, as ntpd's "tinker
//     step 0".
//   - Polling. A sync is due Interval (default 64 s, ntpd's and chrony's
//     default minpoll 6 = 2^6 s) after a success and RetryInterval (default
//     16 s, RFC 5905 MINPOLL 4) after a failure. The fixed interval, without
//     NTP's adaptive poll exponent, is our simplification.
//   - Synchronized. True while the last valid sync is no older than MaxAge
//     (default 4·Interval: four missed polls). After that the correction is
//     kept (holdover) but Synchronized is false and SyncedWall returns
//     ErrNotSynchronized, the signal for owd to fall back to RTT/2.
//   - No frequency discipline. Unlike ntpd's PLL/FLL, the correction holds
//     between syncs, so a base clock drifting 100 ppm gains up to 6.4 ms per
//     64 s interval. Inband tracks skew where it matters (OWD), so the NTP
//     clock stays simple; NTPStatus.Offset shows the drift at each sync.
//
// Driving it: call Sync(ctx) yourself when NextSync is due, or run Run(ctx)
// in a goroutine the endpoint owns; Run is the package's only waiting loop
// and returns when ctx is cancelled (cancelling also interrupts a query in
// flight: QueryNTP arms a context.AfterFunc that expires the socket's
// deadline). NTPClock starts no goroutine of its own. Observe/ObserveError are
// the sans-I/O entry for samples obtained elsewhere (the simulator).
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
// where θ is receiver − sender (NTP's sign; SPEC §1's "offset", sender −
// receiver, is −θ) and δ the round trip. A single θ is off by half the
// difference of the two paths' queueing delays, so, as NTP's clock filter
// (RFC 5905 §10) keeps the minimum-delay sample of the last eight, Inband
// keeps minimum-delay samples, but per direction and per window of time:
//
//  1. Envelope. Time (the sender's clock) is cut into Windows windows of
//     Window each (defaults 64 × 1 s, a ring: fixed memory, no allocation
//     per sample). For every window Inband keeps the smallest forward
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
// OWD(sent, recv) = recv − sent − θ(sent) is the one-way delay SPEC §1 asks
// for. Synced reports whether it may be used: both directions seen, at least
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
//   - Clock steps. A step of either host's wall clock (e.g. an NTPClock's
//     step beyond 128 ms) breaks the envelope. A step of θ moves one
//     direction's apparent delays *below* that direction's envelope, which
//     queueing never does, so StepSamples (3) samples in a row more than
//     StepThreshold (20 ms) under it are taken as a step: the history is
//     reset and relearnt (Status().Steps counts these). Smaller steps, or
//     steps in the one direction the sender cannot see in one-direction
//     mode (θ rising: forward delays only go up, like queueing), are not
//     detected: call Reset. A path that became 20 ms shorter resets too,
//     which is right: its old envelope is obsolete. Skew changes
//     (temperature) are followed within the history length.
//   - Bogus stamps. A stamp far in the future empties the history (windows
//     age out). A sample more than StepThreshold under the envelope is held
//     out until confirmed, so one forged or corrupt low delay cannot pull
//     the envelope down; a smaller one can, until it ages out.
//   - Resolution. Stamps are whole µs; θ is evaluated at the send time,
//     not mid-flight (an error of skew × OWD, 2 µs at 100 ppm and 20 ms).
//
// Interpretations chosen where SPEC §4 is silent: Offset's sign is NTP's
// (receiver − sender); the time axis is the sender's clock; the skew fit is
// the convex-hull lower envelope rather than least squares (robust to
// standing queues); the offset uses per-direction minima (a refinement of
// the clock filter); Synced is "enough windows and a plausible skew" rather
// than a test of fit stability over time; the NTP clock has no frequency
// discipline and a fixed poll interval; OWD returns ok=false rather than an
// error on the hot path (no allocation).
package clock
