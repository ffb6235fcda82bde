//go:build !race

package emudriver

const raceEnabled = false
