// Package e2e holds the transport's end-to-end tests that run through the
// emulated bottleneck (bench/emu): transfers through loss, slow readers,
// clock offsets, NTP, server restarts, outages. They live here, not beside
// the transport, so that the library module does not depend on the
// benchmark's code. Only its tests have content. They run on the machine's
// own clock: goodput bounds are asserted only in the long real-time suite,
// FRESH_REALTIME=1 go test ./bench/e2e, on a quiet machine.
package e2e
