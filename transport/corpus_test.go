package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// The malformed-packet corpus: one datagram per file under
// testdata/malformed/<target>/, sent one by one to a live listener and a
// live client connection. Each must be rejected (nothing delivered, no
// connection ended, no state created) and counted: exactly one drop
// counter moves, by exactly one.
//
// Targets (directories):
//
//	listener-from-peer     to the listener from the live client's address
//	listener-from-foreign  to the listener from another address
//	client                 to the live client from the server's address
//
// A file whose connection ID is corpusLiveID has it replaced by the live
// connection's before it is sent. The files are made by
//
//	go test -run TestGenerateMalformedCorpus ./transport -update-corpus
//
// and the same test without the flag checks they are up to date.
var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/malformed from malformedCorpus")

const corpusDir = "testdata/malformed"

// corpusLiveID stands for the live connection's ID in the corpus files.
const corpusLiveID uint64 = 0x4c4956454c495645 // "LIVELIVE"

// corpusWall is the timestamp of the corpus's headers (fixed, so the files
// are reproducible).
const corpusWall int64 = 1_764_547_200_000_000 // 2025-12-01 00:00 UTC, µs

type corpusEntry struct {
	dir, name string
	b         []byte
}

// malformedCorpus builds the corpus.
func malformedCorpus() []corpusEntry {
	rng := rand.New(rand.NewPCG(2025, 12))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	hdr := func(t wire.Type, flags, epoch uint8, id uint64, pn int64) []byte {
		return wire.AppendHeader(nil, wire.Header{Type: t, Flags: flags, Epoch: epoch, ConnID: id, PN: pn, Timestamp: corpusWall})
	}
	// sealed is a protected-looking packet: a valid header and a body of
	// made-up ciphertext and tag.
	sealed := func(t wire.Type, epoch uint8, id uint64, pn int64, body int) []byte {
		return append(hdr(t, wire.FlagProtected, epoch, id, pn), rnd(body)...)
	}
	const live = corpusLiveID
	var out []corpusEntry
	add := func(dir, name string, b []byte) { out = append(out, corpusEntry{dir, name, b}) }
	withByte := func(b []byte, i int, v byte) []byte { b = slices.Clone(b); b[i] = v; return b }

	// Header-level: what no header parser may accept. Sent to both ends;
	// the listener's parser or the client connection's drops them.
	headerLevel := func(dir string) {
		good := sealed(wire.TypeData, wire.EpochApp0, live, 1<<40, 64)
		for _, n := range []int{1, 4, 11, 12, 20, 27} {
			add(dir, fmt.Sprintf("truncated-header-%d", n), slices.Clone(good[:n]))
		}
		for _, v := range []byte{0, wire.Version - 1, wire.Version + 1, 0xff} {
			add(dir, fmt.Sprintf("version-%d", v), withByte(good, 0, v))
		}
		for _, ty := range []byte{0x00, 0x09, 0x0b, 0x7f, 0xff} {
			add(dir, fmt.Sprintf("type-%#02x", ty), withByte(good, 1, ty))
		}
		for bit := 1; bit <= 6; bit++ {
			add(dir, fmt.Sprintf("reserved-flag-bit-%d", bit), withByte(good, 2, wire.FlagProtected|1<<bit))
		}
		for _, ty := range []wire.Type{wire.TypePing, wire.TypeUpdate, wire.TypeClose, wire.TypeCrypto, wire.TypeAccept} {
			add(dir, "flag-bit-0-on-"+ty.String(), append(hdr(ty, wire.FlagProtected|1, wire.EpochApp0, live, 1<<40), rnd(32)...))
		}
		add(dir, "protected-initial", sealed(wire.TypeInitial, wire.EpochApp0, live, 1<<40, wire.MinInitialSize-wire.HeaderLen))
		add(dir, "protected-retry", sealed(wire.TypeRetry, wire.EpochApp0, live, 1<<40, 64))
		add(dir, "protected-epoch-0", withByte(good, 3, wire.EpochNone))
		add(dir, "clear-with-epoch-app0", withByte(good, 2, 0))
		add(dir, "clear-with-epoch-handshake", withByte(withByte(good, 2, 0), 3, wire.EpochHandshake))
		add(dir, "epoch-6", withByte(good, 3, wire.EpochInitial+1))
		add(dir, "data-under-initial-keys", withByte(good, 3, wire.EpochInitial))
		add(dir, "protected-initial-under-handshake-keys", sealed(wire.TypeInitial, wire.EpochHandshake, live, 1<<40, wire.MinInitialSize-wire.HeaderLen))
		add(dir, "retry-under-initial-keys", sealed(wire.TypeRetry, wire.EpochInitial, live, 1<<40, 64))
		add(dir, "epoch-255", withByte(good, 3, 0xff))
		pnMax := slices.Clone(good)
		binary.BigEndian.PutUint64(pnMax[12:], wire.MaxPacketNumber+1)
		add(dir, "packet-number-2^62", pnMax)
		pnMax = slices.Clone(good)
		binary.BigEndian.PutUint64(pnMax[12:], ^uint64(0))
		add(dir, "packet-number-2^64-1", pnMax)
		add(dir, "protected-no-body", hdr(wire.TypeData, wire.FlagProtected, wire.EpochApp0, live, 1<<40))
		add(dir, "protected-shorter-than-tag", sealed(wire.TypeData, wire.EpochApp0, live, 1<<40, wire.ProtectedOverhead-1))
		add(dir, "random-bytes", rnd(200))
		add(dir, "random-bytes-full-size", rnd(1200))
	}

	// Valid headers for the live connection, from its peer's address:
	// packet protection and the replay window must drop them.
	liveSession := func(dir string) {
		types := []wire.Type{wire.TypeData, wire.TypeAck, wire.TypeUpdate, wire.TypePing, wire.TypeClose, wire.TypeCrypto, wire.TypeAccept}
		pn := int64(1 << 40)
		for _, ty := range types {
			for _, ep := range []uint8{wire.EpochHandshake, wire.EpochApp0, wire.EpochApp1} {
				pn++
				add(dir, fmt.Sprintf("bad-tag-%s-epoch-%d", ty, ep), sealed(ty, ep, live, pn, wire.ProtectedOverhead+rng.IntN(200)))
			}
		}
		// Under the Initial keys, which anyone who saw the connection ID
		// derives: sealed correctly (when sent: the file holds the
		// plaintext, sealInitialKeys), and still taken by no open
		// connection.
		for _, ty := range []wire.Type{wire.TypeCrypto, wire.TypeClose} {
			pn++
			body := wire.AppendClose(nil, &wire.Close{Code: 1, Reason: []byte("forged")})
			if ty == wire.TypeCrypto {
				body = wire.AppendCrypto(nil, &wire.Crypto{Data: rnd(64)})
			}
			add(dir, sealOnSend+ty.String(), append(hdr(ty, wire.FlagProtected, wire.EpochInitial, live, pn), body...))
		}
		add(dir, "bad-tag-tag-only", sealed(wire.TypeData, wire.EpochApp0, live, 1<<41, wire.ProtectedOverhead))
		add(dir, "bad-tag-full-size", sealed(wire.TypeData, wire.EpochApp0, live, 1<<41+1, 1200-wire.HeaderLen))
		add(dir, "bad-tag-old-packet-number-0", sealed(wire.TypeData, wire.EpochApp0, live, 0, 64))
		add(dir, "bad-tag-old-packet-number-1-control", sealed(wire.TypeAck, wire.EpochApp0, live, 1, 64))
		add(dir, "bad-tag-largest-packet-number", sealed(wire.TypePing, wire.EpochApp0, live, wire.MaxPacketNumber, 16))

		// In the clear after the handshake: each frame a forger would
		// like to land.
		var ack wire.Ack
		ack.NRanges = 1
		ack.Ranges[0] = wire.AckRange{Largest: 1 << 20, Smallest: 0}
		ack.MaxData = 1 << 40
		add(dir, "clear-data-fin", wire.AppendData(hdr(wire.TypeData, wire.FlagFIN, 0, live, 7), &wire.Data{Payload: []byte("EVIL")}))
		add(dir, "clear-ack-everything", wire.AppendAck(hdr(wire.TypeAck, 0, 0, live, 8), &ack))
		add(dir, "clear-update-an-hour-ahead", wire.AppendUpdate(hdr(wire.TypeUpdate, 0, 0, live, 9), &wire.Update{Generated: corpusWall + 3600e6, Payload: []byte("x")}))
		add(dir, "clear-ping", hdr(wire.TypePing, 0, 0, live, 10))
		add(dir, "clear-close", wire.AppendClose(hdr(wire.TypeClose, 0, 0, live, 11), &wire.Close{}))
		add(dir, "clear-crypto-after-handshake", wire.AppendCrypto(hdr(wire.TypeCrypto, 0, 0, live, 12), &wire.Crypto{Offset: 0, Data: rnd(64)}))
		add(dir, "clear-accept", hdr(wire.TypeAccept, 0, 0, live, 13))
		add(dir, "clear-retry", wire.AppendRetry(hdr(wire.TypeRetry, 0, 0, live, 14), &wire.Retry{Token: rnd(retryTokenLen)}))
		// Malformed bodies, in the clear (a body is parsed only once it
		// is authenticated, so protection drops these first).
		tooMany := append(make([]byte, 12), wire.MaxAckRanges+1, 0)
		tooMany = append(tooMany, make([]byte, (wire.MaxAckRanges+1)*16)...)
		add(dir, "clear-ack-too-many-ranges", append(hdr(wire.TypeAck, 0, 0, live, 15), tooMany...))
		add(dir, "clear-ack-too-many-samples", append(hdr(wire.TypeAck, 0, 0, live, 16), append(make([]byte, 12), 0, 255)...))
		var asc wire.Ack
		asc.NRanges = 2
		asc.Ranges[0] = wire.AckRange{Largest: 5, Smallest: 1}
		asc.Ranges[1] = wire.AckRange{Largest: 50, Smallest: 10}
		add(dir, "clear-ack-ranges-ascending", wire.AppendAck(hdr(wire.TypeAck, 0, 0, live, 17), &asc))
		d := wire.AppendData(hdr(wire.TypeData, 0, 0, live, 18), &wire.Data{Payload: []byte("EVIL")})
		binary.BigEndian.PutUint16(d[wire.HeaderLen+24:], 5000)
		add(dir, "clear-data-length-past-datagram", d)
		d = wire.AppendData(hdr(wire.TypeData, 0, 0, live, 19), &wire.Data{Offset: wire.MaxStreamOffset, Payload: []byte("EVIL")})
		add(dir, "clear-data-offset-past-max", d)
		add(dir, "clear-initial-after-handshake", wire.AppendInitial(hdr(wire.TypeInitial, 0, 0, live, 0), wire.Initial{Token: rnd(retryTokenLen), Crypto: rnd(300)}))
	}

	headerLevel("listener-from-peer")
	liveSession("listener-from-peer")

	// From a foreign address: the live connection's ID (path binding),
	// unknown connections, and Initials that must not open one.
	const dir = "listener-from-foreign"
	for i, ty := range []wire.Type{wire.TypeData, wire.TypeAck, wire.TypeUpdate, wire.TypePing, wire.TypeClose} {
		add(dir, "live-id-"+ty.String(), sealed(ty, wire.EpochApp0, live, 1<<40+int64(i), 48))
	}
	add(dir, "live-id-clear-close", wire.AppendClose(hdr(wire.TypeClose, 0, 0, live, 0), &wire.Close{}))
	add(dir, "live-id-initial", wire.AppendInitial(hdr(wire.TypeInitial, 0, 0, live, 0), wire.Initial{Crypto: rnd(300)}))
	for i, ty := range []wire.Type{wire.TypeData, wire.TypeAck, wire.TypeUpdate, wire.TypePing, wire.TypeClose, wire.TypeCrypto, wire.TypeAccept} {
		add(dir, "unknown-connection-"+ty.String(), sealed(ty, wire.EpochApp0, 0x0123456789abcd00+uint64(i), 5, 48))
	}
	add(dir, "unknown-connection-clear-close", wire.AppendClose(hdr(wire.TypeClose, 0, 0, 0x0123456789abcd10, 0), &wire.Close{}))
	add(dir, "unknown-connection-clear-accept", hdr(wire.TypeAccept, 0, 0, 0x0123456789abcd11, 0))
	add(dir, "retry-to-a-server", wire.AppendRetry(hdr(wire.TypeRetry, 0, 0, 0x0123456789abcd12, 0), &wire.Retry{Token: rnd(retryTokenLen)}))
	// Initials for new connections.
	newID := func(i int) uint64 { return 0x0fedcba987654300 + uint64(i) }
	initial := func(i int, in wire.Initial) []byte {
		return wire.AppendInitial(hdr(wire.TypeInitial, 0, 0, newID(i), 0), in)
	}
	ok := initial(0, wire.Initial{Crypto: rnd(300)})
	add(dir, "initial-too-short-1199", slices.Clone(ok[:wire.MinInitialSize-1]))
	add(dir, "initial-header-only", hdr(wire.TypeInitial, 0, 0, newID(1), 0))
	add(dir, "initial-short-body-padded-out", append(hdr(wire.TypeInitial, 0, 0, newID(2), 0), make([]byte, 8)...)) // 36 bytes
	b := initial(3, wire.Initial{Crypto: rnd(300)})
	b[len(b)-1] = 1
	add(dir, "initial-nonzero-padding", b)
	b = initial(4, wire.Initial{Crypto: rnd(300)})
	binary.BigEndian.PutUint32(b[wire.HeaderLen+2:], 1)
	add(dir, "initial-options-set", b)
	b = initial(5, wire.Initial{Crypto: rnd(300)})
	binary.BigEndian.PutUint16(b[wire.HeaderLen:], wire.MaxTokenLen+1)
	add(dir, "initial-oversize-token", b)
	b = initial(6, wire.Initial{Crypto: rnd(300)})
	binary.BigEndian.PutUint16(b[wire.HeaderLen:], 0xffff)
	add(dir, "initial-token-length-past-datagram", b)
	b = initial(7, wire.Initial{Crypto: rnd(300)})
	binary.BigEndian.PutUint16(b[wire.HeaderLen+10:], 0xffff)
	add(dir, "initial-crypto-length-past-datagram", b)
	b = initial(8, wire.Initial{Crypto: rnd(300)})
	b[2] = 1 // no flag is defined on an Initial
	add(dir, "initial-flag-bit-0", b)
	add(dir, "initial-no-token", initial(10, wire.Initial{Crypto: rnd(300)}))
	add(dir, "initial-no-token-no-crypto", initial(11, wire.Initial{}))
	add(dir, "initial-bad-token", initial(12, wire.Initial{Token: rnd(retryTokenLen), Crypto: rnd(300)}))
	add(dir, "initial-bad-token-short", initial(13, wire.Initial{Token: rnd(8), Crypto: rnd(300)}))
	add(dir, "initial-bad-token-max-length", initial(14, wire.Initial{Token: rnd(wire.MaxTokenLen), Crypto: rnd(300)}))
	add(dir, "initial-zero-token", initial(15, wire.Initial{Token: make([]byte, retryTokenLen), Crypto: rnd(300)}))
	// Sealed as a TLS client seals them (the Initial keys of their own
	// connection ID): a token-less one draws a Retry before any key is
	// derived, damaged or not; one with a token is opened first, and a
	// damaged one dropped as unauthenticated, not refused.
	add(dir, "sealed-initial-no-token", sealedInitial(newID(16), 0, nil, 0, rnd(300)))
	b = sealedInitial(newID(17), 0, nil, 0, rnd(300))
	b[len(b)-1] ^= 1
	add(dir, "sealed-initial-no-token-bad-tag", b)
	add(dir, "sealed-initial-bad-token", sealedInitial(newID(18), 0, rnd(retryTokenLen), 0, rnd(300)))
	b = sealedInitial(newID(19), 0, rnd(retryTokenLen), 0, rnd(300))
	b[wire.HeaderLen+5] ^= 1 // in the token: readable, and authenticated
	add(dir, "sealed-initial-token-bit-flipped", b)
	b = sealedInitial(newID(20), 0, rnd(retryTokenLen), 0, rnd(300))
	b[len(b)-100] ^= 1
	add(dir, "sealed-initial-with-token-bad-tag", b)
	b = sealedInitial(newID(21), 0, rnd(retryTokenLen), 0, rnd(300))
	b[7] ^= 1 // the connection ID: another connection's keys
	add(dir, "sealed-initial-connection-id-bit-flipped", b)
	add(dir, "random-bytes", rnd(100))

	headerLevel("client")
	liveSession("client")
	add("client", "wrong-connection-id", sealed(wire.TypeData, wire.EpochApp0, 0x0123456789abcdef, 1<<40, 64))
	add("client", "wrong-connection-id-clear-close", wire.AppendClose(hdr(wire.TypeClose, 0, 0, 0x0123456789abcdef, 0), &wire.Close{}))
	add("client", "retry-after-handshake-zero-token", wire.AppendRetry(hdr(wire.TypeRetry, 0, 0, live, 0), &wire.Retry{Token: make([]byte, 1)}))

	// 0-RTT packets (epoch 4) on an open connection: a listener drops
	// early stream data whatever its keys, and early updates once its
	// 0-RTT keys are gone (or were never there); a client takes none.
	add("listener-from-peer", "early-data-epoch-4", sealed(wire.TypeData, wire.EpochEarly, live, 1<<42, 64))
	add("listener-from-peer", "early-update-after-handshake", sealed(wire.TypeUpdate, wire.EpochEarly, live, 1<<42+1, 64))
	add("listener-from-peer", "early-ping-epoch-4", sealed(wire.TypePing, wire.EpochEarly, live, 1<<42+2, 16))
	add("listener-from-foreign", "live-id-early-update", sealed(wire.TypeUpdate, wire.EpochEarly, live, 1<<42+3, 48))
	add("client", "early-update-to-a-client", sealed(wire.TypeUpdate, wire.EpochEarly, live, 1<<42+4, 64))

	for i := range out {
		out[i].name = fmt.Sprintf("%03d-%s.bin", i, out[i].name)
	}
	return out
}

