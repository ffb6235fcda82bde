package wire

import (
	"encoding/binary"
	"unicode/utf8"
)

// Echo carries the last ACK the sender received back to the receiver, for
// in-band clock estimation (NTP's four-timestamp exchange, RFC 5905 §8): T3 is that ACK's timestamp (receiver
// clock), T4 when the sender received it (sender clock). Zero T3 means none
// yet. With T1/T2 from the data packet itself, the receiver has NTP's four
// timestamps without an extra exchange.
type Echo struct {
	T3 int64
	T4 int64
}

const echoLen = 16

func appendEcho(b []byte, e Echo) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.T3))
	return binary.BigEndian.AppendUint64(b, uint64(e.T4))
}

func parseEcho(b []byte) Echo {
	return Echo{T3: int64(binary.BigEndian.Uint64(b)), T4: int64(binary.BigEndian.Uint64(b[8:]))}
}

// Data is a stream frame (type Data):
//
//	echo T3 (64) | echo T4 (64) | offset (64) | length (16) | payload
//
// FIN is the header's FlagFIN: the stream ends at Offset+len(Payload).
type Data struct {
	Echo    Echo
	Offset  int64
	Payload []byte // aliases the datagram
}

// DataOverhead is the body bytes of a Data frame besides its payload.
const DataOverhead = echoLen + 8 + 2

// MaxStreamOffset bounds stream offsets (2^62 − 1).
const MaxStreamOffset = 1<<62 - 1

// AppendData appends d's body to b. The caller keeps len(d.Payload) at most
// 65535 and 0 ≤ Offset, Offset+len(Payload) ≤ MaxStreamOffset; outside
// those the encoding is one ParseData rejects.
func AppendData(b []byte, d *Data) []byte {
	b = appendEcho(b, d.Echo)
	b = binary.BigEndian.AppendUint64(b, uint64(d.Offset))
	b = binary.BigEndian.AppendUint16(b, uint16(len(d.Payload)))
	return append(b, d.Payload...)
}

// ParseData decodes a Data body into d.
func ParseData(body []byte, d *Data) error {
	if len(body) < DataOverhead {
		return ErrShort
	}
	d.Echo = parseEcho(body)
	off := binary.BigEndian.Uint64(body[16:])
	n := int(binary.BigEndian.Uint16(body[24:]))
	if len(body)-DataOverhead != n {
		return ErrLength
	}
	if off > MaxStreamOffset || off+uint64(n) > MaxStreamOffset {
		return ErrLength
	}
	d.Offset = int64(off)
	d.Payload = body[DataOverhead:]
	return nil
}

// Update is a status update (type Update):
//
//	echo T3 (64) | echo T4 (64) | generated µs (64) | length (16) | payload
//
// Generated is when the application produced the sample, on the sender's
// wall clock, so the monitor can compute the update's age.
type Update struct {
	Echo      Echo
	Generated int64
	Payload   []byte // aliases the datagram
}

// UpdateOverhead is the body bytes of an Update besides its payload.
const UpdateOverhead = echoLen + 8 + 2

// AppendUpdate appends u's body to b. The caller keeps len(u.Payload) at
// most 65535; a longer payload yields an encoding ParseUpdate rejects.
func AppendUpdate(b []byte, u *Update) []byte {
	b = appendEcho(b, u.Echo)
	b = binary.BigEndian.AppendUint64(b, uint64(u.Generated))
	b = binary.BigEndian.AppendUint16(b, uint16(len(u.Payload)))
	return append(b, u.Payload...)
}

// ParseUpdate decodes an Update body into u.
func ParseUpdate(body []byte, u *Update) error {
	if len(body) < UpdateOverhead {
		return ErrShort
	}
	u.Echo = parseEcho(body)
	u.Generated = int64(binary.BigEndian.Uint64(body[16:]))
	n := int(binary.BigEndian.Uint16(body[24:]))
	if len(body)-UpdateOverhead != n {
		return ErrLength
	}
	u.Payload = body[UpdateOverhead:]
	return nil
}

