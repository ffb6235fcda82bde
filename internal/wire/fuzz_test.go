package wire

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fuzz targets check, for any input: no panic; a failure is one of the
// sentinel errors, returned as is; a success decodes to values that encode
// back to exactly the input (the format is canonical: fixed-width fields,
// lengths that must match, zero reserved bits and padding), with payloads
// that alias the input rather than copy it. The one exception is Initial
// padding, which may run past MinInitialSize: the re-encoding is then the
// input's prefix and the rest is zeros.
//
// `go test` replays the seeds below and testdata/fuzz; TestCorpusDoesNotAllocate
// also decodes every committed corpus entry under testing.AllocsPerRun.

// maxSeed keeps the 64 KiB payload rows of validDatagrams out of the seeds:
// the table tests cover them, and large seeds only slow mutation down.
const maxSeed = 4096

// seedDatagrams adds the valid and rejected datagrams of type t (of every
// type for t == 0) as seeds: their bodies if body, else the datagrams.
func seedDatagrams(f *testing.F, t Type, body bool) {
	add := func(dg []byte) {
		if len(dg) > maxSeed || len(dg) < HeaderLen || (t != 0 && Type(dg[1]) != t) {
			return
		}
		if body {
			f.Add(dg[HeaderLen:])
		} else {
			f.Add(dg)
		}
	}
	for _, tc := range validDatagrams() {
		add(appendDatagram(nil, tc.h, tc.f))
	}
	for _, tc := range rejectedDatagrams() {
		add(tc.dg)
	}
}

func requireSentinel(t *testing.T, err error) {
	t.Helper()
	require.True(t, isSentinel(err), "error %v is not a sentinel", err)
}

// requireAlias checks that sub is b[off:off+len(sub)], not a copy.
func requireAlias(t *testing.T, b []byte, off int, sub []byte) {
	t.Helper()
	require.Equal(t, len(b)-off, len(sub), "payload is not the rest of the input")
	if len(sub) > 0 {
		require.Same(t, &b[off], &sub[0], "payload is a copy")
	}
}

func FuzzParseHeader(f *testing.F) {
	seedDatagrams(f, 0, false)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := ParseHeader(b)
		if err != nil {
			requireSentinel(t, err)
			require.Nil(t, body)
			return
		}
		require.Equal(t, b[:HeaderLen], AppendHeader(nil, h))
		require.GreaterOrEqual(t, h.PN, int64(0))
		requireAlias(t, b, HeaderLen, body)
	})
}

func FuzzParseData(f *testing.F) {
	seedDatagrams(f, TypeData, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var d Data
		if err := ParseData(body, &d); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendData(nil, &d))
		require.GreaterOrEqual(t, d.Offset, int64(0))
		require.LessOrEqual(t, d.Offset+int64(len(d.Payload)), int64(MaxStreamOffset))
		requireAlias(t, body, DataOverhead, d.Payload)
	})
}

func FuzzParseUpdate(f *testing.F) {
	seedDatagrams(f, TypeUpdate, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var u Update
		if err := ParseUpdate(body, &u); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendUpdate(nil, &u))
		requireAlias(t, body, UpdateOverhead, u.Payload)
	})
}

func FuzzParseAck(f *testing.F) {
	seedDatagrams(f, TypeAck, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var a Ack
		if err := ParseAck(body, &a); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendAck(nil, &a))
		// The invariants an endpoint relies on, checked independently.
		require.GreaterOrEqual(t, a.MaxData, int64(0))
		for i, r := range a.Ranges[:a.NRanges] {
			require.LessOrEqual(t, int64(0), r.Smallest)
			require.LessOrEqual(t, r.Smallest, r.Largest)
			require.LessOrEqual(t, r.Largest, int64(MaxPacketNumber))
			if i > 0 {
				require.Less(t, r.Largest, a.Ranges[i-1].Smallest-1, "ranges %d and %d not descending with a gap", i-1, i)
			}
		}
		for _, s := range a.Samples[:a.NSamples] {
			require.GreaterOrEqual(t, s.PN, int64(0))
			require.LessOrEqual(t, s.PN, int64(MaxPacketNumber))
		}
	})
}

// requireInitial checks an accepted Initial datagram or body b against its
// re-encoding enc: b is enc followed by zeros.
func requireInitial(t *testing.T, b, enc []byte) {
	t.Helper()
	require.GreaterOrEqual(t, len(b), len(enc))
	require.Equal(t, enc, b[:len(enc)])
	require.Empty(t, bytes.TrimLeft(b[len(enc):], "\x00"), "non-zero padding accepted")
}

