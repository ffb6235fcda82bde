package cli

import (
	"strconv"
	"unicode/utf8"
)

// What a peer chooses (its certificate's name, its close reason, its
// readings) reaches the examples' output lines, which an operator reads
// and scripts parse line by line. Printed raw, a name with a newline
// would start a line of its own — a whole forged "upload complete" — and
// one with spaces could pass for the fields after it. Name and Text print
// such strings so that they cannot.

// Name is a peer's name (a certificate's CommonName) as the examples
// print it: as it is when it is a plain token of letters, digits and
// "-", "_", ".", ":", otherwise Go-quoted ("agent 1\n" prints as
// "\"agent 1\\n\""), so that it is always one field and never more.
func Name(s string) string {
	if s == "" {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return strconv.Quote(s)
		}
	}
	return s
}

// Text is a peer's free text (a close reason) at the end of a line: as it
// is when every character is printable (strconv.IsPrint: no line or
// paragraph separators, no control or bidirectional formatting
// characters) and it is valid UTF-8, otherwise Go-quoted, so that it
// cannot start a line or rewrite what the terminal shows.
func Text(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