// ACK limits: a fixed-size Ack struct, and an encoding that always fits a
// 1200-byte datagram (28 + 14 + 16·16 + 32·12 = 682 bytes).
const (
	MaxAckRanges  = 16
	MaxAckSamples = 32
)

// AckRange is an inclusive range of acknowledged packet numbers.
type AckRange struct{ Largest, Smallest int64 }

// OWDSample is the receiver-stamped one-way delay of one packet, µs.
type OWDSample struct {
	PN        int64
	OWDMicros int32
}

// Ack is an acknowledgment frame (type Ack):
//
//	ack delay µs (32) | max data (64) | n ranges (8) | n samples (8)
//	n × { largest (64) | smallest (64) }        descending, disjoint
//	n × { packet number (64) | OWD µs (32, signed) }
//
// The header timestamp is the receiver's send time (T3); FlagSynced says the
// receiver trusts the clock offset its OWD samples were computed with.
// Ranges repeat recent history on every ACK so a lost ACK costs nothing;
// OWD samples are carried once, for packets newly received since the last
// ACK. MaxData is stream flow control: the receiver accepts stream bytes
// up to this offset (RFC 9000 §4.1's MAX_DATA).
type Ack struct {
	DelayMicros uint32
	MaxData     int64
	Ranges      [MaxAckRanges]AckRange
	NRanges     int
	Samples     [MaxAckSamples]OWDSample
	NSamples    int
}

const (
	ackFixedLen  = 4 + 8 + 1 + 1
	ackRangeLen  = 16
	ackSampleLen = 12
)

// AppendAck appends a's body to b. Ranges and samples beyond the limits are
// not encoded.
func AppendAck(b []byte, a *Ack) []byte {
	nr, ns := min(a.NRanges, MaxAckRanges), min(a.NSamples, MaxAckSamples)
	b = binary.BigEndian.AppendUint32(b, a.DelayMicros)
	b = binary.BigEndian.AppendUint64(b, uint64(a.MaxData))
	b = append(b, byte(nr), byte(ns))
	for _, r := range a.Ranges[:nr] {
		b = binary.BigEndian.AppendUint64(b, uint64(r.Largest))
		b = binary.BigEndian.AppendUint64(b, uint64(r.Smallest))
	}
	for _, s := range a.Samples[:ns] {
		b = binary.BigEndian.AppendUint64(b, uint64(s.PN))
		b = binary.BigEndian.AppendUint32(b, uint32(s.OWDMicros))
	}
	return b
}

// ParseAck decodes an Ack body into a. Ranges must be descending and
// disjoint with a gap between them (ErrRanges), every packet number within
// MaxPacketNumber (ErrPacketNum). On error a's contents are unspecified.
func ParseAck(body []byte, a *Ack) error {
	if len(body) < ackFixedLen {
		return ErrShort
	}
	a.DelayMicros = binary.BigEndian.Uint32(body)
	md := binary.BigEndian.Uint64(body[4:])
	if md > MaxStreamOffset {
		return ErrLength
	}
	a.MaxData = int64(md)
	nr, ns := int(body[12]), int(body[13])
	if nr > MaxAckRanges || ns > MaxAckSamples {
		return ErrTooMany
	}
	if len(body) != ackFixedLen+nr*ackRangeLen+ns*ackSampleLen {
		return ErrLength
	}
	p := body[ackFixedLen:]
	prev := uint64(MaxPacketNumber) + 2 // above any valid largest+1
	for i := range nr {
		hi, lo := binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])
		p = p[ackRangeLen:]
		if hi > MaxPacketNumber {
			return ErrPacketNum // lo > MaxPacketNumber implies lo > hi or this
		}
		// Descending and disjoint with a gap: hi < previous smallest − 1.
		if lo > hi || hi+1 >= prev {
			return ErrRanges
		}
		prev = lo
		a.Ranges[i] = AckRange{Largest: int64(hi), Smallest: int64(lo)}
	}
	a.NRanges = nr
	for i := range ns {
		pn := binary.BigEndian.Uint64(p)
		if pn > MaxPacketNumber {
			return ErrPacketNum
		}
		a.Samples[i] = OWDSample{PN: int64(pn), OWDMicros: int32(binary.BigEndian.Uint32(p[8:]))}
		p = p[ackSampleLen:]
	}
	a.NSamples = ns
	return nil
}