// sealOnSend starts the name of a corpus file that holds a packet to be
// sealed under the Initial keys of the live connection ID as it is sent
// (sealInitialKeys): its header (protected, epoch Initial) and plaintext.
const sealOnSend = "initial-keys-sealed-on-send-"

// sealInitialKeys seals packet b (header and plaintext body) under the
// Initial keys of its connection ID, the server's when toClient: what
// anyone who saw the connection ID can make.
func sealInitialKeys(b []byte, toClient bool) []byte {
	k, err := seal.NewInitial(binary.BigEndian.Uint64(b[4:]), !toClient)
	if err != nil {
		panic(err)
	}
	return k.Seal(b, wire.HeaderLen, binary.BigEndian.Uint64(b[12:]), true) // before the tag, ParseHeader would call it short
}

// TestGenerateMalformedCorpus writes the corpus with -update-corpus, and
// otherwise checks that the committed files are what malformedCorpus
// makes.
func TestGenerateMalformedCorpus(t *testing.T) {
	entries := malformedCorpus()
	if *updateCorpus {
		require.NoError(t, os.RemoveAll(corpusDir))
		for _, e := range entries {
			require.NoError(t, os.MkdirAll(filepath.Join(corpusDir, e.dir), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(corpusDir, e.dir, e.name), e.b, 0o644))
		}
	}
	onDisk, err := loadCorpus()
	require.NoError(t, err)
	require.Len(t, onDisk, len(entries), "corpus out of date: go test -run TestGenerateMalformedCorpus ./transport -update-corpus")
	for i, e := range entries {
		require.Equal(t, e.dir+"/"+e.name, onDisk[i].dir+"/"+onDisk[i].name)
		require.True(t, bytes.Equal(e.b, onDisk[i].b), "%s/%s differs", e.dir, e.name)
	}
}

