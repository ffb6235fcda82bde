package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// iperf3Args are the client arguments both iperf3 and bulk run with for
// the key-path comparison.
var iperf3Args = []string{"-t", "1", "-i", "0.5", "-b", "20M", "-J"}

// iperf3Golden holds the key paths of a real iperf3 client's -J output
// (over TCP on loopback, with iperf3Args), so the comparison runs where
// iperf3 is not installed.
const iperf3Golden = "testdata/iperf3-client.keypaths"

var updateIperf3 = flag.Bool("update-iperf3", false, "rewrite "+iperf3Golden+" from the installed iperf3")

// unavailable are iperf3's key paths bulk leaves out, with why. Empty:
// fresh has a value, or the nearest one, for every key iperf3 writes.
var unavailable = map[string]string{}

// TestIperf3KeyPaths: bulk's -J output has iperf3's key paths, so that a
// script that indexes iperf3's output without checking finds every key.
func TestIperf3KeyPaths(t *testing.T) {
	if *updateIperf3 {
		path, err := exec.LookPath("iperf3")
		require.NoError(t, err, "-update-iperf3 needs iperf3")
		out := runIperf3(t, path, iperf3Args...)
		writeGolden(t, out)
	}
	version, want := readGolden(t)

	_, cliOut := loopback(t, nil, iperf3Args)
	have := keyPaths(t, cliOut)
	var missing []string
	for _, p := range want {
		if !slices.Contains(have, p) {
			missing = append(missing, p)
		}
	}
	t.Logf("bulk has %d of the %d key paths of %s's client output", len(want)-len(missing), len(want), version)
	require.ElementsMatch(t, slices.Collect(maps.Keys(unavailable)), missing, "iperf3's key paths bulk's -J lacks (add them, or to unavailable with why)")
	require.Len(t, want, 90, "%s's client writes 90 key paths", version)
	require.Equal(t, 90, len(want)-len(missing), "bulk writes all of them")

	// The keys added for iperf3's sake carry fresh's values.
	res := decode(t, cliOut)
	require.Equal(t, 0, res.Start.SockBufsize, "no -w")
	require.Equal(t, defaultWindow, res.Start.SndbufActual)
	require.Equal(t, defaultWindow, res.Start.RcvbufActual)
	require.GreaterOrEqual(t, res.Start.TCPMSSDefault, 1200, "QUIC's minimum datagram, where fresh starts")
	for _, iv := range res.Intervals {
		s := iv.Streams[0]
		require.NotNil(t, s.RTTVar, "traced: this side sends and writes JSON")
		require.Equal(t, int64(defaultWindow), *s.SndWnd)
		require.GreaterOrEqual(t, *s.PMTU, 1200+20+8, "a datagram and its IPv4 and UDP headers")
	}
	es := res.End.Streams[0]
	require.Equal(t, int64(defaultWindow), es.Sender.MaxSndWnd)
	require.Equal(t, 1, es.Receiver.Socket)

	// The golden file is real: where the same iperf3 version is
	// installed, it writes exactly those paths.
	if path, err := exec.LookPath("iperf3"); err == nil && !*updateIperf3 {
		out := runIperf3(t, path, iperf3Args...)
		if v := iperf3Version(t, out); v == version {
			require.Equal(t, want, keyPaths(t, out), "%s's key paths", v)
		} else {
			t.Logf("installed %s, golden file from %s: not compared", v, version)
		}
	}
}

// keyPaths lists the paths of a JSON document's values, sorted: object
// keys joined by ".", an array's elements as "[]"
// (intervals[].streams[].bytes).
func keyPaths(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	seen := map[string]bool{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if p != "" {
					k = p + "." + k
				}
				walk(k, x)
			}
		case []any:
			for _, x := range v {
				walk(p+"[]", x)
			}
		default:
			seen[p] = true
		}
	}
	walk("", v)
	return slices.Sorted(maps.Keys(seen))
}

func iperf3Version(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		Start struct {
			Version string `json:"version"`
		} `json:"start"`
	}
	require.NoError(t, json.Unmarshal(b, &r))
	return r.Start.Version
}

// writeGolden writes iperf3's output's key paths to iperf3Golden.
func writeGolden(t *testing.T, out []byte) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", iperf3Version(t, out))
	fmt.Fprintf(&b, "# The key paths of its client's output, iperf3 -c 127.0.0.1 %s, as keyPaths\n", strings.Join(iperf3Args, " "))
	fmt.Fprintf(&b, "# lists them. Rewritten by go test -run TestIperf3KeyPaths -update-iperf3.\n")
	for _, p := range keyPaths(t, out) {
		fmt.Fprintln(&b, p)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(iperf3Golden), 0o755))
	require.NoError(t, os.WriteFile(iperf3Golden, b.Bytes(), 0o644))
}

// readGolden returns the golden file's iperf3 version and key paths.
func readGolden(t *testing.T) (version string, paths []string) {
	t.Helper()
	f, err := os.Open(iperf3Golden)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# ") && version == "":
			version = strings.TrimPrefix(l, "# ")
		case strings.HasPrefix(l, "#"), l == "":
		default:
			paths = append(paths, l)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, paths)
	return version, paths
}

// -w is sock_bufsize as given and the buffers' ceilings.
func TestBufferKeys(t *testing.T) {
	st := newStart(testStart{}, freshSettings{Window: 1 << 20}, "cookie")
	require.Equal(t, 1<<20, st.SockBufsize)
	require.Equal(t, 1<<20, st.SndbufActual)
	require.Equal(t, 1<<20, st.RcvbufActual)
}