// Initial opens a connection (type Initial):
//
//	token length (16) | token | options (32) | crypto offset (32)
//	| crypto length (16) | crypto bytes | zero padding
//
// padded with zeros to at least MinInitialSize bytes in all (more is
// allowed, as QUIC pads to the path MTU), the AEAD tag of a sealed one
// included: its plaintext is padded to MinInitialSize − ProtectedOverhead
// (AppendSealedInitial). Token is the address-validation token of a
// Retry the client received (empty on its first Initial), echoed so the
// server can tell the client really receives at its source address (RFC
// 9000 §8.1.2); it is at most MaxTokenLen bytes. Options is 0 in versions
// 1 to 3. Crypto carries the handshake's CRYPTO data from CryptoOffset in
// the handshake stream (RFC 9000 §19.6).
//
// The token comes first (version 3; it followed the options before): a
// sealed Initial keeps it and its length in the clear, after the header
// and authenticated with it as associated data, and seals the rest, as
// QUIC's long header carries its token (RFC 9000 §17.2.2). A listener
// thus reads the token (ParseInitialToken) and answers an Initial without
// one with a Retry before it derives any key.
type Initial struct {
	Options      uint32
	Token        []byte // aliases the datagram
	CryptoOffset int64
	Crypto       []byte // aliases the datagram
}

// MaxTokenLen bounds an address-validation token (Initial and Retry): a
// server's token is a small sealed box, and the bound keeps a Retry far
// smaller than the Initial it answers.
const MaxTokenLen = 255

// initialFixedLen is an Initial body's fixed fields: token length,
// options, crypto offset and crypto length.
const initialFixedLen = 2 + 4 + 4 + 2

// MaxCryptoOffset bounds an Initial's crypto offset (a 32-bit field).
const MaxCryptoOffset = 1<<32 - 1

// InitialClearLen is how many bytes of the body of an Initial carrying
// token stay in the clear when it is sealed: the token and its length.
func InitialClearLen(token []byte) int { return 2 + len(token) }

// AppendInitial appends the Initial body, padding the datagram that starts
// at b[0] (the header must already be in b) to MinInitialSize. The caller
// keeps len(Token) ≤ MaxTokenLen, 0 ≤ CryptoOffset ≤ MaxCryptoOffset and
// len(Crypto) ≤ 65535; outside those the encoding is one ParseInitial
// rejects.
func AppendInitial(b []byte, in Initial) []byte {
	return appendInitial(b, in, MinInitialSize)
}

// AppendSealedInitial is AppendInitial for an Initial to be sealed:
// padded to MinInitialSize less the AEAD tag, which sealing appends, so
// that the datagram is MinInitialSize bytes, not more (a path need carry
// no larger one).
func AppendSealedInitial(b []byte, in Initial) []byte {
	return appendInitial(b, in, MinInitialSize-ProtectedOverhead)
}

func appendInitial(b []byte, in Initial, size int) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(in.Token)))
	b = append(b, in.Token...)
	b = binary.BigEndian.AppendUint32(b, in.Options)
	b = binary.BigEndian.AppendUint32(b, uint32(in.CryptoOffset))
	b = binary.BigEndian.AppendUint16(b, uint16(len(in.Crypto)))
	b = append(b, in.Crypto...)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

