// Package seeds reads and writes the seed lists of paired runs, "1-20" or
// "1,3,7-9": every controller runs a scenario on the same seeds, so that a
// difference between two controllers is measured on the same loss and
// jitter draws (the pairing quicly's congestion-control evaluations use).
// freshbench takes them with --seeds (sim, emu, traces, judge) and writes
// them back into the commands its reports print.
package seeds

import (
	"fmt"
	"strconv"
	"strings"
)

// Max bounds a list: a typo such as 1-100000 should be an error, not a
// night of simulation.
const Max = 10000

// Parse reads a list: comma-separated non-negative seeds and inclusive
// ranges, "1-20" or "1,3,7-9", in the order given. Duplicates are refused:
// counting a seed twice would weight it twice in a mean. The error says
// what is wrong with the list, not which flag gave it.
func Parse(list string) ([]int64, error) {
	var out []int64
	seen := map[int64]bool{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty element")
		}
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("%q is not a seed or a range A-B of non-negative seeds", item)
		}
		last := first
		if isRange {
			last, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
			if err != nil || last < 0 {
				return nil, fmt.Errorf("%q is not a range A-B of non-negative seeds", item)
			}
			if last < first {
				return nil, fmt.Errorf("range %q runs backwards", item)
			}
		}
		if last-first >= Max || len(out)+int(last-first) >= Max {
			return nil, fmt.Errorf("more than %d seeds", Max)
		}
		for seed := first; seed <= last; seed++ {
			if seen[seed] {
				return nil, fmt.Errorf("seed %d given twice", seed)
			}
			seen[seed] = true
			out = append(out, seed)
		}
	}
	return out, nil
}

// Label writes seeds back as the shortest list Parse reads: "1-10",
// "1,3,7-9".
func Label(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, fmt.Sprint(seeds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Range is the seeds first to last, inclusive.
func Range(first, last int64) []int64 {
	var out []int64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}
