// Package units reads and writes the byte counts and bit rates that fresh's
// command lines (the examples, bench/cmd) and bench's scenario files (which
// also insist on a unit) take, so that every program accepts the same
// spellings:
//
//	sizes  1200, 1e9             bytes
//	       1GB, 50MB, 500kB      decimal: k = 10³, M = 10⁶, G = 10⁹, T = 10¹²
//	       10MiB, 64KiB          binary: Ki = 2¹⁰, Mi = 2²⁰, Gi = 2³⁰, Ti = 2⁴⁰
//	       64K, 4M, 1G           a prefix alone is binary, as iperf3's -l 128K
//	rates  1e6, 64000            bits per second
//	       500k, 10M, 1.5M, 2G   decimal prefixes, as iperf3's -b 10M
//	       10Mbps, 10 Mbit/s     the same with bps, bit/s or bits/s (also
//	                             /sec) after the prefix
//
// Units are case-insensitive (10mbps is 10Mbps, 64k is 64K) and may be
// separated from the number by spaces. The number is decimal, with an
// optional fraction and exponent (1.5, 2.5e3); the result must be a whole
// number of bytes (1.5K is 1536, 1.5 is refused) or is rounded to the
// nearest bit per second. A rate is always in bits: 10MB, which reads as
// bytes, is refused with what it would be in bits.
//
// Sizes and rates spell their prefixes differently on purpose, as iperf3
// does: a buffer or block is counted in powers of two, a link in powers of
// ten.
package units

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fresh-udp/fresh/cc"
)

// sizeForms and rateForms end every error, so a refused input is shown
// beside what would have been accepted.
const (
	sizeForms = "want a byte count such as 1200 or 1e9, decimal 1GB, 50MB or 500kB, or binary 10MiB or 64K (K, M, G, T alone are binary)"
	rateForms = "want bits per second such as 1e6, 500k, 10M, 1.5M or 2G (k, M, G, T = 10³, 10⁶, 10⁹, 10¹²), optionally followed by bps or bit/s: 10Mbps, 10 Mbit/s"
)

// MaxRate is the largest rate ParseRate accepts, 1 Tbit/s: above any link
// fresh is measured on, and far below where float64 loses whole bits.
const MaxRate = 1_000_000 * cc.MbitPerSecond

// split cuts s into its number and its unit, both trimmed: "10 Mbit/s" is
// "10" and "Mbit/s". The number is the longest prefix of digits and dots,
// with an exponent (e, an optional sign, digits) when one follows, so
// "1e9" is all number and "1e" leaves "e" as the unit.
func split(s string) (num, unit string) {
	t := strings.TrimSpace(s)
	digit := func(i int) bool { return i < len(t) && t[i] >= '0' && t[i] <= '9' }
	i := 0
	for digit(i) || i < len(t) && t[i] == '.' {
		i++
	}
	if i > 0 && i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if digit(j) {
			for i = j; digit(i); i++ {
			}
		}
	}
	return t[:i], strings.TrimSpace(t[i:])
}

// number reads what split found: exactly as an integer when it is one (so
// 9007199254740993 is not rounded), else as a float64. ok is false for
// anything else ("", ".", "1.2.3").
func number(num string) (whole uint64, v float64, isInt, ok bool) {
	if n, err := strconv.ParseUint(num, 10, 64); err == nil {
		return n, float64(n), true, true
	}
	// split let through only digits, dots and an exponent, so hex,
	// underscores, Inf and NaN never get here. Out of range is +Inf.
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, 0, false, false
	}
	// ParseFloat rounds an underflow (1e-400) to 0 without an error; it is
	// still above 0, so it must be refused as a fraction of a byte or below
	// 1bps rather than read as a valid 0.
	mantissa, _, _ := strings.Cut(strings.ToLower(num), "e")
	if f == 0 && strings.ContainsAny(mantissa, "123456789") {
		f = math.SmallestNonzeroFloat64
	}
	return 0, f, false, true
}

// lowerASCII lower-cases a unit; ok is false if it holds anything but
// ASCII, so that strings.ToLower's Unicode folds (the Kelvin sign K to k,
// İ to i) cannot make a look-alike unit valid.
func lowerASCII(unit string) (string, bool) {
	for i := range len(unit) {
		if unit[i] >= 0x80 {
			return "", false
		}
	}
	return strings.ToLower(unit), true
}

// sizeUnit is the multiplier of a size unit, lower-case: a bare prefix is
// binary, B after a prefix makes it decimal (SI), iB binary explicitly.
func sizeUnit(unit string) (int64, bool) {
	u, ascii := lowerASCII(unit)
	switch {
	case !ascii:
		return 0, false
	case u == "" || u == "b":
		return 1, true
	}
	exp := strings.IndexByte("kmgt", u[0]) + 1 // 1 for k … 4 for t
	if exp == 0 {
		return 0, false
	}
	switch u[1:] {
	case "", "i", "ib":
		return 1 << (10 * exp), true
	case "b":
		return int64(math.Pow10(3 * exp)), true
	}
	return 0, false
}

