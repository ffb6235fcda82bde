package session

import "sort"

// ranges is a set of disjoint, non-adjacent half-open byte ranges
// [lo, hi), sorted ascending: the acknowledged bytes of the send stream, or
// the received bytes of the receive stream. Lookups are binary searches.
//
// A peer chooses where the holes are: a receiver that stored every 1-byte
// frame at a sparse offset would hold one range per frame, up to half the
// receive window (2 M ranges, 32 MB, in a 4 MiB window), and every insert
// would move them all. maxRanges bounds that: an insert that would need a
// new range beyond it is refused (add reports false), so memory and the
// memmove of an insert stay bounded, as QUIC stacks bound their receive
// gaps. The send stream's set needs no bound: it only holds ranges of
// packets this end sent, so the send buffer bounds it.
type ranges struct {
	r         []span
	maxRanges int // 0: unbounded
}

type span struct{ lo, hi int64 }

// end is the highest byte held, or from if nothing at or above it is.
func (s *ranges) end(from int64) int64 {
	if len(s.r) == 0 || s.r[len(s.r)-1].hi < from {
		return from
	}
	return s.r[len(s.r)-1].hi
}

// search is the index of the first range that ends at or after x: the
// first that could touch a range starting at x.
func (s *ranges) search(x int64) int {
	return sort.Search(len(s.r), func(i int) bool { return s.r[i].hi >= x })
}

// add inserts [lo, hi), merging overlaps and neighbours. It reports false,
// changing nothing, when that would take a new range beyond maxRanges.
func (s *ranges) add(lo, hi int64) bool {
	if lo >= hi {
		return true
	}
	i := s.search(lo) // first range that could merge
	j := i
	for j < len(s.r) && s.r[j].lo <= hi {
		j++
	}
	if i == j {
		if s.maxRanges > 0 && len(s.r) >= s.maxRanges {
			return false
		}
		s.r = append(s.r, span{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = span{lo, hi}
		return true
	}
	s.r[i] = span{min(lo, s.r[i].lo), max(hi, s.r[j-1].hi)}
	s.r = append(s.r[:i+1], s.r[j:]...)
	return true
}

// fits reports whether add(lo, hi) would succeed.
func (s *ranges) fits(lo, hi int64) bool {
	return lo >= hi || s.maxRanges == 0 || len(s.r) < s.maxRanges || s.touches(lo, hi)
}

// touches reports whether [lo, hi) overlaps or adjoins a range held, so
// that adding it takes no new range.
func (s *ranges) touches(lo, hi int64) bool {
	i := s.search(lo)
	return i < len(s.r) && s.r[i].lo <= hi
}

// find is the index of the range holding x, or -1.
func (s *ranges) find(x int64) int {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > x })
	if i < len(s.r) && s.r[i].lo <= x {
		return i
	}
	return -1
}

// prefix is the end of the range starting at from (from itself if none):
// how far the set covers contiguously from there.
func (s *ranges) prefix(from int64) int64 {
	if i := s.find(from); i >= 0 {
		return s.r[i].hi
	}
	return from
}

// contains reports whether [lo, hi) is entirely in the set.
func (s *ranges) contains(lo, hi int64) bool {
	i := s.find(lo)
	return i >= 0 && hi <= s.r[i].hi
}

// firstGap returns the first sub-range of [lo, hi) not in the set, or
// ok=false if it is covered entirely.
func (s *ranges) firstGap(lo, hi int64) (glo, ghi int64, ok bool) {
	if lo >= hi {
		return 0, 0, false
	}
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > lo })
	if i < len(s.r) && s.r[i].lo <= lo {
		lo = s.r[i].hi // covered from lo: the gap starts after this range
		i++
		if lo >= hi {
			return 0, 0, false
		}
	}
	// Ranges are non-adjacent, so the next one (if any) starts beyond lo.
	if i < len(s.r) && s.r[i].lo < hi {
		return lo, s.r[i].lo, true
	}
	return lo, hi, true
}

// trimBelow forgets everything below off.
func (s *ranges) trimBelow(off int64) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > off })
	// Shift down rather than reslice, so the array keeps its capacity and
	// later adds do not allocate.
	n := copy(s.r, s.r[i:])
	s.r = s.r[:n]
	if len(s.r) > 0 && s.r[0].lo < off {
		s.r[0].lo = off
	}
}
