package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rawBody stands for a protected body: ciphertext the session opens, so
// the test endpoint below carries whatever follows the header unchanged.
type rawBody []byte

// pingPadding stands for a Ping body: that many zero bytes.
type pingPadding int

// probePadding stands for a PMTU probe's body: that many zero bytes.
type probePadding int

// endpoint decodes datagrams into frames it reuses, as a receive loop does,
// so decoding through it must not allocate either.
type endpoint struct {
	in Initial
	r  Retry
	d  Data
	u  Update
	a  Ack
	c  Close
	cr Crypto
	ac Accept
	sr StatelessReset
	pc PathChallenge
	pr PathResponse
	cm Commit
	af AckFrequency
	nt NewToken
}

// decode parses the header, then the body by type.
func (e *endpoint) decode(dg []byte) (Header, error) {
	h, body, err := ParseHeader(dg)
	if err != nil || h.Flags&FlagProtected != 0 {
		return h, err // a protected body is ciphertext: the session opens it
	}
	switch h.Type {
	case TypeInitial:
		err = ParseInitial(body, len(dg), &e.in)
	case TypeAccept:
		err = ParseAccept(body, &e.ac)
	case TypeData:
		err = ParseData(body, &e.d)
	case TypeUpdate:
		err = ParseUpdate(body, &e.u)
	case TypeAck:
		err = ParseAck(body, &e.a)
	case TypeClose:
		err = ParseClose(body, &e.c)
	case TypePing:
		err = ParsePing(body)
	case TypePMTUProbe:
		err = ParsePMTUProbe(body)
	case TypeCrypto:
		err = ParseCrypto(body, &e.cr)
	case TypeRetry:
		err = ParseRetry(body, &e.r)
	case TypeStatelessReset:
		err = ParseStatelessReset(body, &e.sr)
	case TypePathChallenge:
		err = ParsePathChallenge(body, &e.pc)
	case TypePathResponse:
		err = ParsePathResponse(body, &e.pr)
	case TypeCommit:
		err = ParseCommit(body, &e.cm)
	case TypeAckFrequency:
		err = ParseAckFrequency(body, &e.af)
	case TypeNewToken:
		err = ParseNewToken(body, &e.nt)
	default:
		panic(fmt.Sprintf("ParseHeader accepted type %#x", uint8(h.Type)))
	}
	return h, err
}

// parseDatagram decodes dg and returns its frame: an Initial, rawBody,
// *Data, *Update, *Ack, *Close, *Retry, or nil for Ping.
func parseDatagram(dg []byte) (Header, any, error) {
	e := new(endpoint)
	h, err := e.decode(dg)
	if err != nil {
		return h, nil, err
	}
	if h.Flags&FlagProtected != 0 {
		return h, rawBody(dg[HeaderLen:]), nil
	}
	switch h.Type {
	case TypeInitial:
		return h, e.in, nil
	case TypeAccept:
		return h, &e.ac, nil
	case TypeData:
		return h, &e.d, nil
	case TypeUpdate:
		return h, &e.u, nil
	case TypeAck:
		return h, &e.a, nil
	case TypeClose:
		return h, &e.c, nil
	case TypeCrypto:
		return h, &e.cr, nil
	case TypeRetry:
		return h, &e.r, nil
	case TypeStatelessReset:
		return h, &e.sr, nil
	case TypePing:
		if n := len(dg) - HeaderLen; n > 0 {
			return h, pingPadding(n), nil
		}
	case TypePathChallenge:
		return h, &e.pc, nil
	case TypePathResponse:
		return h, &e.pr, nil
	case TypeCommit:
		return h, &e.cm, nil
	case TypeAckFrequency:
		return h, &e.af, nil
	case TypeNewToken:
		return h, &e.nt, nil
	case TypePMTUProbe:
		return h, probePadding(len(dg) - HeaderLen), nil
	}
	return h, nil, nil
}

// appendDatagram encodes a whole datagram; f is as parseDatagram returns.
// For an Initial, b must be empty (the padding counts from b[0]).
func appendDatagram(b []byte, h Header, f any) []byte {
	b = AppendHeader(b, h)
	switch f := f.(type) {
	case Initial:
		return AppendInitial(b, f)
	case rawBody:
		return append(b, f...)
	case *Data:
		return AppendData(b, f)
	case *Update:
		return AppendUpdate(b, f)
	case *Ack:
		return AppendAck(b, f)
	case *Close:
		return AppendClose(b, f)
	case *Crypto:
		return AppendCrypto(b, f)
	case *Retry:
		return AppendRetry(b, f)
	case *Accept:
		return AppendAccept(b, f)
	case *StatelessReset:
		return AppendStatelessReset(b, f)
	case pingPadding:
		return append(b, make([]byte, f)...)
	case *PathChallenge:
		return AppendPathChallenge(b, f)
	case *PathResponse:
		return AppendPathResponse(b, f)
	case *Commit:
		return AppendCommit(b, f)
	case *AckFrequency:
		return AppendAckFrequency(b, f)
	case *NewToken:
		return AppendNewToken(b, f)
	case probePadding:
		return AppendPMTUProbe(b, int(f))
	case nil:
		return b
	}
	panic(fmt.Sprintf("unknown frame %T", f))
}

// sentinels are the only errors a decoder may return.
var sentinels = []error{ErrShort, ErrVersion, ErrType, ErrReserved, ErrLength, ErrTooMany, ErrRanges, ErrPacketNum, ErrValue}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if err == s { // not errors.Is: decoders return the sentinel itself, unwrapped
			return true
		}
	}
	return false
}