// loadCorpus reads the committed corpus, sorted by directory and name.
func loadCorpus() ([]corpusEntry, error) {
	var out []corpusEntry
	err := filepath.WalkDir(corpusDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, path)
		out = append(out, corpusEntry{dir: filepath.Dir(rel), name: filepath.Base(rel), b: b})
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// dropCounters are the counters of datagrams dropped unread: a listener's
// and a connection's, by name.
func dropCounters(l *ListenerStats, c Stats) map[string]int64 {
	m := map[string]int64{
		"conn.Malformed": c.Malformed, "conn.Unauthenticated": c.Unauthenticated, "conn.Replayed": c.Replayed,
		"conn.Duplicates": c.Duplicates, "conn.StreamFramesDropped": c.StreamFramesDropped, "conn.UpdatesRejected": c.UpdatesRejected,
		"conn.UpdatesStale": c.UpdatesStale, "conn.EarlyDropped": c.EarlyDropped,
	}
	if l != nil {
		for k, v := range map[string]int64{
			"listener.RetriesSent": l.RetriesSent, "listener.VersionNegotiations": l.VersionNegotiations, "listener.InitialsBadToken": l.InitialsBadToken,
			"listener.InitialsUnauthenticated": l.InitialsUnauthenticated,
			"listener.InitialsTotalLimit":      l.InitialsTotalLimit, "listener.InitialsSourceLimit": l.InitialsSourceLimit,
			"listener.InitialsRateLimited": l.InitialsRateLimited, "listener.InitialsBacklogFull": l.InitialsBacklogFull,
			"listener.InitialsSourceHandshakeLimit": l.InitialsSourceHandshakeLimit,
			"listener.WrongAddress":                 l.WrongAddress, "listener.NoConnection": l.NoConnection, "listener.Malformed": l.Malformed,
		} {
			m[k] = v
		}
	}
	return m
}

// counterMoved waits until the counters read by snap differ from before,
// and returns the one that moved; it fails unless exactly one moved, by
// exactly one.
func counterMoved(t *testing.T, what string, before map[string]int64, snap func() map[string]int64) string {
	t.Helper()
	var after map[string]int64
	moved := func() (sum int64) {
		after = snap()
		for k, v := range after {
			sum += v - before[k]
		}
		return sum
	}
	pollUntil(3*time.Second, func() bool { return moved() != 0 })
	var names []string
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			names = append(names, fmt.Sprintf("%s%+d", k, d))
		}
	}
	sort.Strings(names)
	require.Len(t, names, 1, "%s: counters moved: %v", what, names)
	require.True(t, strings.HasSuffix(names[0], "+1"), "%s: %v", what, names)
	return strings.TrimSuffix(names[0], "+1")
}

