package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A plain name prints as it is; anything that could start a line or pass
// for another field is quoted, and the quoted form has no raw newline.
func TestNameAndText(t *testing.T) {
	for in, want := range map[string]string{
		"sensor-17":         "sensor-17",
		"host.example:1":    "host.example:1",
		"":                  `""`,
		"agent 1":           `"agent 1"`,
		"a\nb upload":       `"a\nb upload"`,
		"a@127.0.0.1:1":     `"a@127.0.0.1:1"`,
		"\"x\"":             `"\"x\""`,
		"caf\u00e9":         `"café"`,
		"x\u2028y":          `"x\u2028y"`,
		"bidi\u202egnp.exe": `"bidi\u202egnp.exe"`,
	} {
		require.Equal(t, want, Name(in), "%q", in)
		require.NotContains(t, Name(in), "\n")
	}
	for in, want := range map[string]string{
		"disk full: write x.bin": "disk full: write x.bin",
		"café":                   "café",
		"a\nb":                   `"a\nb"`,
		"a\rb":                   `"a\rb"`,
		"x\u2028y":               `"x\u2028y"`,
		"x\u0085y":               `"x\u0085y"`,
		"x\u202ey":               `"x\u202ey"`,
		"\xff":                   `"\xff"`,
	} {
		require.Equal(t, want, Text(in), "%q", in)
		require.False(t, strings.ContainsAny(Text(in), "\n\r"))
	}
}