// fullAck has every range and sample in use and the extreme field values:
// the largest range ends at MaxPacketNumber, the smallest at 0, gaps of
// one missing number, OWD samples of both signs and both int32 limits.
func fullAck() *Ack {
	a := &Ack{DelayMicros: math.MaxUint32, MaxData: MaxStreamOffset, NRanges: MaxAckRanges, NSamples: MaxAckSamples}
	a.Ranges[0] = AckRange{Largest: MaxPacketNumber, Smallest: MaxPacketNumber - 5}
	for i := 1; i < MaxAckRanges; i++ {
		lo := int64(MaxAckRanges-1-i) * 10 // last range is [5, 0]
		a.Ranges[i] = AckRange{Largest: lo + 5, Smallest: lo}
	}
	a.Ranges[1].Largest = MaxPacketNumber - 7 // only MaxPacketNumber−6 missing
	a.Ranges[1].Smallest = 1 << 40
	for i := range MaxAckSamples {
		a.Samples[i] = OWDSample{PN: MaxPacketNumber - int64(i), OWDMicros: int32(i-MaxAckSamples/2) * 1000}
	}
	a.Samples[0].OWDMicros = math.MinInt32
	a.Samples[1].OWDMicros = math.MaxInt32
	a.Samples[2].PN = 0
	return a
}

type datagramCase struct {
	name string
	h    Header
	f    any
}

// validDatagrams covers every frame type and the limits of every field.
func validDatagrams() []datagramCase {
	big := bytes.Repeat([]byte{0xa5}, math.MaxUint16)
	reason := bytes.Repeat([]byte("r"), 255)
	token := bytes.Repeat([]byte{0x5a}, MaxTokenLen)
	hdr := func(t Type, flags uint8) Header {
		return Header{Type: t, Flags: flags, ConnID: 0x0123456789abcdef, PN: 42, Timestamp: 1_700_000_000_000_000}
	}
	return []datagramCase{
		{"initial", hdr(TypeInitial, 0), Initial{}},
		{"initial extreme header", Header{Type: TypeInitial, ConnID: math.MaxUint64, PN: MaxPacketNumber, Timestamp: math.MinInt64}, Initial{}},
		{"initial token", hdr(TypeInitial, 0), Initial{Token: []byte("cookie")}},
		{"initial crypto", hdr(TypeInitial, 0), Initial{CryptoOffset: 7, Crypto: []byte("client hello")}},
		{"initial max token, max offset", hdr(TypeInitial, 0), Initial{Token: token, CryptoOffset: MaxCryptoOffset, Crypto: []byte{1}}},
		{"initial fills the minimum exactly", hdr(TypeInitial, 0), Initial{Token: []byte{9}, Crypto: bytes.Repeat([]byte{3}, MinInitialSize-HeaderLen-initialFixedLen-1)}},
		{"initial longer than the minimum", hdr(TypeInitial, 0), Initial{Token: token, Crypto: bytes.Repeat([]byte{4}, 2000)}},
		{"retry", hdr(TypeRetry, 0), &Retry{Token: []byte{1}, Tag: retryTag}},
		{"retry max token", Header{Type: TypeRetry, ConnID: math.MaxUint64}, &Retry{Token: token, Tag: retryTag}},
		{"accept", hdr(TypeAccept, 0), &Accept{ServerConnID: 0x07aa000011223344}},
		{"accept keeps the client's ID", hdr(TypeAccept, 0), &Accept{}},
		{"accept with transport parameters", hdr(TypeAccept, 0), &Accept{ServerConnID: 5, Params: []byte("params")}},
		{"stateless reset", Header{Type: TypeStatelessReset, ConnID: 0x0123456789abcdef}, &StatelessReset{Token: [16]byte{1, 2, 3, 14: 0xfe, 15: 0xff}}},
		{"stateless reset zero", Header{Type: TypeStatelessReset}, &StatelessReset{}},
		{"ping", hdr(TypePing, 0), nil},
		{"ping zero header", Header{Type: TypePing}, nil},
		{"ping negative timestamp", Header{Type: TypePing, PN: MaxPacketNumber, Timestamp: -1}, nil},
		{"ping padded", hdr(TypePing, 0), pingPadding(PingPadding)},
		{"ping padded long", hdr(TypePing, 0), pingPadding(1000)},
		{"pmtu probe", hdr(TypePMTUProbe, 0), probePadding(1452 - HeaderLen)},
		{"pmtu probe empty", hdr(TypePMTUProbe, 0), probePadding(0)},
		{"pmtu probe one byte", Header{Type: TypePMTUProbe, PN: MaxPacketNumber}, probePadding(1)},
		{"data", hdr(TypeData, 0), &Data{Echo: Echo{T3: 5, T4: 7}, Offset: 1 << 20, Payload: []byte("hello")}},
		{"data FIN empty", hdr(TypeData, FlagFIN), &Data{Offset: 99, Payload: []byte{}}},
		{"data negative echo", hdr(TypeData, 0), &Data{Echo: Echo{T3: math.MinInt64, T4: -1}, Payload: []byte{0}}},
		{"data max payload", hdr(TypeData, FlagFIN), &Data{Echo: Echo{T3: math.MaxInt64, T4: math.MaxInt64}, Payload: big}},
		{"data ends at MaxStreamOffset", hdr(TypeData, FlagFIN), &Data{Offset: MaxStreamOffset - 3, Payload: []byte("end")}},
		{"data empty at MaxStreamOffset", hdr(TypeData, 0), &Data{Offset: MaxStreamOffset, Payload: []byte{}}},
		{"update", hdr(TypeUpdate, 0), &Update{Echo: Echo{T3: 1, T4: 2}, Generated: 1_700_000_000_000_000, Payload: []byte(`{"t":21.5}`)}},
		{"update empty", hdr(TypeUpdate, 0), &Update{Payload: []byte{}}},
		{"update negative", hdr(TypeUpdate, 0), &Update{Echo: Echo{T3: -3, T4: -4}, Generated: math.MinInt64, Payload: []byte{1}}},
		{"update max payload", hdr(TypeUpdate, 0), &Update{Generated: math.MaxInt64, Payload: big}},
		{"ack empty", hdr(TypeAck, 0), &Ack{}},
		{"ack synced", hdr(TypeAck, FlagSynced), &Ack{DelayMicros: 250, MaxData: 1 << 30, NRanges: 2, NSamples: 1,
			Ranges:  [MaxAckRanges]AckRange{{Largest: 10, Smallest: 5}, {Largest: 3, Smallest: 0}},
			Samples: [MaxAckSamples]OWDSample{{PN: 10, OWDMicros: -1500}}}},
		{"ack single packet ranges", hdr(TypeAck, 0), &Ack{NRanges: 2,
			Ranges: [MaxAckRanges]AckRange{{Largest: 7, Smallest: 7}, {Largest: 5, Smallest: 5}}}},
		{"ack full", hdr(TypeAck, FlagSynced), fullAck()},
		{"close", hdr(TypeClose, 0), &Close{Code: 3, Reason: []byte("idle timeout")}},
		{"close empty", hdr(TypeClose, 0), &Close{Reason: []byte{}}},
		{"close max reason", hdr(TypeClose, 0), &Close{Code: math.MaxUint32, Reason: reason}},
		{"crypto", hdr(TypeCrypto, 0), &Crypto{Offset: 1200, Data: []byte("client hello")}},
		{"crypto empty", hdr(TypeCrypto, 0), &Crypto{Data: []byte{}}},
		{"crypto ends at MaxHandshakeBytes", hdr(TypeCrypto, 0), &Crypto{Offset: MaxHandshakeBytes - 3, Data: []byte("end")}},
		{"path challenge", hdr(TypePathChallenge, 0), &PathChallenge{Data: [PathDataLen]byte{1, 2, 3, 4, 5, 6, 7, 8}}},
		{"path challenge zero", Header{Type: TypePathChallenge}, &PathChallenge{}},
		{"path response", hdr(TypePathResponse, 0), &PathResponse{Data: [PathDataLen]byte{0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0}}},
		{"protected path challenge", Header{Type: TypePathChallenge, Flags: FlagProtected, Epoch: EpochApp0, PN: 9}, rawBody("ciphertext and tag")},
		{"protected path response phase 1", Header{Type: TypePathResponse, Flags: FlagProtected, Epoch: EpochApp1, PN: 9}, rawBody("ciphertext and tag")},
		{"commit", hdr(TypeCommit, 0), &Commit{Offset: 1 << 20}},
		{"commit zero", hdr(TypeCommit, 0), &Commit{}},
		{"new token", hdr(TypeNewToken, 0), &NewToken{Token: []byte("a token for the next connection")}},
		{"new token of one byte", hdr(TypeNewToken, 0), &NewToken{Token: []byte{7}}},
		{"new token MaxTokenLen", hdr(TypeNewToken, 0), &NewToken{Token: bytes.Repeat([]byte{0xab}, MaxTokenLen)}},
		{"protected new token", Header{Type: TypeNewToken, Flags: FlagProtected, Epoch: EpochApp0, PN: 4}, rawBody("ciphertext and tag")},
		{"ack frequency", hdr(TypeAckFrequency, 0), &AckFrequency{Seq: 3, Threshold: 9, MaxAckDelayMicros: 40_000, ReorderThreshold: 3}},
		{"ack frequency zeros", hdr(TypeAckFrequency, 0), &AckFrequency{}},
		{"ack frequency limits", hdr(TypeAckFrequency, 0), &AckFrequency{Seq: MaxPacketNumber, Threshold: math.MaxUint32, MaxAckDelayMicros: MaxAckDelayLimit - 1, ReorderThreshold: math.MaxUint32}},
		{"protected ack frequency", Header{Type: TypeAckFrequency, Flags: FlagProtected, Epoch: EpochApp0, PN: 4}, rawBody("ciphertext and tag")},
		{"commit MaxStreamOffset", hdr(TypeCommit, 0), &Commit{Offset: MaxStreamOffset}},
		{"protected commit", Header{Type: TypeCommit, Flags: FlagProtected, Epoch: EpochApp1, PN: 9}, rawBody("ciphertext and tag")},
		{"protected data", Header{Type: TypeData, Flags: FlagProtected | FlagFIN, Epoch: EpochApp0, PN: 7}, rawBody("ciphertext and tag")},
		{"protected ack phase 1", Header{Type: TypeAck, Flags: FlagProtected | FlagSynced, Epoch: EpochApp1, PN: 7}, rawBody("ciphertext and tag")},
		{"protected crypto handshake", Header{Type: TypeCrypto, Flags: FlagProtected, Epoch: EpochHandshake}, rawBody("ciphertext and tag")},
		{"protected update 0-RTT", Header{Type: TypeUpdate, Flags: FlagProtected, Epoch: EpochEarly, PN: 1}, rawBody("ciphertext and tag")},
		{"protected initial", Header{Type: TypeInitial, Flags: FlagProtected, Epoch: EpochInitial, ConnID: 9, PN: 1}, rawBody(bytes.Repeat([]byte("ciphertext"), 118))},
		{"protected crypto initial (a ServerHello)", Header{Type: TypeCrypto, Flags: FlagProtected, Epoch: EpochInitial, PN: 2}, rawBody("ciphertext and tag")},
		{"protected close initial", Header{Type: TypeClose, Flags: FlagProtected, Epoch: EpochInitial}, rawBody("ciphertext and tag")},
	}
}

