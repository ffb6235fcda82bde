package session

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fresh-udp/fresh/internal/wire"
)

// Close codes are one 32-bit space shared by the transport and the
// application, split in ranges as QUIC keeps transport and application
// errors apart (RFC 9000 §20):
//
//	0x00000000–0x000000FF  transport (closeNormal, closeProtocol, closeIdle, closeAbort, closeNoTLS, closeInvalidToken)
//	0x00000100–0x000001FF  TLS alerts (closeTLSAlert + alert, RFC 9001 §4.8)
//	0x00000200–0x0000FFFF  reserved for the transport
//	0x00010000–0xFFFFFFFF  application: closeApplication + ApplicationError.Code
//
// A receiver takes a code in the application range as the peer
// application's, whatever its value: the transport gives it no meaning.
const closeApplication uint32 = 0x10000

// MaxApplicationCode is the largest code CloseWithError takes: the
// application range's size less one.
const MaxApplicationCode = ^uint32(0) - closeApplication

// ApplicationError is why a peer's application closed the connection
// (CloseWithError): a code and a reason of its own, which the transport
// carries and does not interpret. Its stream is aborted: Read returns the
// bytes that arrived and then this error, never io.EOF. It matches
// ErrPeerClosed and ErrStreamAborted with errors.Is; get it with
// errors.As(err, &appErr) where appErr is a *ApplicationError.
type ApplicationError struct {
	Code   uint32 // the application's code, 0 to MaxApplicationCode
	Reason string // the application's reason, valid UTF-8 (at most 255 bytes)
}

// Error is "transport: peer closed with application error CODE: REASON".
// The reason is the peer's text: it is Go-quoted unless every character
// is printable (strconv.IsPrint), so that a reason with a line break or a
// control character cannot start a forged line wherever the error is
// printed.
func (e *ApplicationError) Error() string {
	s := fmt.Sprintf("transport: peer closed with application error %d", e.Code)
	if e.Reason == "" {
		return s
	}
	return s + ": " + peerText(e.Reason)
}

// peerText is a peer's text as an error prints it: valid UTF-8, and
// Go-quoted unless every character is printable (strconv.IsPrint), so that
// a line break or a control character cannot start a forged line wherever
// the error is printed.
func peerText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Unwrap makes a peer's application close an ErrPeerClosed (the peer
// ended the connection) and an ErrStreamAborted (its stream is not whole).
func (e *ApplicationError) Unwrap() []error { return []error{ErrPeerClosed, ErrStreamAborted} }

// CloseWithError starts a local close that tells the peer the
// application's code and reason (cut to 255 bytes at a rune boundary):
// the peer's calls end with an *ApplicationError carrying them. The
// stream is aborted whatever was acknowledged, as with CloseAbort. A code
// above MaxApplicationCode is refused and nothing is closed.
func (s *Session) CloseWithError(code uint32, reason string) error {
	if code > MaxApplicationCode {
		return fmt.Errorf("%w: CloseWithError code %d above the largest application code %d", ErrInvalidConfig, code, MaxApplicationCode)
	}
	s.close()
	if s.closePending {
		s.closeCode = closeApplication + code
		s.closeReason = append(s.closeReason[:0], reason...)
	}
	return nil
}

// peerApplicationError is the error of a CLOSE in the application range.
// The reason comes from the peer: made valid UTF-8 so that printing it
// cannot produce broken text (Error quotes it if it has unprintable
// characters; a caller printing Reason itself must quote it too).
func peerApplicationError(c *wire.Close) *ApplicationError {
	return &ApplicationError{Code: c.Code - closeApplication, Reason: strings.ToValidUTF8(string(c.Reason), "\uFFFD")}
}
