package transport

import (
	"time"

	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// testConfig is the configuration every transport test builds its endpoints
// from: c with TLS credentials for loopback (a certificate for localhost,
// 127.0.0.1 and ::1 from an in-memory CA, which both ends trust).
func testConfig(c Config) Config {
	if c.TLS == nil && !c.Insecure {
		t, err := devcert.Loopback()
		if err != nil {
			panic(err)
		}
		c.TLS = t
	}
	return c
}

// sessionConfigOrPanic is the session config of c with defaults filled.
func (c Config) sessionConfigOrPanic() session.Config {
	d, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	return d.sessionConfig()
}

// pollUntil checks cond every millisecond until it holds or limit has
// passed, and reports whether it held: a condition wait for tests that
// carry on either way (require.Eventually when they must not).
func pollUntil(limit time.Duration, cond func() bool) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