// retryTag stands for a Retry's integrity tag (the codec does not check
// it: the session does, internal/seal).
var retryTag = bytes.Repeat([]byte{0x7e}, RetryTagLen)

func TestRoundTrip(t *testing.T) {
	for _, tc := range validDatagrams() {
		t.Run(tc.name, func(t *testing.T) {
			dg := appendDatagram(nil, tc.h, tc.f)
			if tc.h.Type == TypeInitial {
				require.GreaterOrEqual(t, len(dg), MinInitialSize)
				if len(dg) > MinInitialSize {
					require.NotZero(t, dg[len(dg)-1], "padded past the minimum")
				}
			}
			h, f, err := parseDatagram(dg)
			require.NoError(t, err)
			require.Equal(t, tc.h, h)
			require.Equal(t, tc.f, f)
			// Canonical: re-encoding what was decoded gives the same bytes.
			require.Equal(t, dg, appendDatagram(nil, h, f))
		})
	}
}

func TestHeaderLayout(t *testing.T) {
	h := Header{Type: TypeData, Flags: FlagFIN, ConnID: 0x0102030405060708, PN: 0x1112131415161718, Timestamp: -2}
	b := AppendHeader([]byte{0xee}, h) // appends after what is there
	want := []byte{0xee, Version, byte(TypeData), FlagFIN, 0,
		1, 2, 3, 4, 5, 6, 7, 8,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}
	require.Equal(t, want, b)
	require.Len(t, b, 1+HeaderLen)
}