// ParseInitialToken reads the token of an Initial body, sealed or not (it
// is in the clear either way), and returns it with the length of the
// clear part (InitialClearLen). datagram is the whole datagram's length,
// which must be at least MinInitialSize (ErrShort); a token longer than
// MaxTokenLen or past the body is ErrLength. An empty token is nil.
func ParseInitialToken(body []byte, datagram int) (token []byte, clear int, err error) {
	if datagram < MinInitialSize || len(body) < 2 {
		return nil, 0, ErrShort
	}
	n := int(binary.BigEndian.Uint16(body))
	if n > MaxTokenLen || len(body) < 2+n {
		return nil, 0, ErrLength
	}
	return nilIfEmpty(body[2 : 2+n]), 2 + n, nil
}

// ParseInitial decodes an Initial body; datagram is its whole length, which
// must be at least MinInitialSize (ErrShort). A token longer than
// MaxTokenLen, or a length that runs past the body, is ErrLength; options
// and padding must be zero (ErrReserved). An empty token or crypto field
// decodes as a nil slice.
func ParseInitial(body []byte, datagram int, in *Initial) error {
	if datagram < MinInitialSize || len(body) < initialFixedLen {
		return ErrShort
	}
	tok, n, err := ParseInitialToken(body, datagram)
	if err != nil {
		return err
	}
	if len(body) < initialFixedLen+n-2 {
		return ErrLength
	}
	in.Token = tok
	p := body[n:]
	in.Options = binary.BigEndian.Uint32(p)
	if in.Options != 0 {
		return ErrReserved
	}
	in.CryptoOffset = int64(binary.BigEndian.Uint32(p[4:]))
	m := int(binary.BigEndian.Uint16(p[8:]))
	if len(p) < 10+m {
		return ErrLength
	}
	in.Crypto = nilIfEmpty(p[10 : 10+m])
	for _, c := range p[10+m:] {
		if c != 0 {
			return ErrReserved
		}
	}
	return nil
}

// nilIfEmpty returns b, or nil if it is empty, so that a decoded empty
// field compares equal to an unset one.
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Retry answers an Initial that carried no valid token (type Retry, server
// → client): token length (16) | token | integrity tag (128). The client
// sends its Initial again at once with the token in it (RFC 9000 §8.1.2,
// §17.2.5). The token is 1 to MaxTokenLen bytes: an empty one could
// validate nothing, so it is ErrLength. The tag (version 3) is RFC 9001
// §5.8's Retry integrity tag, over the whole datagram before it
// (internal/seal: AppendRetryTag, RetryTagValid): a client drops a Retry
// whose tag fails. A Retry carries no padding: it is always far smaller
// than the Initial it answers, so it amplifies nothing.
type Retry struct {
	Token []byte // aliases the datagram
	Tag   []byte // aliases the datagram; RetryTagLen bytes once parsed
}

// RetryTagLen is the length of a Retry's integrity tag.
const RetryTagLen = 16

// AppendRetry appends r's body to b: the token, then r.Tag as it is. A
// sender leaves Tag empty and appends the tag computed over the whole
// datagram (seal.AppendRetryTag). The caller keeps 1 ≤ len(r.Token) ≤
// MaxTokenLen.
func AppendRetry(b []byte, r *Retry) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Token)))
	b = append(b, r.Token...)
	return append(b, r.Tag...)
}

// ParseRetry decodes a Retry body into r. It checks the lengths, not the
// tag (the caller checks that against the whole datagram).
func ParseRetry(body []byte, r *Retry) error {
	if len(body) < 2+RetryTagLen {
		return ErrShort
	}
	n := int(binary.BigEndian.Uint16(body))
	if n == 0 || n > MaxTokenLen || len(body) != 2+n+RetryTagLen {
		return ErrLength
	}
	r.Token = body[2 : 2+n]
	r.Tag = body[2+n:]
	return nil
}

// NewToken gives the client a token for its next connection to this
// server (type NewToken, RFC 9000 §19.7's NEW_TOKEN): token length (16) |
// token. The client puts it in the Initial of that connection, and a
// server that can open it skips the Retry's round trip (RFC 9000 §8.1.3).
// Sent by the server only, protected under the application keys.
type NewToken struct {
	Token []byte // aliases the datagram
}

