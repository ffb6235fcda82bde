package scenario

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("100s", "50ms", "1m30s").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"50ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// Rate is a bit rate written in JSON as a string with a unit: "1.5Mbps",
// "200kbps", "10Gbps", "9600bps".
type Rate cc.Bandwidth

// Bandwidth returns r as cc.Bandwidth (bit/s).
func (r Rate) Bandwidth() cc.Bandwidth { return cc.Bandwidth(r) }

func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(FormatRate(cc.Bandwidth(r))) }

func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("rate must be a string like \"1.5Mbps\": %w", err)
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// ParseRate parses "1.5Mbps", "200kbps", "1Gbps", "9600bps" (case-insensitive
// unit, decimal prefixes as in networking: k = 1000).
func ParseRate(s string) (cc.Bandwidth, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "gbps"):
		mult, t = 1e9, strings.TrimSuffix(t, "gbps")
	case strings.HasSuffix(t, "mbps"):
		mult, t = 1e6, strings.TrimSuffix(t, "mbps")
	case strings.HasSuffix(t, "kbps"):
		mult, t = 1e3, strings.TrimSuffix(t, "kbps")
	case strings.HasSuffix(t, "bps"):
		t = strings.TrimSuffix(t, "bps")
	default:
		return 0, fmt.Errorf("rate %q: want a unit bps, kbps, Mbps or Gbps", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 || v*mult > 1e12 {
		return 0, fmt.Errorf("rate %q: not a number between 0 and 1Tbps", s)
	}
	return cc.Bandwidth(v * mult), nil
}

// FormatRate writes b with the largest unit that keeps it readable.
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
