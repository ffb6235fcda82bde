package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/internal/units"
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

// ParseRate parses a rate as every fresh command line does (package
// internal/units: "1.5Mbps", "200kbps", "10 Mbit/s", "10M"), except that
// a scenario file must give a unit: a bare "100" there is more likely a
// forgotten unit than 100 bit/s.
func ParseRate(s string) (cc.Bandwidth, error) {
	t := strings.TrimSpace(s)
	if t == "" || t[len(t)-1] >= '0' && t[len(t)-1] <= '9' || t[len(t)-1] == '.' {
		return 0, fmt.Errorf("rate %q: give a unit, such as 1.5Mbps, 200kbps or 10 Mbit/s", s)
	}
	return units.ParseRate(s)
}

// FormatRate writes b with the largest unit that keeps it readable
// (units.FormatRate): ParseRate reads it back.
func FormatRate(b cc.Bandwidth) string { return units.FormatRate(b) }
