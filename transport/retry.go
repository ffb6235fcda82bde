package transport

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// Address validation by stateless Retry (RFC 9000 §8.1.2): a Listener
// answers an Initial without a token with a Retry carrying a token, and
// creates a connection only for an Initial that echoes a valid one. Only a
// client that receives at its source address can echo it, so a forged
// source address costs the Listener one small Retry (smaller than the
// Initial: no amplification) and no state at all.
//
// The token is an AES-GCM box the Listener alone can open, so nothing
// needs remembering between the Retry and the Initial that answers it:
//
//	key generation (8) | nonce (96) | sealed issue time (64) | tag (128)
//
// 37 bytes. The issue time is the Listener's monotonic clock (the key
// lives in this process only, so a wall-clock step cannot stretch a
// token's life); the client's address and port and the connection ID are
// the associated data: authenticated, not sent, so a token opens only for
// the address and connection it was issued to.
const (
	// retryTokenLifetime is how long a token is good for at least. A
	// client answers a Retry at once, and resends the Initial carrying
	// the token until its handshake completes or HandshakeTimeout (10 s
	// by default) passes: a token of 10 s outlives every default client's
	// handshake, since the Retry comes after the Dial began, while keeping
	// short the window in which an on-path observer could replay a token
	// from the same address. A Listener whose HandshakeTimeout is longer
	// (a server of clients on lossy links, configured to wait) gives its
	// tokens that long: its clients may need as long to get one Initial
	// through, and one whose token expired first could only fail (it takes
	// one Retry per connection). An Initial whose token is refused is
	// answered with a Close saying why (INVALID_TOKEN, RFC 9000 §8.1.3).
	retryTokenLifetime = 10 * time.Second
	// retryKeyRotation is how often a fresh key replaces the current one,
	// at least; the previous key is kept for tokens issued just before. It
	// must be at least the lifetime, so that a live token's key is always
	// one of the two.
	retryKeyRotation = time.Minute

	retryNonceLen = 12
	retryTokenLen = 1 + retryNonceLen + 8 + 16
)

// retryTokens mints and checks Retry tokens. Not safe for concurrent use:
// a Listener's read loop is its only user.
type retryTokens struct {
	lifetime, rotation time.Duration
	// ipOnly binds tokens to the client's IP address alone (NewToken
	// tokens: a client's next connection comes from another port, and
	// under another connection ID).
	ipOnly bool

	cur, prev cipher.AEAD
	gen       uint8 // cur's generation; prev is gen−1
	rotatedAt clock.Mono
	counter   uint64 // nonces under cur: a counter never repeats
	ad        [16 + 2 + 8]byte
	stamp     [8]byte // the issue time, sealed or opened (a field: a local would escape to the AEAD)
}

// newRetryTokens returns the tokens of a Listener whose handshakes may
// take handshakeTimeout: valid that long, and at least
// retryTokenLifetime.
func newRetryTokens(now clock.Mono, handshakeTimeout time.Duration) *retryTokens {
	lifetime := max(retryTokenLifetime, handshakeTimeout)
	t := &retryTokens{lifetime: lifetime, rotation: max(retryKeyRotation, lifetime), rotatedAt: now}
	t.cur = newTokenKey()
	return t
}

// Tokens for the next connection (RFC 9000 §8.1.3), given in a NewToken
// frame once a handshake completes (internal/session/newtoken.go): the
// Retry token's box, bound to the client's IP address only, prefixed with
// newTokenMarker (so a Retry token, one byte shorter, is never taken for
// one), and valid for newTokenLifetime: a device that wakes every few
// minutes, or hours, to report, connects without the Retry's round trip.
// The keys live in this process only: after a restart every such token is
// refused and its client pays the Retry, as without a token. A token
// observed on the path lets its observer skip the Retry from that IP
// address (spoofing it) until the token expires, which is why it is
// bound to the address and expires at all (RFC 9000 §8.1.3, §21.3).
const (
	newTokenLifetime = 24 * time.Hour
	newTokenMarker   = 0xfe
	newTokenLen      = 1 + retryTokenLen
)