// bodyMin is the shortest body of each type that is not ErrShort.
func bodyMin(t Type) int {
	switch t {
	case TypeData:
		return DataOverhead
	case TypeUpdate:
		return UpdateOverhead
	case TypeAck:
		return ackFixedLen
	case TypeClose:
		return 5
	case TypeCrypto:
		return CryptoOverhead
	case TypeRetry:
		return 2 + RetryTagLen
	case TypeAccept:
		return AcceptLen
	case TypeStatelessReset:
		return StatelessResetTokenLen
	case TypePathChallenge, TypePathResponse:
		return PathDataLen
	case TypeCommit:
		return CommitLen
	case TypeAckFrequency:
		return AckFrequencyLen
	case TypeNewToken:
		return 2
	}
	return 0
}

// TestTruncated cuts every valid datagram at every length: inside the
// header it is ErrShort; inside a body ErrShort until the fixed part is
// there, then ErrLength (the length or count fields promise more). An
// Initial cut below MinInitialSize is ErrShort; one longer than that
// (its token and crypto fill more) is ErrLength when cut above it.
func TestTruncated(t *testing.T) {
	for _, tc := range validDatagrams() {
		t.Run(tc.name, func(t *testing.T) {
			dg := appendDatagram(nil, tc.h, tc.f)
			for n := range len(dg) {
				want := ErrLength
				switch {
				case tc.h.Type == TypePMTUProbe && n >= HeaderLen,
					tc.h.Type == TypeAccept && n >= HeaderLen+AcceptLen:
					// padding of any length is a probe (of a smaller
					// size); an Accept's parameters are the session's
					want = nil
				case tc.h.Flags&FlagProtected != 0:
					// Ciphertext: only shorter than a tag is known bad.
					want = nil
					if n < HeaderLen+ProtectedOverhead {
						want = ErrShort
					}
				case n < HeaderLen || n-HeaderLen < bodyMin(tc.h.Type) || (tc.h.Type == TypeInitial && n < MinInitialSize):
					want = ErrShort
				}
				if tc.h.Type == TypePing && n >= HeaderLen {
					want = nil // padding of any length
				}
				_, _, err := parseDatagram(dg[:n])
				if err != want { // require per byte would be slow on 65 kB payloads
					require.Equal(t, want, err, "cut to %d of %d bytes", n, len(dg))
				}
			}
		})
	}
}

// TestTrailingByte appends one zero byte to every valid datagram: frames
// with a length reject it; Initial padding may be longer, and a protected
// body is ciphertext whose length only the AEAD checks.
// with a length reject it; Initial padding may be longer; Accept has no
// format, a PMTU probe is padding of any length, and a protected body is
// ciphertext whose length only the AEAD checks.
func TestTrailingByte(t *testing.T) {
	for _, tc := range validDatagrams() {
		t.Run(tc.name, func(t *testing.T) {
			dg := append(appendDatagram(nil, tc.h, tc.f), 0)
			_, _, err := parseDatagram(dg)
			switch {
			case tc.h.Type == TypeInitial, tc.h.Type == TypePing, tc.h.Type == TypePMTUProbe, tc.h.Type == TypeAccept, tc.h.Flags&FlagProtected != 0:
				require.NoError(t, err)
			default:
				require.Equal(t, ErrLength, err)
			}
		})
	}
}

// set returns a copy of b with the bytes from off replaced by v.
func set(b []byte, off int, v ...byte) []byte {
	c := bytes.Clone(b)
	copy(c[off:], v)
	return c
}

func set64(b []byte, off int, v uint64) []byte {
	return set(b, off, binary.BigEndian.AppendUint64(nil, v)...)
}

func set16(b []byte, off int, v uint16) []byte {
	return set(b, off, binary.BigEndian.AppendUint16(nil, v)...)
}

func ackDatagram(nr, ns int, ranges ...AckRange) []byte {
	a := &Ack{NRanges: nr, NSamples: ns}
	copy(a.Ranges[:], ranges)
	return appendDatagram(nil, Header{Type: TypeAck}, a)
}

type rejectCase struct {
	name string
	dg   []byte
	want error
}

