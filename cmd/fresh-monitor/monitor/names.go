package monitor

import (
	"fmt"
	"strings"
	"time"
)

// Key is the KV key and subject token of a device name. NATS keys take
// only letters, digits and "-/_=." (and no leading or trailing dot), and a
// subject token takes no ".", "*", ">" or white space, so every other byte
// is written as "=XX" (its hex value) and so is "=" itself: two names
// never share a key, and the key is one token of fresh.update.<key>.
// "/" and "." are escaped too, so a name cannot look like a hierarchy. An
// empty name is "=" (no device has it: an escape always has two digits).
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
