// Package e2e holds the transport's end-to-end tests that run through the
// emulated bottleneck (bench/emu): transfers through loss, slow readers,
// clock offsets, NTP, server restarts, outages. They live here, not beside
// the transport, so that the library module does not depend on the
// benchmark's code. Only its tests have content.
package e2e
