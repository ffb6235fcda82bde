// Package ntpclock is an NTP-corrected clock.Clock: a base clock whose wall
// time is corrected by periodic queries to an NTP server (NTPv4, RFC 5905),
// slewed rather than stepped where possible, with its offset, round trip,
// last sync and synchronized state exposed. Its monotonic time is the base
// clock's, untouched.
//
// It is a package of its own because it is the only part of fresh's clocks
// that needs a network client (github.com/beevik/ntp): package clock, and
// the controllers in cc, owd and acp, depend on the standard library alone.
//
// Clock = base clock + correction. Query does one NTPv4 exchange with
// github.com/beevik/ntp, stamping T1 and T4 with the base clock's Wall (the
// library's GetSystemTime hook, so the measured offset is that of the base
// clock, whatever it is; this gives up kernel receive timestamps, a few µs),
// and rejects answers that fail ntp's Response.Validate (RFC 5905 sanity
// checks: kiss-of-death/stratum 0, leap indicator 3 "not synchronized",
// stale reference time, root distance over 16 s), and answers whose offset
// exceeds PanicThreshold (default 1000 s, ntpd's panic threshold: a
// well-formed answer hours off is a lying server). A rejected answer wraps
// both ErrInvalidResponse and ntp's sentinel and changes nothing but the
// recorded error and the retry time. State turns valid samples into a
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
//     ErrNotSynchronized: one-way delays measured against it should not be
//     trusted (the owd controller then runs on RTT/2).
//   - No frequency discipline. Unlike ntpd's PLL/FLL, the correction holds
//     between syncs, so a base clock drifting 100 ppm gains up to 6.4 ms per
//     64 s interval. Inband tracks skew where it matters (OWD), so the NTP
//     clock stays simple; Status.Offset shows the drift at each sync.
//
// Driving it: call Sync(ctx) yourself when NextSync is due, or run Run(ctx)
// in a goroutine the endpoint owns; Run is the package's only waiting loop
// and returns when ctx is cancelled (cancelling also interrupts a query in
// flight: Query arms a context.AfterFunc that expires the socket's
// deadline). Clock starts no goroutine of its own. Observe/ObserveError are
// the sans-I/O entry for samples obtained elsewhere (the simulator).
package ntpclock
