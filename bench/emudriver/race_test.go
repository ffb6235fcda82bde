//go:build race

package emudriver

// raceEnabled: the race detector slows every goroutine several-fold, which
// a real-time run sees as delay noise; tests loosen throughput bounds.
const raceEnabled = true