func FuzzParseInitial(f *testing.F) {
	seedDatagrams(f, TypeInitial, true)
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		// As an endpoint calls it: the datagram is the header plus body.
		var in Initial
		tok, clear, tokErr := ParseInitialToken(body, HeaderLen+len(body))
		if err := ParseInitial(body, HeaderLen+len(body), &in); err != nil {
			requireSentinel(t, err)
			if tokErr != nil {
				requireSentinel(t, tokErr)
			}
			return
		}
		// The token a listener reads alone (from a sealed Initial) is the
		// one the whole decode finds.
		require.NoError(t, tokErr)
		require.Equal(t, in.Token, tok)
		require.Equal(t, InitialClearLen(tok), clear)
		enc := AppendInitial(make([]byte, HeaderLen), in)[HeaderLen:]
		requireInitial(t, body, enc)
		require.LessOrEqual(t, len(in.Token), MaxTokenLen)
	})
}

func FuzzParseRetry(f *testing.F) {
	seedDatagrams(f, TypeRetry, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Retry
		if err := ParseRetry(body, &r); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendRetry(nil, &r))
		require.NotEmpty(t, r.Token)
		require.LessOrEqual(t, len(r.Token), MaxTokenLen)
		require.Len(t, r.Tag, RetryTagLen)
		requireAlias(t, body[:len(body)-RetryTagLen], 2, r.Token)
		requireAlias(t, body, len(body)-RetryTagLen, r.Tag)
	})
}

func FuzzParseClose(f *testing.F) {
	seedDatagrams(f, TypeClose, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var c Close
		if err := ParseClose(body, &c); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendClose(nil, &c))
		requireAlias(t, body, 5, c.Reason)
	})
}

func FuzzParseCrypto(f *testing.F) {
	seedDatagrams(f, TypeCrypto, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var c Crypto
		if err := ParseCrypto(body, &c); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendCrypto(nil, &c))
		require.LessOrEqual(t, c.Offset+int64(len(c.Data)), int64(MaxHandshakeBytes))
		requireAlias(t, body, CryptoOverhead, c.Data)
	})
}

func FuzzParseAccept(f *testing.F) {
	seedDatagrams(f, TypeAccept, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var a Accept
		if err := ParseAccept(body, &a); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendAccept(nil, &a))
	})
}

func FuzzParseVersionNegotiation(f *testing.F) {
	for _, tc := range versionNegotiations() {
		f.Add(AppendVersionNegotiation(nil, &tc))
	}
	seedDatagrams(f, 0, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		var v VersionNegotiation
		if err := ParseVersionNegotiation(b, &v); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, b, AppendVersionNegotiation(nil, &v))
		require.LessOrEqual(t, len(v.Versions), MaxVersions)
		requireAlias(t, b, HeaderLen+1, v.Versions)
	})
}

func FuzzParseStatelessReset(f *testing.F) {
	seedDatagrams(f, TypeStatelessReset, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var r StatelessReset
		if err := ParseStatelessReset(body, &r); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Len(t, body, StatelessResetTokenLen)
		require.Equal(t, body, AppendStatelessReset(nil, &r))
	})
}

func FuzzParsePathChallenge(f *testing.F) {
	seedDatagrams(f, TypePathChallenge, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var c PathChallenge
		if err := ParsePathChallenge(body, &c); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendPathChallenge(nil, &c))
	})
}

func FuzzParsePathResponse(f *testing.F) {
	seedDatagrams(f, TypePathResponse, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var r PathResponse
		if err := ParsePathResponse(body, &r); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendPathResponse(nil, &r))
	})
}

func FuzzParseCommit(f *testing.F) {
	seedDatagrams(f, TypeCommit, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var c Commit
		if err := ParseCommit(body, &c); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendCommit(nil, &c))
		require.GreaterOrEqual(t, c.Offset, int64(0))
		require.LessOrEqual(t, c.Offset, int64(MaxStreamOffset))
	})
}

func FuzzParseAckFrequency(f *testing.F) {
	seedDatagrams(f, TypeAckFrequency, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var a AckFrequency
		if err := ParseAckFrequency(body, &a); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendAckFrequency(nil, &a))
		require.GreaterOrEqual(t, a.Seq, int64(0))
		require.LessOrEqual(t, a.Seq, int64(MaxPacketNumber))
		require.Less(t, a.MaxAckDelayMicros, uint32(MaxAckDelayLimit))
	})
}

func FuzzParseNewToken(f *testing.F) {
	seedDatagrams(f, TypeNewToken, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		var nt NewToken
		if err := ParseNewToken(body, &nt); err != nil {
			requireSentinel(t, err)
			return
		}
		require.Equal(t, body, AppendNewToken(nil, &nt))
		require.NotEmpty(t, nt.Token)
		require.LessOrEqual(t, len(nt.Token), MaxTokenLen)
		requireAlias(t, body, 2, nt.Token)
	})
}

func FuzzParsePMTUProbe(f *testing.F) {
	seedDatagrams(f, TypePMTUProbe, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := ParsePMTUProbe(body); err != nil {
			requireSentinel(t, err)
			require.Less(t, bytes.Count(body, []byte{0}), len(body), "rejected all-zero padding")
			return
		}
		require.Equal(t, body, AppendPMTUProbe(make([]byte, 0, len(body)), len(body)))
	})
}