// rejectedDatagrams has one malformed datagram per rejection path.
func rejectedDatagrams() []rejectCase {
	h := func(t Type) Header { return Header{Type: t, PN: 1} }
	data := appendDatagram(nil, h(TypeData), &Data{Offset: 10, Payload: []byte("abc")})
	update := appendDatagram(nil, h(TypeUpdate), &Update{Payload: []byte("abc")})
	ack := appendDatagram(nil, h(TypeAck), fullAck())
	closeDG := appendDatagram(nil, h(TypeClose), &Close{Reason: []byte("bye")})
	initial := appendDatagram(nil, h(TypeInitial), Initial{})
	initialTok := appendDatagram(nil, h(TypeInitial), Initial{Token: []byte("tok"), CryptoOffset: 1, Crypto: []byte("hello")})
	retry := appendDatagram(nil, h(TypeRetry), &Retry{Token: []byte("tok"), Tag: retryTag})
	ping := appendDatagram(nil, h(TypePing), nil)
	reset := appendDatagram(nil, Header{Type: TypeStatelessReset}, &StatelessReset{Token: [16]byte{9}})
	commit := appendDatagram(nil, h(TypeCommit), &Commit{Offset: 4096})
	ackFreq := appendDatagram(nil, h(TypeAckFrequency), &AckFrequency{Seq: 1, Threshold: 4, MaxAckDelayMicros: 25_000, ReorderThreshold: 1})
	newToken := appendDatagram(nil, h(TypeNewToken), &NewToken{Token: []byte("tok")})
	const (
		dataOff   = HeaderLen + echoLen     // Data offset field
		dataLen   = dataOff + 8             // Data length field
		updLen    = HeaderLen + echoLen + 8 // Update length field
		ackMax    = HeaderLen + 4           // Ack max data
		ackNR     = HeaderLen + 12          // Ack range count
		ackNS     = ackNR + 1               // Ack sample count
		ackRanges = HeaderLen + ackFixedLen
		ackSample = ackRanges + MaxAckRanges*ackRangeLen // first sample of fullAck
	)
	// r builds ranges for ackDatagram.
	r := func(hi, lo int64) AckRange { return AckRange{Largest: hi, Smallest: lo} }
	return []rejectCase{
		{"empty", nil, ErrShort},
		{"version 0", set(ping, 0, 0), ErrVersion},
		{"version 1", set(ping, 0, 1), ErrVersion},
		{"version 2", set(ping, 0, 2), ErrVersion},
		{"version 4", set(ping, 0, 4), ErrVersion},
		{"version 255", set(ping, 0, 0xff), ErrVersion},
		{"version checked before length", set(data[:HeaderLen+1], 0, 1), ErrVersion},
		{"type 0", set(ping, 1, 0), ErrType},
		{"type version negotiation under version 3", set(ping, 1, byte(TypeVersionNegotiation)), ErrType},
		{"type 0x0f", set(ping, 1, 0x0f), ErrType},
		{"type 0x13", set(ping, 1, 0x13), ErrType},
		{"path challenge short", set(ping, 1, byte(TypePathChallenge)), ErrShort},
		{"path response long", append(set(ping, 1, byte(TypePathResponse)), make([]byte, PathDataLen+1)...), ErrLength},
		{"FIN on path challenge", append(set(ping, 1, byte(TypePathChallenge), FlagFIN), make([]byte, PathDataLen)...), ErrReserved},
		{"type 0xff", set(ping, 1, 0xff), ErrType},
		{"reserved byte", set(ping, 3, 1), ErrReserved},
		{"reserved byte high bit", set(data, 3, 0x80), ErrReserved},
		{"flag bit 1", set(data, 2, 1<<1), ErrReserved},
		{"flag bit 6", set(ack, 2, 1<<6), ErrReserved},
		{"flags all", set(data, 2, 0xff), ErrReserved},
		{"protected data without epoch", set(data, 2, FlagProtected), ErrReserved},
		{"protected ack without epoch", set(ack, 2, FlagProtected|FlagSynced), ErrReserved},
		{"epoch without protected", set(data, 3, EpochApp0), ErrReserved},
		{"epoch 4 (0-RTT) without protected", set(update, 3, EpochEarly), ErrReserved},
		{"epoch 6", set(data, 2, FlagProtected, 6), ErrReserved},
		{"epoch 255", set(update, 2, FlagProtected, 0xff), ErrReserved},
		{"epoch 5 (Initial) without protected", set(initial, 3, EpochInitial), ErrReserved},
		{"protected initial under application keys", set(initial, 2, FlagProtected, EpochApp0), ErrReserved},
		{"protected initial under handshake keys", set(initial, 2, FlagProtected, EpochHandshake), ErrReserved},
		{"protected initial under 0-RTT keys", set(initial, 2, FlagProtected, EpochEarly), ErrReserved},
		{"data under Initial keys", set(data, 2, FlagProtected, EpochInitial), ErrReserved},
		{"update under Initial keys", set(update, 2, FlagProtected, EpochInitial), ErrReserved},
		{"ack under Initial keys", set(ack, 2, FlagProtected, EpochInitial), ErrReserved},
		{"ping under Initial keys", append(set(ping, 2, FlagProtected, EpochInitial), make([]byte, ProtectedOverhead)...), ErrReserved},
		{"commit under Initial keys", set(commit, 2, FlagProtected, EpochInitial), ErrReserved},
		{"new token under Initial keys", set(newToken, 2, FlagProtected, EpochInitial), ErrReserved},
		{"new token short", newToken[:HeaderLen+1], ErrShort},
		{"new token empty", set16(newToken[:HeaderLen+2], HeaderLen, 0), ErrLength},
		{"new token longer than its length", append(append([]byte(nil), newToken...), 'x'), ErrLength},
		{"new token shorter than its length", newToken[:len(newToken)-1], ErrLength},
		{"new token above MaxTokenLen", append(set16(newToken[:HeaderLen+2], HeaderLen, MaxTokenLen+1), make([]byte, MaxTokenLen+1)...), ErrLength},
		{"FIN on new token", set(newToken, 2, FlagFIN), ErrReserved},
		{"accept under Initial keys", append(set(ping, 1, byte(TypeAccept), FlagProtected, EpochInitial), make([]byte, AcceptLen+ProtectedOverhead)...), ErrReserved},
		{"protected retry", append(set(retry, 2, FlagProtected, EpochInitial), make([]byte, ProtectedOverhead)...), ErrReserved},
		{"protected initial shorter than a tag", append(set(initial[:HeaderLen], 2, FlagProtected, EpochInitial), make([]byte, ProtectedOverhead-1)...), ErrShort},
		{"FIN on ping", set(ping, 2, FlagFIN), ErrReserved},
		{"FIN on update", set(update, 2, FlagFIN), ErrReserved},
		{"FIN on initial", set(initial, 2, FlagFIN), ErrReserved},
		{"FIN on retry", set(retry, 2, FlagFIN), ErrReserved},
		{"FIN on close", set(closeDG, 2, FlagFIN), ErrReserved},
		{"FIN on accept", set(ping, 1, byte(TypeAccept), FlagFIN), ErrReserved},
		{"accept without its ID (a version 1 Accept)", set(ping, 1, byte(TypeAccept)), ErrShort},
		{"accept short ID", append(set(ping, 1, byte(TypeAccept)), 1, 2, 3), ErrShort},
		{"pn MaxPacketNumber+1", set64(ping, 12, MaxPacketNumber+1), ErrPacketNum},
		{"pn 2^63", set64(ping, 12, 1<<63), ErrPacketNum},
		{"pn all ones", set64(ping, 12, math.MaxUint64), ErrPacketNum},

		{"data length longer than payload", set16(data, dataLen, 4), ErrLength},
		{"data length shorter than payload", set16(data, dataLen, 2), ErrLength},
		{"data length max, payload 3", set16(data, dataLen, math.MaxUint16), ErrLength},
		{"data offset above MaxStreamOffset", set64(data, dataOff, MaxStreamOffset+1), ErrLength},
		{"data offset+len above MaxStreamOffset", set64(data, dataOff, MaxStreamOffset-2), ErrLength},
		{"data offset+len overflows uint64", set64(data, dataOff, math.MaxUint64-1), ErrLength},
		{"update length longer than payload", set16(update, updLen, 4), ErrLength},
		{"update length shorter than payload", set16(update, updLen, 0), ErrLength},

		{"ack 17 ranges", set(ack, ackNR, MaxAckRanges+1), ErrTooMany},
		{"ack 255 ranges", set(ack, ackNR, 0xff), ErrTooMany},
		{"ack 33 samples", set(ack, ackNS, MaxAckSamples+1), ErrTooMany},
		{"ack 255 samples", set(ack, ackNS, 0xff), ErrTooMany},
		{"ack fewer ranges than bytes", set(ack, ackNR, MaxAckRanges-1), ErrLength},
		{"ack fewer samples than bytes", set(ack, ackNS, MaxAckSamples-1), ErrLength},
		{"ack cut inside the fixed part", ackDatagram(0, 0)[:HeaderLen+ackFixedLen-2], ErrShort},
		{"ack one range promised, none sent", set(ackDatagram(0, 0), ackNR, 1), ErrLength},
		{"ack max data above MaxStreamOffset", set64(ack, ackMax, MaxStreamOffset+1), ErrLength},
		{"ack max data negative", set64(ack, ackMax, math.MaxUint64), ErrLength},
		{"ack ranges ascending", ackDatagram(2, 0, r(10, 5), r(20, 15)), ErrRanges},
		{"ack ranges overlapping", ackDatagram(2, 0, r(10, 5), r(7, 1)), ErrRanges},
		{"ack ranges touching", ackDatagram(2, 0, r(10, 5), r(5, 1)), ErrRanges},
		{"ack ranges adjacent without a gap", ackDatagram(2, 0, r(10, 5), r(4, 1)), ErrRanges},
		{"ack ranges equal", ackDatagram(2, 0, r(10, 5), r(10, 5)), ErrRanges},
		{"ack range below a range ending at 0", ackDatagram(2, 0, r(10, 0), r(0, 0)), ErrRanges},
		{"ack range smallest > largest", ackDatagram(1, 0, r(5, 10)), ErrRanges},
		{"ack later range smallest > largest", ackDatagram(2, 0, r(100, 90), r(10, 20)), ErrRanges},
		{"ack range largest > MaxPacketNumber", ackDatagram(1, 0, r(MaxPacketNumber+1, 0)), ErrPacketNum},
		{"ack range largest 2^64-1", set64(ack, ackRanges, math.MaxUint64), ErrPacketNum},
		{"ack range smallest > MaxPacketNumber", ackDatagram(1, 0, r(MaxPacketNumber, MaxPacketNumber+1)), ErrRanges},
		{"ack sample pn > MaxPacketNumber", set64(ack, ackSample, MaxPacketNumber+1), ErrPacketNum},
		{"ack last sample pn 2^64-1", set64(ack, len(ack)-ackSampleLen, math.MaxUint64), ErrPacketNum},

		{"initial 1199 bytes", initial[:MinInitialSize-1], ErrShort},
		{"initial header only", initial[:HeaderLen], ErrShort},
		{"initial options set", set(initial, HeaderLen+2+3, 1), ErrReserved},
		{"initial options set after a token", set(initialTok, HeaderLen+2+3, 0x80), ErrReserved},
		{"initial padding set", set(initial, MinInitialSize-1, 1), ErrReserved},
		{"initial padding set after 1200", append(bytes.Clone(initial), 0, 1), ErrReserved},
		{"initial padding set after crypto", set(initialTok, HeaderLen+initialFixedLen+3+5, 1), ErrReserved},
		{"initial token 256 bytes", set16(initial, HeaderLen, MaxTokenLen+1), ErrLength},
		{"initial token length max", set16(initial, HeaderLen, math.MaxUint16), ErrLength},
		{"initial crypto past the body", set16(initialTok, HeaderLen+2+3+8, math.MaxUint16), ErrLength},

		{"retry empty token", append(set16(retry[:HeaderLen+2], HeaderLen, 0), retryTag...), ErrLength},
		{"retry token 256 bytes", append(append(set16(retry[:HeaderLen+2], HeaderLen, MaxTokenLen+1), make([]byte, MaxTokenLen+1)...), retryTag...), ErrLength},
		{"retry token longer than length", set16(retry, HeaderLen, 2), ErrLength},
		{"retry token shorter than length", set16(retry, HeaderLen, 4), ErrLength},
		{"retry cut in its length", retry[:HeaderLen+1], ErrShort},
		{"retry without its tag (a version 2 Retry)", retry[:len(retry)-RetryTagLen], ErrShort},
		{"retry with its tag cut", retry[:len(retry)-1], ErrLength},
		{"retry with a trailing byte", append(bytes.Clone(retry), 0), ErrLength},

		{"close reason longer than length", set(closeDG, HeaderLen+4, 2), ErrLength},
		{"close reason shorter than length", set(closeDG, HeaderLen+4, 4), ErrLength},
		{"close length 255, reason 3", set(closeDG, HeaderLen+4, 255), ErrLength},
		{"ping with non-zero padding", append(bytes.Clone(ping), 0, 1), ErrReserved},

		{"stateless reset cut in its token", reset[:StatelessResetLen-1], ErrShort},
		{"stateless reset header only", reset[:HeaderLen], ErrShort},
		{"stateless reset with a trailing byte", append(bytes.Clone(reset), 0), ErrLength},
		{"protected stateless reset", append(set(reset, 2, FlagProtected, EpochApp0), make([]byte, ProtectedOverhead)...), ErrReserved},
		{"FIN on stateless reset", set(reset, 2, FlagFIN), ErrReserved},

		{"commit cut short", commit[:HeaderLen+CommitLen-1], ErrShort},
		{"commit empty", commit[:HeaderLen], ErrShort},
		{"commit with a trailing byte", append(bytes.Clone(commit), 0), ErrLength},
		{"commit above MaxStreamOffset", set64(commit, HeaderLen, MaxStreamOffset+1), ErrLength},
		{"commit offset 2^64-1", set64(commit, HeaderLen, math.MaxUint64), ErrLength},
		{"FIN on commit", set(commit, 2, FlagFIN), ErrReserved},
		{"ack frequency cut short", ackFreq[:HeaderLen+AckFrequencyLen-1], ErrShort},
		{"ack frequency empty", ackFreq[:HeaderLen], ErrShort},
		{"ack frequency with a trailing byte", append(bytes.Clone(ackFreq), 0), ErrLength},
		{"ack frequency sequence above MaxPacketNumber", set64(ackFreq, HeaderLen, MaxPacketNumber+1), ErrValue},
		{"ack frequency sequence 2^64-1", set64(ackFreq, HeaderLen, math.MaxUint64), ErrValue},
		{"ack frequency delay 2^14 ms", set(ackFreq, HeaderLen+12, binary.BigEndian.AppendUint32(nil, MaxAckDelayLimit)...), ErrValue},
		{"ack frequency delay 2^32-1 µs", set(ackFreq, HeaderLen+12, 0xff, 0xff, 0xff, 0xff), ErrValue},
		{"FIN on ack frequency", set(ackFreq, 2, FlagFIN), ErrReserved},
		{"pmtu probe nonzero padding", append(appendDatagram(nil, h(TypePMTUProbe), probePadding(100)), 1), ErrReserved},
		{"pmtu probe nonzero first byte", set(appendDatagram(nil, h(TypePMTUProbe), probePadding(100)), HeaderLen, 0x80), ErrReserved},
		{"pmtu probe FIN flag", set(appendDatagram(nil, h(TypePMTUProbe), probePadding(10)), 2, FlagFIN), ErrReserved},
	}
}

