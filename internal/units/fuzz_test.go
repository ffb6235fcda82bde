package units

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// The fuzz targets check, for any input: no panic; an error names the
// input; an accepted value is in range, FormatSize/FormatRate writes it so
// that the parser reads back exactly the same value, and the parser reads
// the input the same in upper or lower case and with spaces around it.
// `go test` replays the corpus in testdata/fuzz: the forms of the package
// doc and the inputs the table tests refuse.

func FuzzParseSize(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(s))
			return
		}
		require.GreaterOrEqual(t, n, cc.ByteCount(0), "%q", s)
		back, err := ParseSize(FormatSize(n))
		require.NoError(t, err, "%q → %d → %q", s, n, FormatSize(n))
		require.Equal(t, n, back, "%q → %q", s, FormatSize(n))
		for _, v := range []string{strings.ToUpper(s), strings.ToLower(s), " " + s + "\t"} {
			m, err := ParseSize(v)
			require.NoError(t, err, "%q accepted, %q not", s, v)
			require.Equal(t, n, m, "%q and %q", s, v)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseRate(s)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(s))
			return
		}
		require.LessOrEqual(t, b, MaxRate, "%q", s)
		back, err := ParseRate(FormatRate(b))
		require.NoError(t, err, "%q → %d → %q", s, b, FormatRate(b))
		require.Equal(t, b, back, "%q → %q", s, FormatRate(b))
		for _, v := range []string{strings.ToUpper(s), strings.ToLower(s), " " + s + "\t"} {
			c, err := ParseRate(v)
			require.NoError(t, err, "%q accepted, %q not", s, v)
			require.Equal(t, b, c, "%q and %q", s, v)
		}
	})
}
