package seal

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"sync"
)

// Initial keys (RFC 9001 §5.2). The handshake's first datagrams — the
// client's Initials (its ClientHello), the server's Crypto frames before
// the handshake keys (its ServerHello), and a Close sent before either end
// has handshake keys — are sealed like every later packet, with keys
// derived from the connection ID the client chose and a salt fixed for
// the wire version:
//
//	initial_secret = HKDF-Extract(InitialSalt, connection ID as 8 bytes, big-endian)
//	client_secret  = HKDF-Expand-Label(initial_secret, "fresh client in", "", 32)
//	server_secret  = HKDF-Expand-Label(initial_secret, "fresh server in", "", 32)
//
// each secret giving its key and IV as New does, with
// TLS_AES_128_GCM_SHA256 (AEAD_AES_128_GCM, the suite RFC 9001 §5.2 fixes
// for Initial packets, whatever TLS negotiates later).
//
// These keys keep nothing secret: anyone who sees the connection ID in a
// datagram's header derives them. What they give is integrity. A datagram
// changed on the way (a flipped bit) fails the AEAD and is dropped like a
// lost one, so the sender's retransmission repairs it, where without them
// a corrupted ServerHello handed the client wrong handshake keys and the
// handshake hung until it timed out; and a datagram forged by someone who
// has not seen the connection ID (off the path) fails too. An on-path
// attacker can still forge them, as with QUIC's Initial packets (RFC 9001
// §5.2: "Initial packets ... are not protected against on-path
// attackers"); the TLS handshake itself then fails, never completes with
// the forger.

// InitialSalt is the salt of wire version 3's Initial keys: the first 20
// bytes of SHA-256("fresh wire version 3 initial salt"). It is
// version-specific as QUIC's is (RFC 9001 §5.2): a version that changes the
// Initial packets draws a new one, so that one version's keys never open
// another's packets.
var InitialSalt = []byte{
	0xc0, 0x36, 0x79, 0xb8, 0x61, 0xb0, 0xf1, 0xb0, 0x85, 0xb3,
	0xcb, 0xb9, 0xf9, 0x27, 0xbc, 0xf2, 0x3a, 0x8a, 0x93, 0xd8,
}

// Initial-secret labels (HKDF-Expand-Label, RFC 8446 §7.1): fresh's own,
// as New's are, so that no key is ever a QUIC connection's.
const (
	labelClientInitial = "fresh client in"
	labelServerInitial = "fresh server in"
)

// NewInitial returns one direction's Initial keys of the connection whose
// client chose connID: the client's (client true: it seals with them, the
// server opens) or the server's.
func NewInitial(connID uint64, client bool) (*Keys, error) {
	label := labelServerInitial
	if client {
		label = labelClientInitial
	}
	secret, err := initialSecret(InitialSalt, connID, label)
	if err != nil {
		return nil, err
	}
	return New(tls.TLS_AES_128_GCM_SHA256, secret)
}

// initialSecret is one direction's Initial secret under salt and label.
func initialSecret(salt []byte, connID uint64, label string) ([]byte, error) {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], connID)
	return initialSecretOf(salt, id[:], label)
}

// initialSecretOf is initialSecret for a connection ID of any length (RFC
// 9001's test vectors use QUIC's).
func initialSecretOf(salt, connID []byte, label string) ([]byte, error) {
	prk, err := hkdf.Extract(sha256.New, connID, salt)
	if err != nil {
		return nil, err
	}
	return expandLabel(sha256.New, prk, label, sha256.Size)
}

// The Retry's integrity tag (RFC 9001 §5.8). A Retry is sent by a
// listener that keeps no state, so it cannot be sealed under keys of the
// connection; as QUIC's, it ends with a 16-byte tag: AEAD_AES_128_GCM
// under a fixed key and nonce, over an empty plaintext, with the whole
// Retry before the tag as associated data. Its header holds the
// connection ID the client chose (a fresh Retry keeps it), so the tag
// binds the Retry to the client's original connection ID, as QUIC's
// pseudo-packet does. Like the Initial keys it is no secret: it detects a
// corrupted Retry, and one forged by someone who has not seen the
// client's Initial.
//
// The key and nonce are the key and IV New derives from the secret
// HKDF-Extract(InitialSalt, "fresh retry").
const RetryTagLen = Overhead

// retryKeys are the Retry tag's key and nonce, derived once. Keys keep
// scratch nonces, so every use holds the lock: a listener's read loop
// tags its Retries, any number of clients check one each.
var retryKeys = sync.OnceValue(func() *Keys {
	prk, err := hkdf.Extract(sha256.New, []byte("fresh retry"), InitialSalt)
	if err != nil {
		panic(err) // SHA-256 with a constant input never fails
	}
	k, err := New(tls.TLS_AES_128_GCM_SHA256, prk)
	if err != nil {
		panic(err)
	}
	return k
})

var retryMu sync.Mutex

// AppendRetryTag appends the integrity tag of the Retry datagram b (its
// header and body up to the tag) to b.
func AppendRetryTag(b []byte) []byte {
	k := retryKeys()
	retryMu.Lock()
	defer retryMu.Unlock()
	return k.Seal(b, len(b), 0, false)
}

// RetryTagValid reports whether the Retry datagram b ends with the tag of
// what precedes it. It does not change b.
func RetryTagValid(b []byte) bool {
	if len(b) < RetryTagLen {
		return false
	}
	k := retryKeys()
	retryMu.Lock()
	defer retryMu.Unlock()
	// The tag is the whole ciphertext of an empty plaintext: Open checks
	// it and writes nothing.
	_, err := k.Open(b, len(b)-RetryTagLen, 0, false)
	return err == nil
}