func TestRejected(t *testing.T) {
	for _, tc := range rejectedDatagrams() {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseDatagram(tc.dg)
			require.Equal(t, tc.want, err)
		})
	}
}

// TestParseInitialDatagramLength: the datagram length is the caller's, and
// the body alone does not count (after AEAD the two would differ).
func TestParseInitialDatagramLength(t *testing.T) {
	var in Initial
	body := make([]byte, MinInitialSize-HeaderLen)
	require.NoError(t, ParseInitial(body, MinInitialSize, &in))
	require.Equal(t, ErrShort, ParseInitial(body, MinInitialSize-1, &in))
	require.Equal(t, ErrShort, ParseInitial(body[:initialFixedLen-1], MinInitialSize, &in))
	require.NoError(t, ParseInitial(body[:initialFixedLen], MinInitialSize, &in))
	// A token that runs past a short body (the datagram's length, given
	// apart, says it was long enough).
	tok := set16(body[:initialFixedLen+4], 0, 5)
	require.Equal(t, ErrLength, ParseInitial(tok, MinInitialSize, &in))
	require.NoError(t, ParseInitial(set16(tok, 0, 4)[:initialFixedLen+4], MinInitialSize, &in))
	require.Len(t, in.Token, 4)
	// The token alone, as a listener reads it from a sealed Initial.
	got, clear, err := ParseInitialToken(set16(tok, 0, 4), MinInitialSize)
	require.NoError(t, err)
	require.Equal(t, in.Token, got)
	require.Equal(t, 2+4, clear)
	require.Equal(t, InitialClearLen(got), clear)
	_, _, err = ParseInitialToken(tok[:2+4], MinInitialSize)
	require.Equal(t, ErrLength, err, "the token runs past the body")
	_, _, err = ParseInitialToken(tok, MinInitialSize-1)
	require.Equal(t, ErrShort, err)
	_, _, err = ParseInitialToken(tok[:1], MinInitialSize)
	require.Equal(t, ErrShort, err)
}

