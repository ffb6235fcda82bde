package session

import (
	"github.com/fresh-udp/fresh/internal/seal"
	"github.com/fresh-udp/fresh/internal/wire"
)

// What a listener sends and reads before it keeps any state for a
// connection: the Retry that validates a client's address (RFC 9000
// §8.1.2), the sealed Initial whose token it checks, and the Close that
// refuses a token it cannot take (§8.1.3). Each call stands alone and
// derives the keys it needs, so a listener's read loop may call them for
// any connection ID.

// closeInvalidToken: the server refused the address-validation token of
// the client's Initial (QUIC's INVALID_TOKEN, 0x0b, RFC 9000 §20.1).
const closeInvalidToken uint32 = 0x0b

// AppendRetry writes into buf, from its start, a whole Retry datagram for
// the client's connection ID connID carrying token, stamped wallUS, with
// its integrity tag (RFC 9001 §5.8) over the rest. The caller keeps
// 1 ≤ len(token) ≤ wire.MaxTokenLen.
func AppendRetry(buf []byte, connID uint64, wallUS int64, token []byte) []byte {
	b := wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeRetry, ConnID: connID, Timestamp: wallUS})
	b = wire.AppendRetry(b, &wire.Retry{Token: token})
	return seal.AppendRetryTag(b)
}

// OpenInitial authenticates and decrypts a sealed Initial datagram b (h
// is its header, as wire.ParseHeader gave it) into dst, leaving b as it
// is for the session that may take it next, and returns the plaintext
// body, its token (readable before, wire.ParseInitialToken) included. It
// fails with seal.ErrAuth for an Initial not sealed under the Initial
// keys of its connection ID: corrupted on the way, or forged by someone
// who has not seen that ID. A listener opens an Initial before it keeps
// state for it, or refuses its token.
func OpenInitial(dst []byte, h *wire.Header, b []byte) ([]byte, error) {
	if h.Type != wire.TypeInitial || h.Epoch != wire.EpochInitial || len(b) < wire.HeaderLen {
		return nil, seal.ErrAuth
	}
	k, err := seal.NewInitial(h.ConnID, true)
	if err != nil {
		return nil, err
	}
	return openInitialLevel(k, h, append(dst[:0], b...), isControl(h.Type))
}

// AppendTokenRefusal writes into buf, from its start, a Close that
// answers an Initial (header h) whose address-validation token the
// listener refused, saying why in reason: RFC 9000 §8.1.3's INVALID_TOKEN.
// A client accepts one Retry per connection (§17.2.5.2), so dropping its
// Initial would leave it resending the token until it timed out; with
// this Close its Dial fails at once with ErrInvalidToken. It is sealed
// under the server's Initial keys when the Initial was sealed, in the
// clear when it was not (a plaintext client's); it is the first packet
// the server sends under those keys, so its packet number is 0.
func AppendTokenRefusal(buf []byte, h *wire.Header, wallUS int64, reason string) ([]byte, error) {
	b := wire.AppendHeader(buf[:0], wire.Header{Type: wire.TypeClose, ConnID: h.ConnID, Timestamp: wallUS})
	b = wire.AppendClose(b, &wire.Close{Code: closeInvalidToken, Reason: []byte(reason)})
	if h.Flags&wire.FlagProtected == 0 {
		return b, nil
	}
	k, err := seal.NewInitial(h.ConnID, false)
	if err != nil {
		return nil, err
	}
	b[2] |= wire.FlagProtected
	b[3] = wire.EpochInitial
	return k.Seal(b, wire.HeaderLen, 0, isControl(wire.TypeClose)), nil
}