// FuzzDatagram decodes whole datagrams as an endpoint does (header, then the
// body by type) and re-encodes them.
func FuzzDatagram(f *testing.F) {
	seedDatagrams(f, 0, false)
	f.Fuzz(func(t *testing.T, dg []byte) {
		h, fr, err := parseDatagram(dg)
		if err != nil {
			requireSentinel(t, err)
			return
		}
		enc := appendDatagram(nil, h, fr)
		switch fr := fr.(type) {
		case Initial:
			requireInitial(t, dg, enc)
			return
		case *Data:
			requireAlias(t, dg, HeaderLen+DataOverhead, fr.Payload)
		case *Update:
			requireAlias(t, dg, HeaderLen+UpdateOverhead, fr.Payload)
		case *Close:
			requireAlias(t, dg, HeaderLen+5, fr.Reason)
		case *Accept:
			if fr.Params != nil {
				requireAlias(t, dg, HeaderLen+AcceptLen, fr.Params)
			}
		case *Crypto:
			requireAlias(t, dg, HeaderLen+CryptoOverhead, fr.Data)
		case *Retry:
			requireAlias(t, dg[:len(dg)-RetryTagLen], HeaderLen+2, fr.Token)
			requireAlias(t, dg, len(dg)-RetryTagLen, fr.Tag)
		case *NewToken:
			requireAlias(t, dg, HeaderLen+2, fr.Token)
		}
		require.Equal(t, dg, enc)
	})
}

// readCorpusFile decodes a one-value `go test fuzz v1` file holding a []byte.
func readCorpusFile(t *testing.T, path string) []byte {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	require.True(t, sc.Scan())
	require.Equal(t, "go test fuzz v1", sc.Text())
	require.True(t, sc.Scan())
	line := sc.Text()
	require.True(t, strings.HasPrefix(line, "[]byte(") && strings.HasSuffix(line, ")"), "%s: %q", path, line)
	v, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
	require.NoError(t, err, path)
	return []byte(v)
}

// TestCorpusDoesNotAllocate decodes every committed fuzz input, valid or
// not, with testing.AllocsPerRun: decoders allocate on no input. (Doing it
// inside the fuzz targets would cut their speed a hundredfold.)
func TestCorpusDoesNotAllocate(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "fuzz", "Fuzz*"))
	require.NoError(t, err)
	var e endpoint
	for _, dir := range dirs {
		target := filepath.Base(dir)
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		require.NoError(t, err)
		for _, path := range files {
			b := readCorpusFile(t, path)
			var fn func()
			switch target {
			case "FuzzParseHeader":
				fn = func() { sinkHeader, sinkBytes, sinkErr = ParseHeader(b) }
			case "FuzzParseData":
				fn = func() { sinkErr = ParseData(b, &e.d) }
			case "FuzzParseUpdate":
				fn = func() { sinkErr = ParseUpdate(b, &e.u) }
			case "FuzzParseAck":
				fn = func() { sinkErr = ParseAck(b, &e.a) }
			case "FuzzParseInitial":
				fn = func() { sinkErr = ParseInitial(b, HeaderLen+len(b), &e.in) }
			case "FuzzParseRetry":
				fn = func() { sinkErr = ParseRetry(b, &e.r) }
			case "FuzzParseClose":
				fn = func() { sinkErr = ParseClose(b, &e.c) }
			case "FuzzParseCrypto":
				fn = func() { sinkErr = ParseCrypto(b, &e.cr) }
			case "FuzzParseAccept":
				fn = func() { sinkErr = ParseAccept(b, &e.ac) }
			case "FuzzParseVersionNegotiation":
				var v VersionNegotiation
				fn = func() { sinkErr = ParseVersionNegotiation(b, &v) }
			case "FuzzParseStatelessReset":
				fn = func() { sinkErr = ParseStatelessReset(b, &e.sr) }
			case "FuzzParsePathChallenge":
				fn = func() { sinkErr = ParsePathChallenge(b, &e.pc) }
			case "FuzzParsePathResponse":
				fn = func() { sinkErr = ParsePathResponse(b, &e.pr) }
			case "FuzzParseCommit":
				fn = func() { sinkErr = ParseCommit(b, &e.cm) }
			case "FuzzParseAckFrequency":
				fn = func() { sinkErr = ParseAckFrequency(b, &e.af) }
			case "FuzzParsePMTUProbe":
				fn = func() { sinkErr = ParsePMTUProbe(b) }
			case "FuzzParseNewToken":
				fn = func() { sinkErr = ParseNewToken(b, &e.nt) }
			case "FuzzDatagram":
				fn = func() { sinkHeader, sinkErr = e.decode(b) }
			default:
				t.Fatalf("corpus for unknown target %s", target)
			}
			require.Zero(t, testing.AllocsPerRun(10, fn), path)
		}
	}
}