// AppendNewToken appends t's body to b. The caller keeps 1 ≤ len(t.Token)
// ≤ MaxTokenLen.
func AppendNewToken(b []byte, t *NewToken) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Token)))
	return append(b, t.Token...)
}

// ParseNewToken decodes a NewToken body into t.
func ParseNewToken(body []byte, t *NewToken) error {
	if len(body) < 2 {
		return ErrShort
	}
	n := int(binary.BigEndian.Uint16(body))
	if n == 0 || n > MaxTokenLen || len(body) != 2+n {
		return ErrLength
	}
	t.Token = body[2:]
	return nil
}

// Close ends a connection (type Close): error code (32) | reason length (8)
// | reason (UTF-8, at most 255 bytes).
type Close struct {
	Code   uint32
	Reason []byte // aliases the datagram
}

// AppendClose appends c's body to b (the reason cut to at most 255 bytes,
// at a rune boundary so that a UTF-8 reason stays valid UTF-8).
func AppendClose(b []byte, c *Close) []byte {
	r := c.Reason
	if len(r) > 255 {
		// Back off over continuation bytes of a rune r[:255] would split;
		// more than UTFMax−1 of them means r is not UTF-8: cut at 255.
		n := 255
		for n > 255-(utf8.UTFMax-1) && !utf8.RuneStart(r[n]) {
			n--
		}
		if !utf8.RuneStart(r[n]) {
			n = 255
		}
		r = r[:n]
	}
	b = binary.BigEndian.AppendUint32(b, c.Code)
	b = append(b, byte(len(r)))
	return append(b, r...)
}

// ParseClose decodes a Close body into c.
func ParseClose(body []byte, c *Close) error {
	if len(body) < 5 {
		return ErrShort
	}
	c.Code = binary.BigEndian.Uint32(body)
	n := int(body[4])
	if len(body) != 5+n {
		return ErrLength
	}
	c.Reason = body[5:]
	return nil
}

// ParsePing checks a Ping body: empty, or padding of zero bytes
// (ErrReserved otherwise). A protected PING without padding is 44 bytes,
// too short to draw a stateless reset (MinResetTrigger), so senders pad
// it by PingPadding, as RFC 9000 §10.3 asks of every packet that a reset
// should be able to answer.
func ParsePing(body []byte) error {
	for _, c := range body {
		if c != 0 {
			return ErrReserved
		}
	}
	return nil
}

// PingPadding is the padding a protected PING carries so that it is
// MinResetTrigger bytes: header, padding and AEAD tag.
const PingPadding = MinResetTrigger - HeaderLen - ProtectedOverhead

// A PMTU probe (type PMTUProbe) is RFC 8899 §4.1's probe packet: a body
// of zero bytes only, as long as it takes to make the datagram the size
// being probed. It carries nothing, so a peer acknowledges it and drops
// it; the padding must be zero (ErrReserved otherwise), so that a probe
// cannot smuggle data past a decoder and the format stays canonical.

// AppendPMTUProbe appends n bytes of probe padding to b (none if n ≤ 0).
func AppendPMTUProbe(b []byte, n int) []byte {
	for range max(n, 0) {
		b = append(b, 0)
	}
	return b
}

// ParsePMTUProbe checks a PMTU probe's body: any length, all zero.
func ParsePMTUProbe(body []byte) error {
	for _, c := range body {
		if c != 0 {
			return ErrReserved
		}
	}
	return nil
}

// Crypto carries TLS handshake bytes (type Crypto), RFC 9000 §19.6's
// CRYPTO frame: offset (32) | length (16) | data. The TLS encryption level
// is the packet's epoch: EpochInitial for the Initial level (the server's
// ServerHello; the client's goes in its Initial; unprotected in the
// plaintext mode, which sends none), EpochHandshake for the
// Handshake level, an application epoch for post-handshake messages
// (session tickets). Offsets count per level from 0.
type Crypto struct {
	Offset int64
	Data   []byte // aliases the datagram
}

// CryptoOverhead is the body bytes of a Crypto frame besides its data.
const CryptoOverhead = 4 + 2