// Every datagram of the corpus, and replays of the live connection's own
// genuine packets, sent to a live listener and a live client connection
// (through a relay that records the genuine packets: its address is the
// client's to the listener and the server's to the client). Each is
// rejected and counted by exactly one counter, nothing reaches the
// application, no connection ends and the listener keeps no new state;
// the connection works afterwards.
func TestMalformedCorpusRejectedAndCounted(t *testing.T) {
	// Registered first, so it runs after every other cleanup.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	corpus, err := loadCorpus()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(corpus), 50)

	l := listen(t, Config{})
	relay := newCapturingRelay(t, l.Addr().(*net.UDPAddr), 64)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, relay.addr().String(), testConfig(Config{}))
	require.NoError(t, err)
	defer cli.Close()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	defer srv.Close()

	// A genuine exchange both ways, stream and updates: the packets the
	// replays repeat.
	exchange := func(from, to *Conn, msg string) {
		_, err := from.Write([]byte(msg))
		require.NoError(t, err)
		buf := make([]byte, 64)
		n, err := to.Read(buf)
		require.NoError(t, err)
		require.Equal(t, msg, string(buf[:n]))
		require.NoError(t, from.SendUpdate([]byte(msg)))
		u, err := to.ReadUpdate(ctx)
		require.NoError(t, err)
		require.Equal(t, msg, string(u.Payload))
	}
	exchange(cli, srv, "hello")
	exchange(srv, cli, "hello back")
	// The ACKs are in: every byte and update both ways acknowledged.
	require.Eventually(t, func() bool {
		return cli.Stats().StreamBytesAcked == int64(len("hello")) && srv.Stats().StreamBytesAcked == int64(len("hello back"))
	}, 5*time.Second, time.Millisecond)
	replays, answers := relay.packets(), relay.answers()
	require.NotEmpty(t, replays)
	require.NotEmpty(t, answers)

	cli.mu.Lock()
	liveID := cli.s.ConnID()
	cli.mu.Unlock()
	foreign, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer foreign.Close()
	go drain(foreign) // Retries

	listenerSnap := func() map[string]int64 { st := l.Stats(); return dropCounters(&st, srv.Stats()) }
	clientSnap := func() map[string]int64 { return dropCounters(nil, cli.Stats()) }
	send := map[string]func([]byte) error{
		"listener-from-peer":    func(b []byte) error { _, err := relay.conn.WriteToUDP(b, l.Addr().(*net.UDPAddr)); return err },
		"listener-from-foreign": func(b []byte) error { _, err := foreign.WriteToUDP(b, l.Addr().(*net.UDPAddr)); return err },
		"client":                func(b []byte) error { _, err := relay.conn.WriteToUDP(b, relay.clientAddr()); return err },
	}
	snap := map[string]func() map[string]int64{
		"listener-from-peer": listenerSnap, "listener-from-foreign": listenerSnap, "client": clientSnap,
	}
	for _, r := range replays {
		corpus = append(corpus, corpusEntry{"listener-from-peer", "replay-genuine", r})
		corpus = append(corpus, corpusEntry{"listener-from-foreign", "replay-genuine", r})
	}
	for _, r := range answers {
		corpus = append(corpus, corpusEntry{"client", "replay-genuine", r})
	}

	sent := map[string]int{}
	byCounter := map[string]map[string]int{}
	for _, e := range corpus {
		b := slices.Clone(e.b)
		if len(b) >= 12 && binary.BigEndian.Uint64(b[4:]) == corpusLiveID {
			binary.BigEndian.PutUint64(b[4:], liveID)
		}
		if strings.Contains(e.name, sealOnSend) {
			b = sealInitialKeys(b, e.dir == "client")
		}
		fn, ok := send[e.dir]
		require.True(t, ok, "unknown corpus directory %s", e.dir)
		before := snap[e.dir]()
		require.NoError(t, fn(b))
		c := counterMoved(t, e.dir+"/"+e.name, before, snap[e.dir])
		sent[e.dir]++
		if byCounter[e.dir] == nil {
			byCounter[e.dir] = map[string]int{}
		}
		byCounter[e.dir][c]++
	}
	for dir, n := range sent {
		t.Logf("%s: %d sent, %d counted: %v", dir, n, n, byCounter[dir])
	}

	// Nothing delivered, nothing ended, no state.
	for _, c := range []*Conn{cli, srv} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		n, err := c.Read(make([]byte, 64))
		require.Zero(t, n)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		uctx, ucancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = c.ReadUpdate(uctx)
		ucancel()
		require.True(t, errors.Is(err, context.DeadlineExceeded), "an update was delivered: %v", err)
		require.NoError(t, c.Err())
	}
	st := l.Stats()
	require.Equal(t, 1, st.Connections)
	require.Zero(t, st.AcceptQueue)
	require.Equal(t, 1, l.t.connections())
	exchange(cli, srv, "still here")
	exchange(srv, cli, "still here too")
}

// Datagrams the socket layer drops before anything counts them: an empty
// one (the receive batch's segment loop yields nothing for a zero-length
// datagram) and one longer than the largest accepted (rxBatch.read drops
// oversize and truncated datagrams silently, recv_linux.go and
// recv_other.go). Both are rejected, but a flood of them leaves no trace
// in Stats. The test fails today; it is skipped until the receive path
// counts them (as Listener.Stats' Malformed and the client's
// Stats.Malformed, say).
func TestUncountedDatagramsCounted(t *testing.T) {
	l := listen(t, Config{})
	foreign, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer foreign.Close()
	snap := func() map[string]int64 { st := l.Stats(); return dropCounters(&st, Stats{}) }
	for _, b := range [][]byte{{}, make([]byte, maxAccepted(1200)+1)} {
		t.Run(fmt.Sprintf("%d-bytes", len(b)), func(t *testing.T) {
			before := snap()
			_, err := foreign.WriteToUDP(b, l.Addr().(*net.UDPAddr))
			require.NoError(t, err)
			counterMoved(t, fmt.Sprintf("%d-byte datagram", len(b)), before, snap)
		})
	}
}
