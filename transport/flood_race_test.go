//go:build race

package transport

// raceEnabled: the race detector slows the receive path ten to twenty
// times, so a flood at a fixed packet rate takes a far larger share of the
// CPU than it does in a normal build; TestRandomFlood then reports the
// goodput ratio instead of asserting it.
const raceEnabled = true
