package session

// ranges is a set of disjoint, non-adjacent half-open byte ranges
// [lo, hi), sorted ascending: the acknowledged bytes of the send stream, or
// the received bytes of the receive stream. Both stay small in practice
// (one range per hole the network made), so a sorted slice beats a tree.
type ranges struct{ r []span }

type span struct{ lo, hi int64 }

// end is the highest byte held, or from if nothing at or above it is.
func (s *ranges) end(from int64) int64 {
	if len(s.r) == 0 || s.r[len(s.r)-1].hi < from {
		return from
	}
	return s.r[len(s.r)-1].hi
}

// add inserts [lo, hi), merging overlaps and neighbours.
func (s *ranges) add(lo, hi int64) {
	if lo >= hi {
		return
	}
	// First range that ends at or after lo (could merge).
	i := 0
	for i < len(s.r) && s.r[i].hi < lo {
		i++
	}
	j := i
	for j < len(s.r) && s.r[j].lo <= hi {
		lo = min(lo, s.r[j].lo)
		hi = max(hi, s.r[j].hi)
		j++
	}
	switch {
	case i == j:
		s.r = append(s.r, span{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = span{lo, hi}
	default:
		s.r[i] = span{lo, hi}
		s.r = append(s.r[:i+1], s.r[j:]...)
	}
}

// prefix is the end of the range starting at from (from itself if none):
// how far the set covers contiguously from there.
func (s *ranges) prefix(from int64) int64 {
	for _, sp := range s.r {
		if sp.lo <= from && from < sp.hi {
			return sp.hi
		}
		if sp.lo > from {
			break
		}
	}
	return from
}

// contains reports whether [lo, hi) is entirely in the set.
func (s *ranges) contains(lo, hi int64) bool {
	for _, sp := range s.r {
		if sp.lo <= lo && hi <= sp.hi {
			return true
		}
		if sp.lo > lo {
			break
		}
	}
	return false
}

// firstGap returns the first sub-range of [lo, hi) not in the set, or
// ok=false if it is covered entirely.
func (s *ranges) firstGap(lo, hi int64) (glo, ghi int64, ok bool) {
	for _, sp := range s.r {
		if sp.hi <= lo {
			continue
		}
		if sp.lo >= hi {
			break
		}
		if sp.lo > lo {
			return lo, min(sp.lo, hi), true
		}
		lo = sp.hi
		if lo >= hi {
			return 0, 0, false
		}
	}
	return lo, hi, lo < hi
}

// trimBelow forgets everything below off.
func (s *ranges) trimBelow(off int64) {
	i := 0
	for i < len(s.r) && s.r[i].hi <= off {
		i++
	}
	// Shift down rather than reslice, so the array keeps its capacity and
	// later adds do not allocate.
	n := copy(s.r, s.r[i:])
	s.r = s.r[:n]
	if len(s.r) > 0 && s.r[0].lo < off {
		s.r[0].lo = off
	}
}
