package cli

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "100000": 100000, "1e9": 1e9, "1E9": 1e9, "2.5e3": 2500, "100000000000": 1e11,
		"1GB": 1e9, "1gb": 1e9, "10MB": 10e6, "1kB": 1000, "3TB": 3e12,
		"10MiB": 10 << 20, "10mib": 10 << 20, "1GiB": 1 << 30, "2KiB": 2048,
		"64K": 64 << 10, "64k": 64 << 10, "128K": 128 << 10, "4M": 4 << 20, "1G": 1 << 30, "1T": 1 << 40,
		"1.5K": 1536, "512B": 512, " 7 ": 7,
	} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "K", "GB", "-1", "-1K", "1.5", "0.1K", "1e30", "1 GB x", "1XB", "1GiBs", "ten", "NaN", "Inf", "0x10"} {
		_, err := ParseSize(in)
		require.Error(t, err, "%q", in)
	}
}

// A Size flag names the flag in its error, as the flag package words it.
func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var z Size
	fs.Var(&z, "upload-bytes", "")
	require.NoError(t, fs.Parse([]string{"-upload-bytes", "1GB"}))
	require.Equal(t, Size(1e9), z)
	err := fs.Parse([]string{"-upload-bytes", "lots"})
	require.ErrorContains(t, err, "-upload-bytes")
	require.ErrorContains(t, err, "1GB")
}