// ParseSize reads a byte count (see the package doc): 1200, 1e9, 1GB,
// 50MB, 10MiB, 64K. It must be a whole, non-negative number of bytes that
// fits an int64. Errors name the input and list the accepted forms.
func ParseSize(s string) (cc.ByteCount, error) {
	num, unit := split(s)
	if strings.HasPrefix(num+unit, "-") {
		return 0, fmt.Errorf("size %q is negative: %s", s, sizeForms)
	}
	mult, okUnit := sizeUnit(unit)
	whole, v, isInt, okNum := number(num)
	if !okUnit || !okNum {
		return 0, fmt.Errorf("size %q: %s", s, sizeForms)
	}
	if isInt {
		if whole > math.MaxInt64/uint64(mult) {
			return 0, fmt.Errorf("size %q is too large: at most %d bytes", s, int64(math.MaxInt64))
		}
		return cc.ByteCount(int64(whole) * mult), nil
	}
	b := v * float64(mult)
	switch {
	case b >= math.MaxInt64:
		return 0, fmt.Errorf("size %q is too large: at most %d bytes", s, int64(math.MaxInt64))
	case b != math.Trunc(b):
		return 0, fmt.Errorf("size %q is not a whole number of bytes (%g): %s", s, b, sizeForms)
	}
	return cc.ByteCount(b), nil
}

// FormatSize writes n with the largest unit that divides it exactly,
// binary before decimal where both do (131072 is 128KiB, 10⁹ is 1GB, 1200
// stays 1200), so ParseSize reads back exactly n.
func FormatSize(n cc.ByteCount) string {
	if n != 0 {
		for exp := 4; exp >= 1; exp-- {
			bin, dec := cc.ByteCount(1)<<(10*exp), cc.ByteCount(math.Pow10(3*exp))
			p := "KMGT"[exp-1 : exp]
			switch {
			case n%bin == 0:
				return strconv.FormatInt(int64(n/bin), 10) + p + "iB"
			case n%dec == 0:
				return strconv.FormatInt(int64(n/dec), 10) + strings.Replace(p, "K", "k", 1) + "B"
			}
		}
	}
	return strconv.FormatInt(int64(n), 10)
}

// rateSuffixes may follow a rate's prefix (or stand alone): bits per second.
var rateSuffixes = []string{"bps", "bit/s", "bits/s", "bit/sec", "bits/sec"}

// byteSuffixes after a prefix read as bytes, which a rate never is.
var byteSuffixes = []string{"b", "b/s", "b/sec", "byte", "bytes", "byte/s", "bytes/s"}

// ratePrefixes are the decimal prefixes of a rate, as written in messages;
// a unit matches them in any case.
var ratePrefixes = []string{"", "k", "M", "G", "T"}

// rateUnit reads a rate's unit: its prefix's power of 10³ (0 for none) and
// whether the rest is bits per second (ok) or reads as bytes.
func rateUnit(unit string) (exp int, ok, bytes bool) {
	u, ascii := lowerASCII(unit)
	switch {
	case !ascii:
		return 0, false, false
	case u == "":
		return 0, true, false
	}
	rest := u
	if exp = strings.IndexByte("kmgt", u[0]) + 1; exp > 0 {
		rest = u[1:]
	}
	switch {
	case exp > 0 && rest == "", slices.Contains(rateSuffixes, rest):
		return exp, true, false
	case slices.Contains(byteSuffixes, rest):
		return exp, false, true
	}
	return exp, false, false
}

// ParseRate reads a bit rate (see the package doc): 10M, 10Mbps,
// 10 Mbit/s, 500k, 1.5M, 1e6 (bit/s), 2Gbps. Prefixes are decimal. The
// result is rounded to the nearest bit/s; it must not be above MaxRate,
// and a rate above 0 must not round to 0. Errors name the input and list
// the accepted forms.
func ParseRate(s string) (cc.Bandwidth, error) {
	num, unit := split(s)
	if strings.HasPrefix(num+unit, "-") {
		return 0, fmt.Errorf("rate %q is negative: %s", s, rateForms)
	}
	exp, okUnit, bytes := rateUnit(unit)
	_, v, _, okNum := number(num)
	bits := v * math.Pow10(3*exp)
	switch {
	case bytes && okNum && bits*8 <= float64(MaxRate):
		return 0, fmt.Errorf("rate %q reads as bytes per second, and a rate is in bits: %s %sB/s is %s; %s",
			s, num, ratePrefixes[exp], FormatRate(cc.Bandwidth(math.Round(bits*8))), rateForms)
	case !okUnit || !okNum:
		return 0, fmt.Errorf("rate %q: %s", s, rateForms)
	}
	r := math.Round(bits)
	switch {
	case r > float64(MaxRate):
		return 0, fmt.Errorf("rate %q is above %s, the most accepted", s, FormatRate(MaxRate))
	case r == 0 && v > 0:
		return 0, fmt.Errorf("rate %q is below 1bps: %s", s, rateForms)
	}
	return cc.Bandwidth(r), nil
}

// FormatRate writes b with the largest decimal unit that keeps it at 1 or
// more: 1.5Mbps, 200kbps, 10Gbps, 9600bps; ParseRate reads it back.
func FormatRate(b cc.Bandwidth) string {
	v := float64(b)
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + "Gbps"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "Mbps"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "kbps"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "bps"
}

// Size is a byte count as a flag.Value: fs.Var(&z, "l", "…") reads the
// flag with ParseSize, so a wrong value is refused by the flag package
// with the flag's name.
type Size cc.ByteCount

// Set reads v with ParseSize.
func (z *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*z = Size(n)
	return nil
}

// String writes the size with FormatSize.
func (z *Size) String() string {
	if z == nil {
		return "0"
	}
	return FormatSize(cc.ByteCount(*z))
}

// Rate is a bit rate as a flag.Value, read with ParseRate.
type Rate cc.Bandwidth

// Set reads v with ParseRate.
func (r *Rate) Set(v string) error {
	b, err := ParseRate(v)
	if err != nil {
		return err
	}
	*r = Rate(b)
	return nil
}

// String writes the rate with FormatRate.
func (r *Rate) String() string {
	if r == nil {
		return "0bps"
	}
	return FormatRate(cc.Bandwidth(*r))
}
