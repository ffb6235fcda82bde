// Package seal is fresh's packet protection: the AEAD keys a TLS 1.3
// handshake hands over, applied to every packet after the handshake; the
// Initial keys derived from the connection ID and the Retry's integrity
// tag, which protect the handshake's first datagrams against corruption
// and off-path forgery (initial.go); and the replay window that drops a
// packet seen before.
//
// The construction is QUIC's (RFC 9001 §5): from each traffic secret TLS
// exports, HKDF-Expand-Label (RFC 8446 §7.1) derives a key and an IV; the
// nonce of a packet is the IV XOR its packet number, left-padded (§5.3);
// the packet's cleartext header is the associated data, so a changed header
// fails authentication like a changed body. Labels are fresh's own ("fresh
// key", "fresh iv", "fresh ku") so that keys can never be confused with a
// QUIC connection's derived from the same secret. Key update follows §6:
// the next secret is HKDF-Expand-Label(secret, "fresh ku").
//
// Unlike QUIC, headers are not protected (§5.4's header protection): the
// connection ID, packet number, frame type and send timestamp stay
// readable on path, as they are in the clear today. They are authenticated.
//
// It is sans-I/O and allocation-free per packet.
package seal
