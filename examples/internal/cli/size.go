package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a byte count given on the command line. *Size is a flag.Value
// (use flag.Var), so every example reads sizes the same way: see ParseSize.
type Size int64

// sizeUnits are the suffixes ParseSize knows, lower-case. A bare letter is
// binary, as iperf3's -l 128K; "B" after a prefix makes it decimal (SI);
// "iB" makes it binary explicitly.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize reads a byte count: a number (100000, 1e9, 1.5) and an optional
// unit, case-insensitive: K, M, G, T or KiB, MiB, GiB, TiB are binary
// (64K = 65536); KB, MB, GB, TB are decimal (1GB = 10⁹); B is bytes. The
// result must be a whole, non-negative number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] >= 'a' && t[i-1] <= 'z' || t[i-1] >= 'A' && t[i-1] <= 'Z') {
		i--
	}
	num, unit := t[:i], strings.ToLower(t[i:])
	// "1e9" ends in a digit, so its e is part of the number.
	mult, ok := sizeUnits[unit]
	v, err := strconv.ParseFloat(num, 64)
	switch {
	case !ok || err != nil || num == "":
		return 0, fmt.Errorf("size %q: want a number of bytes such as 1e9, 1GB, 10MiB or 64K", s)
	case v < 0 || math.IsNaN(v):
		return 0, fmt.Errorf("size %q is negative", s)
	}
	b := v * mult
	if b >= math.MaxInt64 || math.IsInf(b, 0) {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// String prints the size in bytes.
func (z *Size) String() string {
	if z == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*z), 10)
}

// Set reads the size with ParseSize.
func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*z = Size(v)
	return nil
}
