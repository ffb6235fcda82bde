package units

import (
	"flag"
	"io"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// Every spelling the examples' README and flags promise, and the ones
// each program took before it used this package (bulk -l, agent
// -upload-bytes, loopbench -bytes).
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want cc.ByteCount
	}{
		{"1200", 1200}, {"0", 0}, {"100000000000", 1e11},
		{"1e9", 1e9}, {"1E9", 1e9}, {"2.5e3", 2500}, {"1e+3", 1000},
		{"1GB", 1e9}, {"1gb", 1e9}, {"50MB", 50e6}, {"1kB", 1000}, {"1KB", 1000}, {"3TB", 3e12},
		{"10MiB", 10 << 20}, {"10mib", 10 << 20}, {"1GiB", 1 << 30}, {"2KiB", 2048}, {"1TiB", 1 << 40}, {"4Mi", 4 << 20},
		{"64K", 64 << 10}, {"64k", 64 << 10}, {"128K", 128 << 10}, {"4M", 4 << 20}, {"1G", 1 << 30}, {"1T", 1 << 40},
		{"1.5K", 1536}, {"512B", 512}, {"512b", 512}, {" 7 ", 7}, {"1 GB", 1e9}, {"64 KiB", 64 << 10},
		{"9007199254740993", 9007199254740993}, // read as an integer, not rounded to a float64
		{"9223372036854775807", math.MaxInt64},
	} {
		got, err := ParseSize(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, in := range []string{"", " ", "K", "GB", "B", "-1", "-1K", "1.5", "0.1K", "1e30", "9223372036854775808", "8EiB",
		"1GB x", "1XB", "1GiBs", "ten", "NaN", "Inf", "0x10", "1_000", "1.2.3", ".", "1e", "+5", "10Mbps", "1 G B",
		"1e-400", "1e-400K", "1\u212a", "1M\u0130B"} { // an underflow is not 0; a Kelvin sign is not a k
		_, err := ParseSize(in)
		require.Error(t, err, "%q", in)
		require.ErrorContains(t, err, strconv.Quote(in), "the error names the input")
	}
	_, err := ParseSize("lots")
	require.ErrorContains(t, err, "1GB, 50MB", "the error lists the accepted forms")
	require.ErrorContains(t, err, "10MiB or 64K")
	_, err = ParseSize("1.5")
	require.ErrorContains(t, err, "not a whole number of bytes")
	_, err = ParseSize("0e-400")
	require.NoError(t, err, "0 written with an exponent is still 0")
	_, err = ParseSize("-3M")
	require.ErrorContains(t, err, "negative")
}

// The rates of issue 18's list, iperf3's -b spellings and bench's scenario
// files' ("1.5Mbps").
func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want cc.Bandwidth
	}{
		{"10M", 10e6}, {"10Mbps", 10e6}, {"10 Mbit/s", 10e6}, {"10Mbit/s", 10e6}, {"10mbps", 10e6},
		{"10 MBPS", 10e6}, {"10Mbits/sec", 10e6}, {"95.4 Mbits/sec", 95.4e6}, // as bulk prints it
		{"500k", 500e3}, {"500K", 500e3}, {"500kbps", 500e3}, {"1.5M", 1.5e6}, {"1.5m", 1.5e6},
		{"1e6", 1e6}, {"64000", 64000}, {"0", 0}, {"2Gbps", 2e9}, {"2G", 2e9}, {"1T", 1e12}, {"1Tbps", 1e12},
		{"9600bps", 9600}, {"9600 bit/s", 9600}, {" 2 MBPS ", 2e6}, {"0.5bps", 1}, {"1.4bps", 1},
	} {
		got, err := ParseRate(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, in := range []string{"", "M", "Mbps", "bps", "-1", "-1Mbps", "fast", "fastMbps", "10Mi", "10MiB/s",
		"10M/100", "1.2.3M", "1e13", "2Tbps", "0x10", "NaN", "Inf", "0.4", "10Mbps x", "10 M bps", "10Hz",
		"1e-400", "1e-400Mbps", "1\u212a", "10Mb\u0130t/s"} {
		_, err := ParseRate(in)
		require.Error(t, err, "%q", in)
		require.ErrorContains(t, err, strconv.Quote(in), "the error names the input")
	}
	_, err := ParseRate("fast")
	require.ErrorContains(t, err, "10Mbps, 10 Mbit/s", "the error lists the accepted forms")
	for in, bits := range map[string]string{"10MB": "10 MB/s is 80Mbps", "10mb/s": "10 MB/s is 80Mbps", "1.5kBytes/s": "1.5 kB/s is 12kbps"} {
		_, err := ParseRate(in)
		require.ErrorContains(t, err, "reads as bytes", in)
		require.ErrorContains(t, err, bits, in)
	}
	_, err = ParseRate("2Tbps")
	require.ErrorContains(t, err, "above 1000Gbps")
}

func TestFormat(t *testing.T) {
	for n, want := range map[cc.ByteCount]string{0: "0", 1200: "1200", 128 << 10: "128KiB", 1e9: "1GB",
		50e6: "50MB", 10 << 20: "10MiB", 1000: "1kB", 1 << 40: "1TiB", 1536: "1536", 1024000: "1000KiB"} {
		require.Equal(t, want, FormatSize(n), n)
	}
	for b, want := range map[cc.Bandwidth]string{0: "0bps", 999: "999bps", 9600: "9.6kbps", 1_500_000: "1.5Mbps", 200e3: "200kbps", 10e9: "10Gbps"} {
		require.Equal(t, want, FormatRate(b), b)
	}
}

// A Size or Rate flag names the flag in its error, as the flag package
// words it, and prints its default in the unit it was given in.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	z, r := Size(128<<10), Rate(0)
	fs.Var(&z, "l", "")
	fs.Var(&r, "b", "")
	require.Equal(t, "128KiB", fs.Lookup("l").DefValue)
	require.NoError(t, fs.Parse([]string{"-l", "1GB", "-b", "10 Mbit/s"}))
	require.Equal(t, Size(1e9), z)
	require.Equal(t, Rate(10e6), r)
	err := fs.Parse([]string{"-l", "lots"})
	require.ErrorContains(t, err, "-l")
	require.ErrorContains(t, err, "1GB")
	err = fs.Parse([]string{"-b", "fast"})
	require.ErrorContains(t, err, "-b")
	require.ErrorContains(t, err, "10Mbps")
}
