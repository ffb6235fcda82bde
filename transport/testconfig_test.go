package transport

import (
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