// TestInitialAliases: the token and crypto data of a decoded Initial are
// the datagram's bytes, not copies (the receive path does not allocate).
func TestInitialAliases(t *testing.T) {
	dg := appendDatagram(nil, Header{Type: TypeInitial}, Initial{Token: []byte("tok"), Crypto: []byte("hello")})
	_, f, err := parseDatagram(dg)
	require.NoError(t, err)
	in := f.(Initial)
	require.Same(t, &dg[HeaderLen+2], &in.Token[0])
	require.Same(t, &dg[HeaderLen+2+3+10], &in.Crypto[0])
}

// TestRetrySmallerThanInitial: a Retry with the largest token is still far
// smaller than the smallest Initial, so answering an Initial with a Retry
// never amplifies (RFC 9000 §8.1).
func TestRetrySmallerThanInitial(t *testing.T) {
	r := appendDatagram(nil, Header{Type: TypeRetry}, &Retry{Token: make([]byte, MaxTokenLen)})
	require.Less(t, len(r), MinInitialSize/3)
}

func TestAppendAckLimits(t *testing.T) {
	a := fullAck()
	want := AppendAck(nil, a)
	a.NRanges, a.NSamples = MaxAckRanges+5, MaxAckSamples+100
	require.Equal(t, want, AppendAck(nil, a), "counts beyond the limits encode the first Max*")
	require.Len(t, want, ackFixedLen+MaxAckRanges*ackRangeLen+MaxAckSamples*ackSampleLen)
	require.LessOrEqual(t, HeaderLen+len(want), MinInitialSize, "a full ACK fits a minimum-size datagram")
}

