package syncbuf

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Lines written at once by several goroutines through a Writer arrive
// whole, each once, over a writer that is not safe for concurrent use.
func TestWriterKeepsLinesWhole(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				_, err := fmt.Fprintf(w, "goroutine %d line %d %s\n", g, i, strings.Repeat("x", 200))
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 800)
	seen := map[string]bool{}
	for _, l := range lines {
		var g, i int
		var xs string
		_, err := fmt.Sscanf(l, "goroutine %d line %d %s", &g, &i, &xs)
		require.NoError(t, err, l)
		require.Equal(t, strings.Repeat("x", 200), xs, l)
		require.False(t, seen[l], "twice: %s", l)
		seen[l] = true
	}
}

func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, _ = b.Write([]byte("ab"))
			_ = b.String()
		})
	}
	wg.Wait()
	require.Equal(t, "abababab", b.String())
}