// MaxHandshakeBytes bounds the handshake bytes of one level (RFC 9000 §7.5
// lets an endpoint bound its buffering; 64 KiB holds any sane certificate
// chain).
const MaxHandshakeBytes = 1 << 16

// AppendCrypto appends c's body to b.
func AppendCrypto(b []byte, c *Crypto) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(c.Offset))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Data)))
	return append(b, c.Data...)
}

// ParseCrypto decodes a Crypto body into c. The data must end at or below
// MaxHandshakeBytes (ErrLength).
func ParseCrypto(body []byte, c *Crypto) error {
	if len(body) < CryptoOverhead {
		return ErrShort
	}
	off := int64(binary.BigEndian.Uint32(body))
	n := int(binary.BigEndian.Uint16(body[4:]))
	if len(body)-CryptoOverhead != n || off+int64(n) > MaxHandshakeBytes {
		return ErrLength
	}
	c.Offset = off
	c.Data = body[CryptoOverhead:]
	return nil
}

// PathDataLen is the length of a path challenge's data (RFC 9000 §19.17).
const PathDataLen = 8

// PathChallenge asks the peer to prove it receives at an address (type
// PathChallenge), RFC 9000 §19.17's PATH_CHALLENGE: data (64 bits), which
// the sender chooses unpredictably, so that only an endpoint that reads
// the packet at that address can echo it.
type PathChallenge struct {
	Data [PathDataLen]byte
}

// PathResponse echoes a PathChallenge's data (type PathResponse), RFC 9000
// §19.18's PATH_RESPONSE: data (64 bits).
type PathResponse struct {
	Data [PathDataLen]byte
}

// AppendPathChallenge appends c's body to b.
func AppendPathChallenge(b []byte, c *PathChallenge) []byte { return append(b, c.Data[:]...) }

// ParsePathChallenge decodes a PathChallenge body into c: exactly
// PathDataLen bytes (ErrShort below, ErrLength above).
func ParsePathChallenge(body []byte, c *PathChallenge) error {
	return parsePathData(body, &c.Data)
}

// AppendPathResponse appends r's body to b.
func AppendPathResponse(b []byte, r *PathResponse) []byte { return append(b, r.Data[:]...) }

// ParsePathResponse decodes a PathResponse body into r, as
// ParsePathChallenge.
func ParsePathResponse(body []byte, r *PathResponse) error {
	return parsePathData(body, &r.Data)
}

func parsePathData(body []byte, d *[PathDataLen]byte) error {
	switch {
	case len(body) < PathDataLen:
		return ErrShort
	case len(body) > PathDataLen:
		return ErrLength
	}
	copy(d[:], body)
	return nil
}

// Commit is the stream receiver's end-to-end commit (type Commit): the
// committed offset (64). The receiving application has durably stored the
// stream's bytes [0, Offset) — written and synced, not merely buffered —
// which an ACK can never say: an ACK means the bytes reached the peer's
// receive buffer (RFC 9000 §2.2 leaves delivery to the application; the
// end-to-end argument, Saltzer, Reed and Clark 1984, says only the
// application can confirm it). It is ack-eliciting and always protected
// with TLS; the latest is resent until acknowledged, and a smaller offset
// than one already received changes nothing.
type Commit struct {
	Offset int64
}

// CommitLen is a Commit body's length.
const CommitLen = 8

// AppendCommit appends c's body to b. The caller keeps 0 ≤ Offset ≤
// MaxStreamOffset.
func AppendCommit(b []byte, c *Commit) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(c.Offset))
}

// ParseCommit decodes a Commit body into c: exactly CommitLen bytes
// (ErrShort, ErrLength), an offset within MaxStreamOffset (ErrLength).
func ParseCommit(body []byte, c *Commit) error {
	if len(body) < CommitLen {
		return ErrShort
	}
	if len(body) != CommitLen {
		return ErrLength
	}
	off := binary.BigEndian.Uint64(body)
	if off > MaxStreamOffset {
		return ErrLength
	}
	c.Offset = int64(off)
	return nil
}
