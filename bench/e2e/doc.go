// Package e2e holds the transport's end-to-end tests that run through the
// emulated bottleneck (bench/emu): transfers through loss, slow readers,
// clock offsets, NTP, server restarts, outages, and the interop-style
// fault suite. They live here, not beside the transport, so that the
// library module does not depend on the benchmark's code.
//
// Two things are importable: the rig every test shares (Rig: a listener
// behind the relay, connections dialled through it; Stream: a transfer
// both ends hash, so it ends with a byte-exact check), and the
// interop-style suite (Cases, Run), fresh's protocol under the QUIC
// interop runner's test cases, which TestInterop runs (at the full sizes
// with FRESH_INTEROP_FULL=1) and `freshbench interop` prints as a matrix.
//
// Everything runs on the machine's own clock: goodput bounds are asserted
// only in the long real-time suite, FRESH_REALTIME=1 go test ./bench/e2e,
// on a quiet machine.
package e2e
