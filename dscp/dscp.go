// Package dscp names DiffServ code points (RFC 2474) for the Config fields
// of package transport and of the quic-go hook: the constants, a parser
// for the names RFC 4594 uses, and text and flag support. It is its own
// small package so that both import it without importing each other.
package dscp

import (
	"fmt"
	"strconv"
	"strings"
)

// Codepoint is a DiffServ code point (RFC 2474): the upper six bits of the IPv4
// TOS byte or the IPv6 traffic class, which a DiffServ-aware queue (a Wi-Fi
// access point's WMM, CAKE's diffserv tins) uses to choose a class.
//
// The zero value is "unset": a Config field left zero takes the default
// written beside it, so leaving a field out can never mean best effort or
// CS7 by accident. Every other value is a code point; build one with the
// constants, Parse or FromCode, and read the six-bit number with Code.
// (Internally a set value is the code with bit 0x80 added.)
//
// *Codepoint is a flag.Value and an encoding.TextUnmarshaler, so it can back a
// command-line flag or a JSON/TOML string field directly.
type Codepoint uint8

// dscpSet marks a Codepoint as set; the low six bits are the code point.
const dscpSet Codepoint = 0x80

// The code points of RFC 2474 (class selectors), RFC 2597 (assured
// forwarding), RFC 3246 (expedited forwarding), RFC 5865 (voice admit) and
// RFC 8622 (lower effort), with the names RFC 4594 gives their use.
const (
	BestEffort Codepoint = dscpSet | 0 // DF / CS0: default forwarding
	LE         Codepoint = dscpSet | 1 // lower effort (RFC 8622)
	CS1        Codepoint = dscpSet | 8
	AF11       Codepoint = dscpSet | 10
	AF12       Codepoint = dscpSet | 12
	AF13       Codepoint = dscpSet | 14
	CS2        Codepoint = dscpSet | 16
	AF21       Codepoint = dscpSet | 18
	AF22       Codepoint = dscpSet | 20
	AF23       Codepoint = dscpSet | 22
	CS3        Codepoint = dscpSet | 24
	AF31       Codepoint = dscpSet | 26
	AF32       Codepoint = dscpSet | 28
	AF33       Codepoint = dscpSet | 30
	CS4        Codepoint = dscpSet | 32
	AF41       Codepoint = dscpSet | 34
	AF42       Codepoint = dscpSet | 36
	AF43       Codepoint = dscpSet | 38
	CS5        Codepoint = dscpSet | 40
	VA         Codepoint = dscpSet | 44 // voice admit (RFC 5865)
	EF         Codepoint = dscpSet | 46 // expedited forwarding (RFC 3246)
	CS6        Codepoint = dscpSet | 48 // network control
	CS7        Codepoint = dscpSet | 56 // network control; the updates' default
)

// dscpNames are the names Parse accepts besides CSn, AFxy and numbers,
// and String's name for each code that has one.
var dscpNames = map[string]Codepoint{
	"BE": BestEffort, "DF": BestEffort, "LE": LE, "VA": VA, "EF": EF,
}

// FromCode returns the Codepoint with the six-bit code point code (0..63).
func FromCode(code uint8) (Codepoint, error) {
	if code > 63 {
		return 0, fmt.Errorf("dscp: %d outside 0..63", code)
	}
	return dscpSet | Codepoint(code), nil
}

// Parse reads a code point by name or number, case-insensitively: BE
// or DF (0), LE, CS0..CS7, AFxy (x 1..4, y 1..3), VA, EF, or a decimal
// number 0..63.
func Parse(s string) (Codepoint, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if d, ok := dscpNames[u]; ok {
		return d, nil
	}
	switch {
	case len(u) == 3 && strings.HasPrefix(u, "CS") && u[2] >= '0' && u[2] <= '7':
		return dscpSet | Codepoint(u[2]-'0')<<3, nil // CSn = 8n (RFC 2474 §4.2.2)
	case len(u) == 4 && strings.HasPrefix(u, "AF") && u[2] >= '1' && u[2] <= '4' && u[3] >= '1' && u[3] <= '3':
		return dscpSet | Codepoint(u[2]-'0')<<3 | Codepoint(u[3]-'0')<<1, nil // AFxy = 8x + 2y (RFC 2597 §6)
	}
	if v, err := strconv.ParseUint(u, 10, 8); err == nil && v <= 63 {
		return dscpSet | Codepoint(v), nil
	}
	return 0, fmt.Errorf("dscp: %q: want BE, LE, CS0..CS7, AF11..AF43, VA, EF or a number 0..63", s)
}

// Code is the six-bit code point (0..63); the unset zero value has code 0.
func (d Codepoint) Code() uint8 { return uint8(d &^ dscpSet) }

// Valid reports whether d is unset or a set code point (not a plain number
// converted to Codepoint, which lacks the set bit).
func (d Codepoint) Valid() bool { return d == 0 || d&^63 == dscpSet }

// IsSet reports whether d is a code point rather than the unset zero value.
func (d Codepoint) IsSet() bool { return d&dscpSet != 0 }

// String is the code point's name (BE, CS7, AF41, EF, …), its number if it
// has none, or "unset" for the zero value.
func (d Codepoint) String() string {
	switch c := d.Code(); {
	case d == 0:
		return "unset"
	case !d.Valid():
		return fmt.Sprintf("invalid DSCP value %d", uint8(d)) // a raw number converted to Codepoint
	case c == 0:
		return "BE"
	case c == 1:
		return "LE"
	case c == 44:
		return "VA"
	case c == 46:
		return "EF"
	case c&7 == 0:
		return "CS" + strconv.Itoa(int(c>>3))
	case c>>3 >= 1 && c>>3 <= 4 && (c&7 == 2 || c&7 == 4 || c&7 == 6):
		return fmt.Sprintf("AF%d%d", c>>3, (c&7)>>1)
	default:
		return strconv.Itoa(int(c))
	}
}

// MarshalText writes d as String does, and the unset zero value as ""; a
// value that is not a DSCP (a raw number converted) is an error.
func (d Codepoint) MarshalText() ([]byte, error) {
	switch {
	case d == 0:
		return []byte{}, nil
	case !d.Valid():
		return nil, fmt.Errorf("dscp: %v", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads d with Parse; "" is the unset zero value (the
// field's default), so MarshalText's output always reads back.
func (d *Codepoint) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = 0
		return nil
	}
	return d.Set(string(b))
}

// Set reads d with Parse (flag.Value). Unlike UnmarshalText it refuses
// "": a flag given an empty value is more likely a mistake than a request
// for the default.
func (d *Codepoint) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
