package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// Overhead is the bytes the AEAD tag adds to every protected packet (16
// for each TLS 1.3 suite).
const Overhead = 16

// ErrAuth is a packet that failed authentication: forged, corrupted, or
// protected with other keys.
var ErrAuth = errors.New("seal: packet failed authentication")

// Keys protects one direction of one connection at one key phase.
type Keys struct {
	suite  uint16
	secret []byte
	aead   cipher.AEAD
	iv     [12]byte
	// Scratch nonces, so that Seal and Open do not allocate. A Keys is
	// used by one goroutine at a time (one direction of one session).
	nonce, openNonce [12]byte
}

// suiteHash is the hash of a TLS 1.3 cipher suite (RFC 8446 §B.4).
func suiteHash(suite uint16) (func() hash.Hash, int, error) {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		return sha256.New, 16, nil
	case tls.TLS_AES_256_GCM_SHA384:
		return sha512.New384, 32, nil
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return sha256.New, 32, nil
	}
	return nil, 0, fmt.Errorf("seal: unsupported cipher suite %#04x", suite)
}

// expandLabel is HKDF-Expand-Label of RFC 8446 §7.1 with an empty context:
// the info is length (16) | "tls13 " + label as a one-byte-length vector |
// an empty context vector.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0)
	return hkdf.Expand(h, secret, string(info), n)
}

// New derives the keys of one traffic secret of the given TLS 1.3 suite.
func New(suite uint16, secret []byte) (*Keys, error) {
	h, keyLen, err := suiteHash(suite)
	if err != nil {
		return nil, err
	}
	key, err := expandLabel(h, secret, "fresh key", keyLen)
	if err != nil {
		return nil, err
	}
	iv, err := expandLabel(h, secret, "fresh iv", 12)
	if err != nil {
		return nil, err
	}
	k := &Keys{suite: suite, secret: append([]byte(nil), secret...)}
	copy(k.iv[:], iv)
	if suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		k.aead, err = chacha20poly1305.New(key)
	} else {
		var block cipher.Block
		if block, err = aes.NewCipher(key); err == nil {
			k.aead, err = cipher.NewGCM(block)
		}
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Next is the keys of the next key phase (RFC 9001 §6.1): the secret moves
// on by HKDF-Expand-Label(secret, "fresh ku") and both key and IV are
// derived from it again.
func (k *Keys) Next() (*Keys, error) {
	h, _, _ := suiteHash(k.suite)
	next, err := expandLabel(h, k.secret, "fresh ku", len(k.secret))
	if err != nil {
		return nil, err
	}
	return New(k.suite, next)
}

// Limit is how many packets one key may protect before a key update: the
// confidentiality limit of RFC 9001 §6.6 (2^23 for AES-GCM; ChaCha20-Poly1305's
// is beyond any connection's life, so it shares the AES figure to keep one
// rule).
func (k *Keys) Limit() int64 { return 1 << 23 }

// setNonce writes IV XOR (space<<63 | pn) into the scratch nonce (RFC 9001
// §5.3). The space bit separates the two packet-number sequences a fresh
// sender keeps: acknowledged packets (stream, updates, probes) and control
// packets (ACKs, handshake, close), so that no nonce repeats under one key.
func (k *Keys) setNonce(nonce *[12]byte, pn uint64, control bool) {
	if control {
		pn |= 1 << 63
	}
	*nonce = k.iv
	for i := range 8 {
		nonce[4+i] ^= byte(pn >> (56 - 8*i))
	}
}

// Seal encrypts the body p[hdr:] of packet p in place, with p[:hdr] as the
// associated data, and returns the packet with its tag appended. p must
// have Overhead bytes of spare capacity, or Seal reallocates.
func (k *Keys) Seal(p []byte, hdr int, pn uint64, control bool) []byte {
	k.setNonce(&k.nonce, pn, control)
	return k.aead.Seal(p[:hdr], k.nonce[:], p[hdr:], p[:hdr])
}

// Open authenticates and decrypts the body p[hdr:] in place and returns the
// plaintext body (aliasing p), or ErrAuth.
func (k *Keys) Open(p []byte, hdr int, pn uint64, control bool) ([]byte, error) {
	k.setNonce(&k.openNonce, pn, control)
	body, err := k.aead.Open(p[hdr:hdr], k.openNonce[:], p[hdr:], p[:hdr])
	if err != nil {
		return nil, ErrAuth
	}
	return body, nil
}
