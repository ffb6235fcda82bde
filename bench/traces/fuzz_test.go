package traces

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser: it returns a trace or an
// error wrapping ErrInvalid, never panics, and a trace it returns is
// consistent: a positive period, one opportunity per line, and a cursor
// that walks exactly those opportunities in time order before it repeats
// them one period later.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1\n", "0\n0\n4\n", "2\n2\n2\n5", " 3\r\n7\n", "", "\n", "1\n\n", "5\n4\n", "0\n", "abc\n", "4294967295\n", "4294967296\n", "-1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Parse(bytes.NewReader(b), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if tr.Period() <= 0 || tr.Opportunities() <= 0 {
			t.Fatalf("period %v, %d opportunities", tr.Period(), tr.Opportunities())
		}
		if lines := int64(bytes.Count(bytes.TrimRight(b, "\n"), []byte("\n")) + 1); lines != tr.Opportunities() {
			t.Fatalf("%d lines, %d opportunities", lines, tr.Opportunities())
		}
		c, _ := tr.Start(0)
		var prev, first uint64
		var n int64
		for i := 0; n < tr.Opportunities(); i++ {
			ms, k := c.Next()
			if k <= 0 || (i > 0 && ms <= prev) {
				t.Fatalf("run %d: %d opportunities at %d ms after %d ms", i, k, ms, prev)
			}
			if i == 0 {
				first = ms
			}
			prev, n = ms, n+k
		}
		if n != tr.Opportunities() || prev != uint64(tr.Period().Milliseconds()) {
			t.Fatalf("walked %d opportunities to %d ms, want %d to %v", n, prev, tr.Opportunities(), tr.Period())
		}
		if ms, _ := c.Next(); ms != first+uint64(tr.Period().Milliseconds()) {
			t.Fatalf("after the wrap: %d ms, want %d", ms, first+uint64(tr.Period().Milliseconds()))
		}
	})
}
