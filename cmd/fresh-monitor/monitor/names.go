package monitor

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Device names. A device's name becomes a KV key, a token of three NATS
// subjects and part of an object's name, and NATS has limits a name must
// fit: a client's protocol line ("HPUB <subject> <reply> <sizes>") may
// be at most max_control_line bytes (4,096 by default), and a server
// that reads a longer one closes the connection, for good (nats.go does
// not reconnect after that error), cutting the monitor off from NATS for
// every device. So the monitor takes only names it can store, and
// refuses the others at the handshake (VerifyPeerName):
//
//   - at most MaxNameLength (64) characters: RFC 5280's ub-common-name,
//     the most a certificate's CommonName may hold, so a name a CA can
//     legally issue is never refused for its length;
//   - valid UTF-8 without control characters (U+0000–U+001F, U+007F,
//     U+0080–U+009F): a name is printed in logs and dashboards, where a
//     newline or an escape sequence would forge lines or hide the name,
//     and invalid UTF-8 (a T61String CommonName, which Go hands over as
//     raw bytes) shows as U+FFFD, two such devices looking like one;
//   - anything else is taken: ".", "*", ">", "..", "/", spaces and any
//     other Unicode are escaped by Key.
//
// The budget, at the longest name (64 characters of 4 bytes, 256 bytes,
// each byte escaped into 3): a key of 768 bytes, $KV.<bucket>.<key> of
// 1,025 bytes and $O.<bucket>.M.<object name in base64> of 1,321 bytes
// even with the longest bucket names JetStream allows (its stream names
// are at most 255 bytes), fresh.update.<key> of 781: each protocol line
// under half of the default max_control_line (TestLongestNameFitsNATS
// computes them and stores such a name through a real server). A NATS
// server configured with a smaller max_control_line than about 1,400
// bytes can still be passed by a long name.

// MaxNameLength is the most characters (Unicode code points) of a device
// name the monitor takes: RFC 5280's ub-common-name.
const MaxNameLength = 64

// ErrBadName is why the monitor refuses a device's name; CheckName's
// errors wrap it.
var ErrBadName = errors.New("device name refused")

// CheckName says whether the monitor stores a device under name: nil,
// or an error wrapping ErrBadName that says what is wrong, quoting at most
// the name's first 32 characters, escaped. A name must have 1 to
// MaxNameLength characters of valid UTF-8 and no control character
// (U+0000–U+001F, U+007F–U+009F); anything else (".", "*", ">", "..",
// "/", spaces, any other Unicode) is escaped by Key and taken. The limit
// keeps every subject of the device under half of NATS's default
// 4,096-byte protocol line (the monitor's connection is closed for good
// past it); control characters and invalid UTF-8 are refused because a
// name is printed in logs and dashboards.
func CheckName(name string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %q%s: %s", ErrBadName, namePrefix(name), ellipsis(name), fmt.Sprintf(format, a...))
	}
	if name == "" {
		return fmt.Errorf("%w: empty", ErrBadName)
	}
	if !utf8.ValidString(name) {
		return bad("not valid UTF-8")
	}
	n := 0
	for i, r := range name {
		if unicode.IsControl(r) {
			return bad("control character %U at byte %d", r, i)
		}
		n++
	}
	if n > MaxNameLength {
		return bad("%d characters (%d bytes), more than %d (RFC 5280's ub-common-name)", n, len(name), MaxNameLength)
	}
	return nil
}

// namePrefix is name's first 32 characters (or bytes, if it is not
// UTF-8), for an error that must not carry a name of any length.
func namePrefix(name string) string {
	const keep = 32
	if !utf8.ValidString(name) {
		return name[:min(len(name), keep)]
	}
	i, n := 0, 0
	for i < len(name) && n < keep {
		_, size := utf8.DecodeRuneInString(name[i:])
		i += size
		n++
	}
	return name[:i]
}

func ellipsis(name string) string {
	if len(namePrefix(name)) < len(name) {
		return "…"
	}
	return ""
}

// VerifyPeerName is a transport.Config.VerifyPeer for the monitor's
// Listener: it refuses at the handshake a device whose certificate's
// CommonName, the name PeerName gives it, CheckName refuses. The device
// never gets a connection; the Listener counts it under
// fresh_handshakes_failed_total{reason="refused"} and logs CheckName's
// error (rate-limited). A peer without a certificate, or with an empty
// CommonName, is named by its address and taken.
func VerifyPeerName(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	if cn := cs.PeerCertificates[0].Subject.CommonName; cn != "" {
		return CheckName(cn)
	}
	return nil
}

// Key is the KV key and subject token of a device name. NATS keys take
// only letters, digits and "-/_=." (and no leading or trailing dot), and a
// subject token takes no ".", "*", ">" or white space, so every other byte
// is written as "=XX" (its hex value) and so is "=" itself: two names
// never share a key, and the key is one token of fresh.update.<key>.
// "/" and "." are escaped too, so a name cannot look like a hierarchy. An
// empty name is "=" (no device has it: an escape always has two digits).
// A key is at most three times its name's bytes long.
func Key(device string) string {
	if device == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(device); i++ {
		c := device[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}

// ObjectName is the object-store name of an upload: the device's key and
// the upload's start (its first byte's arrival, UTC, to the microsecond),
// so that each upload of a device is an object of its own, listed in
// order: "sensor-17/2026-12-02T03:04:05.123456Z".
func ObjectName(device string, start time.Time) string {
	return Key(device) + "/" + start.UTC().Format("2006-01-02T15:04:05.000000Z")
}
