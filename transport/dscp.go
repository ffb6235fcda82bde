package transport

import (
	"fmt"
	"strconv"
	"strings"
)

// DSCP is a DiffServ code point (RFC 2474): the upper six bits of the IPv4
// TOS byte or the IPv6 traffic class, which a DiffServ-aware queue (a Wi-Fi
// access point's WMM, CAKE's diffserv tins) uses to choose a class.
//
// The zero value is "unset": a Config field left zero takes the default
// written beside it, so leaving a field out can never mean best effort or
// CS7 by accident. Every other value is a code point; build one with the
// constants, ParseDSCP or DSCPCode, and read the six-bit number with Code.
// (Internally a set value is the code with bit 0x80 added.)
//
// *DSCP is a flag.Value and an encoding.TextUnmarshaler, so it can back a
// command-line flag or a JSON/TOML string field directly.
type DSCP uint8

// dscpSet marks a DSCP as set; the low six bits are the code point.
const dscpSet DSCP = 0x80

// The code points of RFC 2474 (class selectors), RFC 2597 (assured
// forwarding), RFC 3246 (expedited forwarding), RFC 5865 (voice admit) and
// RFC 8622 (lower effort), with the names RFC 4594 gives their use.
const (
	DSCPBestEffort DSCP = dscpSet | 0 // DF / CS0: default forwarding
	DSCPLE         DSCP = dscpSet | 1 // lower effort (RFC 8622)
	DSCPCS1        DSCP = dscpSet | 8
	DSCPAF11       DSCP = dscpSet | 10
	DSCPAF12       DSCP = dscpSet | 12
	DSCPAF13       DSCP = dscpSet | 14
	DSCPCS2        DSCP = dscpSet | 16
	DSCPAF21       DSCP = dscpSet | 18
	DSCPAF22       DSCP = dscpSet | 20
	DSCPAF23       DSCP = dscpSet | 22
	DSCPCS3        DSCP = dscpSet | 24
	DSCPAF31       DSCP = dscpSet | 26
	DSCPAF32       DSCP = dscpSet | 28
	DSCPAF33       DSCP = dscpSet | 30
	DSCPCS4        DSCP = dscpSet | 32
	DSCPAF41       DSCP = dscpSet | 34
	DSCPAF42       DSCP = dscpSet | 36
	DSCPAF43       DSCP = dscpSet | 38
	DSCPCS5        DSCP = dscpSet | 40
	DSCPVA         DSCP = dscpSet | 44 // voice admit (RFC 5865)
	DSCPEF         DSCP = dscpSet | 46 // expedited forwarding (RFC 3246)
	DSCPCS6        DSCP = dscpSet | 48 // network control
	DSCPCS7        DSCP = dscpSet | 56 // network control; the updates' default
)

// dscpNames are the names ParseDSCP accepts besides CSn, AFxy and numbers,
// and String's name for each code that has one.
var dscpNames = map[string]DSCP{
	"BE": DSCPBestEffort, "DF": DSCPBestEffort, "LE": DSCPLE, "VA": DSCPVA, "EF": DSCPEF,
}

// DSCPCode returns the DSCP with the six-bit code point code (0..63).
func DSCPCode(code uint8) (DSCP, error) {
	if code > 63 {
		return 0, fmt.Errorf("transport: DSCP %d outside 0..63", code)
	}
	return dscpSet | DSCP(code), nil
}

// ParseDSCP reads a code point by name or number, case-insensitively: BE
// or DF (0), LE, CS0..CS7, AFxy (x 1..4, y 1..3), VA, EF, or a decimal
// number 0..63.
func ParseDSCP(s string) (DSCP, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if d, ok := dscpNames[u]; ok {
		return d, nil
	}
	switch {
	case len(u) == 3 && strings.HasPrefix(u, "CS") && u[2] >= '0' && u[2] <= '7':
		return dscpSet | DSCP(u[2]-'0')<<3, nil // CSn = 8n (RFC 2474 §4.2.2)
	case len(u) == 4 && strings.HasPrefix(u, "AF") && u[2] >= '1' && u[2] <= '4' && u[3] >= '1' && u[3] <= '3':
		return dscpSet | DSCP(u[2]-'0')<<3 | DSCP(u[3]-'0')<<1, nil // AFxy = 8x + 2y (RFC 2597 §6)
	}
	if v, err := strconv.ParseUint(u, 10, 8); err == nil && v <= 63 {
		return dscpSet | DSCP(v), nil
	}
	return 0, fmt.Errorf("transport: DSCP %q: want BE, LE, CS0..CS7, AF11..AF43, VA, EF or a number 0..63", s)
}

// Code is the six-bit code point (0..63); the unset zero value has code 0.
func (d DSCP) Code() uint8 { return uint8(d &^ dscpSet) }

// valid reports whether d is unset or a set code point (not a plain number
// converted to DSCP, which lacks the set bit).
func (d DSCP) valid() bool { return d == 0 || d&^63 == dscpSet }

// IsSet reports whether d is a code point rather than the unset zero value.
func (d DSCP) IsSet() bool { return d&dscpSet != 0 }

// String is the code point's name (BE, CS7, AF41, EF, …), its number if it
// has none, or "unset" for the zero value.
func (d DSCP) String() string {
	switch c := d.Code(); {
	case d == 0:
		return "unset"
	case !d.valid():
		return fmt.Sprintf("invalid DSCP value %d", uint8(d)) // a raw number converted to DSCP
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
func (d DSCP) MarshalText() ([]byte, error) {
	switch {
	case d == 0:
		return []byte{}, nil
	case !d.valid():
		return nil, fmt.Errorf("transport: %v", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads d with ParseDSCP; "" is the unset zero value (the
// field's default), so MarshalText's output always reads back.
func (d *DSCP) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = 0
		return nil
	}
	return d.Set(string(b))
}

// Set reads d with ParseDSCP (flag.Value). Unlike UnmarshalText it refuses
// "": a flag given an empty value is more likely a mistake than a request
// for the default.
func (d *DSCP) Set(s string) error {
	v, err := ParseDSCP(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
