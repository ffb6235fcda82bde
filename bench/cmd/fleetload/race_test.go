//go:build race

package main

// raceEnabled: the test binary was built with -race, so the monitor the
// smoke test builds is too, and its packages come from the build cache the
// workspace's -race test run filled (cmd/fresh-monitor's own tests compile
// the same NATS server with -race) instead of a second compilation.
const raceEnabled = true
