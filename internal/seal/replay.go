package seal

// ReplayWindow remembers which packet numbers of one sequence were
// accepted, so an authentic packet captured and sent again is dropped: the
// sliding window of IPsec (RFC 4303 §3.4.3). Numbers more than Window
// below the largest accepted are too old to tell and are dropped too;
// fresh's senders never reuse a number and reorder far less than that.
type ReplayWindow struct {
	largest int64 // -1 until the first packet
	bits    [Window / 64]uint64
}

// Window is how many packet numbers below the largest the window
// remembers: 1024 packets, 128 bytes.
const Window = 1024

// NewReplayWindow returns an empty window.
func NewReplayWindow() ReplayWindow { return ReplayWindow{largest: -1} }

// Check reports whether pn may be accepted: new, and not too old. It
// changes nothing; call Mark once the packet has authenticated, so a forged
// packet cannot poison the window.
func (w *ReplayWindow) Check(pn int64) bool {
	switch {
	case pn > w.largest:
		return true
	case w.largest-pn >= Window:
		return false
	}
	i := uint64(pn) % Window
	return w.bits[i/64]&(1<<(i%64)) == 0
}

// Largest is the largest packet number accepted, -1 before the first.
func (w *ReplayWindow) Largest() int64 { return w.largest }

// Mark records pn as accepted.
func (w *ReplayWindow) Mark(pn int64) {
	if pn > w.largest {
		// Slide: clear the bits of the numbers that now enter the window
		// (those between the old largest and pn), at most all of them.
		start := w.largest + 1
		if pn-start >= Window {
			w.bits = [Window / 64]uint64{}
		} else {
			for n := start; n < pn; n++ {
				i := uint64(n) % Window
				w.bits[i/64] &^= 1 << (i % 64)
			}
		}
		w.largest = pn
	} else if w.largest-pn >= Window {
		return
	}
	i := uint64(pn) % Window
	w.bits[i/64] |= 1 << (i % 64)
}