// newNewTokens returns the minter of a Listener's NewToken tokens.
func newNewTokens(now clock.Mono) *retryTokens {
	t := &retryTokens{lifetime: newTokenLifetime, rotation: newTokenLifetime, ipOnly: true, rotatedAt: now}
	t.cur = newTokenKey()
	return t
}

// isNewToken reports whether an Initial's token is shaped as a NewToken
// token (which it may still fail to be).
func isNewToken(token []byte) bool { return len(token) == newTokenLen && token[0] == newTokenMarker }

// mintNew appends a NewToken token for a client at from, issued now.
func (t *retryTokens) mintNew(b []byte, from netip.AddrPort, now clock.Mono) []byte {
	return t.mint(append(b, newTokenMarker), from, 0, now)
}

// newTokenKey returns an AES-128-GCM key drawn from crypto/rand.
func newTokenKey() cipher.AEAD {
	var k [16]byte
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // a 16-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// rotate replaces the key once its rotation period has passed.
func (t *retryTokens) rotate(now clock.Mono) {
	if now.Sub(t.rotatedAt) < t.rotation {
		return
	}
	t.prev, t.cur = t.cur, newTokenKey()
	t.gen++
	t.counter = 0
	t.rotatedAt = now
}

// associated fills the associated data: who the token is for.
func (t *retryTokens) associated(from netip.AddrPort, connID uint64) []byte {
	if t.ipOnly {
		from, connID = netip.AddrPortFrom(from.Addr(), 0), 0
	}
	ip := from.Addr().Unmap().As16()
	copy(t.ad[:16], ip[:])
	binary.BigEndian.PutUint16(t.ad[16:], from.Port())
	binary.BigEndian.PutUint64(t.ad[18:], connID)
	return t.ad[:]
}

// mint appends a token for a client at from opening connID, issued now.
func (t *retryTokens) mint(b []byte, from netip.AddrPort, connID uint64, now clock.Mono) []byte {
	t.rotate(now)
	t.counter++
	b = append(b, t.gen)
	nonce := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, t.counter)
	binary.BigEndian.PutUint64(t.stamp[:], uint64(now))
	return t.cur.Seal(b, b[nonce:nonce+retryNonceLen], t.stamp[:], t.associated(from, connID))
}

// errTokenForeign: a token this Listener cannot open for the Initial that
// carries it. The AEAD cannot tell why, so the reason names every cause.
var errTokenForeign = errors.New("not issued by this server for this address, port and connection ID (the client's address changed since the Retry, the token is another server's or older than its key, or it was damaged)")

// valid reports whether token was minted by this Listener, under a key
// still kept, for a client at from opening connID, within its lifetime.
func (t *retryTokens) valid(token []byte, from netip.AddrPort, connID uint64, now clock.Mono) bool {
	return t.check(token, from, connID, now) == nil
}

// check is valid with the reason a token is not: errTokenForeign, or its
// age past the lifetime. Only an expired token's reason allocates.
func (t *retryTokens) check(token []byte, from netip.AddrPort, connID uint64, now clock.Mono) error {
	t.rotate(now)
	if len(token) != retryTokenLen {
		return errTokenForeign
	}
	var key cipher.AEAD
	switch token[0] {
	case t.gen:
		key = t.cur
	case t.gen - 1:
		key = t.prev
	}
	if key == nil {
		return errTokenForeign
	}
	plain, err := key.Open(t.stamp[:0], token[1:1+retryNonceLen], token[1+retryNonceLen:], t.associated(from, connID))
	if err != nil {
		return errTokenForeign
	}
	switch age := now.Sub(clock.Mono(binary.BigEndian.Uint64(plain))); {
	case age < 0:
		return errTokenForeign // issued later than now: not by this clock
	case age > t.lifetime:
		return fmt.Errorf("expired: issued %v ago, valid %v", age.Round(time.Millisecond), t.lifetime)
	}
	return nil
}