func TestAppendCloseCutsReason(t *testing.T) {
	a254 := strings.Repeat("a", 254)
	cases := []struct {
		name, reason, want string
	}{
		{"255 bytes kept", strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{"ASCII cut at 255", strings.Repeat("a", 300), strings.Repeat("a", 255)},
		{"2-byte rune across 255 dropped", a254 + "é" + "x", a254},
		{"2-byte rune ending at 255 kept", a254[1:] + "é" + "x", a254[1:] + "é"},
		{"4-byte rune across 255 dropped", strings.Repeat("a", 252) + "😀", strings.Repeat("a", 252)},
		{"not UTF-8 cut at 255", strings.Repeat("\x80", 300), strings.Repeat("\x80", 255)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Close
			b := AppendClose(nil, &Close{Code: 1, Reason: []byte(tc.reason)})
			require.NoError(t, ParseClose(b, &c))
			require.Equal(t, tc.want, string(c.Reason))
		})
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{
		TypeInitial: "initial", TypeAccept: "accept", TypeData: "data", TypeUpdate: "update",
		TypeAck: "ack", TypeClose: "close", TypePing: "ping", TypeRetry: "retry",
		TypeVersionNegotiation: "version-negotiation", TypeStatelessReset: "stateless-reset",
		TypeCrypto: "crypto", TypePathChallenge: "path-challenge", TypePathResponse: "path-response",
		TypeCommit: "commit", TypePMTUProbe: "pmtu-probe", TypeAckFrequency: "ack-frequency", TypeNewToken: "new-token", 0: "unknown", 0x0f: "unknown", 0x13: "unknown", 0xff: "unknown",
	} {
		require.Equal(t, want, ty.String())
	}
}

// Sinks keep the compiler from discarding the work measured below.
var (
	sinkHeader Header
	sinkErr    error
	sinkBytes  []byte
)

func TestParseDoesNotAllocate(t *testing.T) {
	data := appendDatagram(nil, Header{Type: TypeData, Flags: FlagFIN}, &Data{Payload: make([]byte, 1000)})
	update := appendDatagram(nil, Header{Type: TypeUpdate}, &Update{Payload: make([]byte, 100)})
	ack := appendDatagram(nil, Header{Type: TypeAck}, fullAck())
	initial := appendDatagram(nil, Header{Type: TypeInitial}, Initial{})
	closeDG := appendDatagram(nil, Header{Type: TypeClose}, &Close{Reason: []byte("bye")})
	initialTok := appendDatagram(nil, Header{Type: TypeInitial}, Initial{Token: []byte("tok"), Crypto: []byte("hello")})
	retry := appendDatagram(nil, Header{Type: TypeRetry}, &Retry{Token: []byte("tok"), Tag: retryTag})
	bad := set(ack, HeaderLen+ackFixedLen+ackRangeLen, 0xff) // second range above the first
	var (
		d  Data
		u  Update
		a  Ack
		in Initial
		c  Close
		r  Retry
	)
	cases := []struct {
		name string
		fn   func() error
	}{
		{"initial with token", func() error {
			_, body, err := ParseHeader(initialTok)
			if err != nil {
				return err
			}
			return ParseInitial(body, len(initialTok), &in)
		}},
		{"retry", func() error {
			_, body, err := ParseHeader(retry)
			if err != nil {
				return err
			}
			return ParseRetry(body, &r)
		}},
		{"data", func() error {
			h, body, err := ParseHeader(data)
			sinkHeader = h
			if err != nil {
				return err
			}
			return ParseData(body, &d)
		}},
		{"update", func() error {
			_, body, err := ParseHeader(update)
			if err != nil {
				return err
			}
			return ParseUpdate(body, &u)
		}},
		{"ack", func() error {
			_, body, err := ParseHeader(ack)
			if err != nil {
				return err
			}
			return ParseAck(body, &a)
		}},
		{"initial", func() error {
			_, body, err := ParseHeader(initial)
			if err != nil {
				return err
			}
			return ParseInitial(body, len(initial), &in)
		}},
		{"close", func() error {
			_, body, err := ParseHeader(closeDG)
			if err != nil {
				return err
			}
			return ParseClose(body, &c)
		}},
		{"rejected ack", func() error {
			_, body, _ := ParseHeader(bad)
			if err := ParseAck(body, &a); err != ErrPacketNum {
				return fmt.Errorf("got %v", err)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.fn())
			allocs := testing.AllocsPerRun(100, func() { sinkErr = tc.fn() })
			require.Zero(t, allocs)
		})
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 70_000)
	h := Header{Type: TypeData, PN: 7}
	d := &Data{Payload: make([]byte, 1200)}
	u := &Update{Payload: make([]byte, 100)}
	a := fullAck()
	c := &Close{Reason: bytes.Repeat([]byte("x"), 300)}
	cases := []struct {
		name string
		fn   func()
	}{
		{"data", func() { sinkBytes = AppendData(AppendHeader(buf[:0], h), d) }},
		{"update", func() { sinkBytes = AppendUpdate(AppendHeader(buf[:0], h), u) }},
		{"ack", func() { sinkBytes = AppendAck(AppendHeader(buf[:0], h), a) }},
		{"initial", func() { sinkBytes = AppendInitial(AppendHeader(buf[:0], h), Initial{}) }},
		{"initial with token", func() {
			sinkBytes = AppendInitial(AppendHeader(buf[:0], h), Initial{Token: c.Reason[:100], Crypto: c.Reason})
		}},
		{"retry", func() { sinkBytes = AppendRetry(AppendHeader(buf[:0], h), &Retry{Token: c.Reason[:MaxTokenLen]}) }},
		{"close", func() { sinkBytes = AppendClose(AppendHeader(buf[:0], h), c) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tc.fn))
		})
	}
}

func BenchmarkParseAck(b *testing.B) {
	dg := appendDatagram(nil, Header{Type: TypeAck, Flags: FlagSynced}, fullAck())
	var a Ack
	b.ReportAllocs()
	b.SetBytes(int64(len(dg)))
	for b.Loop() {
		_, body, err := ParseHeader(dg)
		if err != nil {
			b.Fatal(err)
		}
		if err := ParseAck(body, &a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendData(b *testing.B) {
	const payload = 1200 - HeaderLen - DataOverhead // a full 1200-byte datagram
	h := Header{Type: TypeData, ConnID: 1, PN: 1 << 20, Timestamp: 1_700_000_000_000_000}
	d := &Data{Echo: Echo{T3: 1, T4: 2}, Offset: 1 << 30, Payload: make([]byte, payload)}
	buf := make([]byte, 0, 1500)
	b.ReportAllocs()
	b.SetBytes(HeaderLen + DataOverhead + payload)
	for b.Loop() {
		buf = AppendData(AppendHeader(buf[:0], h), d)
	}
	sinkBytes = buf
}
