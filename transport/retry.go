package transport

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
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
	// retryTokenLifetime is how long a token is good for. A client answers
	// a Retry at once; 10 s leaves room for its Initial's retransmissions
	// (250 ms doubling: the fifth goes 7.75 s after the first) while
	// keeping short the window in which an on-path observer could replay
	// a token from the same address.
	retryTokenLifetime = 10 * time.Second
	// retryKeyRotation is how often a fresh key replaces the current one;
	// the previous key is kept for tokens issued just before. It must be
	// at least the lifetime, so that a live token's key is always one of
	// the two.
	retryKeyRotation = time.Minute

	retryNonceLen = 12
	retryTokenLen = 1 + retryNonceLen + 8 + 16
)

// retryTokens mints and checks Retry tokens. Not safe for concurrent use:
// a Listener's read loop is its only user.
type retryTokens struct {
	lifetime, rotation time.Duration

	cur, prev cipher.AEAD
	gen       uint8 // cur's generation; prev is gen−1
	rotatedAt clock.Mono
	counter   uint64 // nonces under cur: a counter never repeats
	ad        [16 + 2 + 8]byte
	stamp     [8]byte // the issue time, sealed or opened (a field: a local would escape to the AEAD)
}

func newRetryTokens(now clock.Mono) *retryTokens {
	t := &retryTokens{lifetime: retryTokenLifetime, rotation: retryKeyRotation, rotatedAt: now}
	t.cur = newTokenKey()
	return t
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

// valid reports whether token was minted by this Listener, under a key
// still kept, for a client at from opening connID, within its lifetime.
func (t *retryTokens) valid(token []byte, from netip.AddrPort, connID uint64, now clock.Mono) bool {
	t.rotate(now)
	if len(token) != retryTokenLen {
		return false
	}
	var key cipher.AEAD
	switch token[0] {
	case t.gen:
		key = t.cur
	case t.gen - 1:
		key = t.prev
	}
	if key == nil {
		return false
	}
	plain, err := key.Open(t.stamp[:0], token[1:1+retryNonceLen], token[1+retryNonceLen:], t.associated(from, connID))
	if err != nil {
		return false
	}
	age := now.Sub(clock.Mono(binary.BigEndian.Uint64(plain)))
	return age >= 0 && age <= t.lifetime
}
