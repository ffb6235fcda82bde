package transport

// WithTestTLS is testConfig for the external test package (transport_test).
func WithTestTLS(c Config) Config { return testConfig(c) }

// Crash closes the listener's socket and nothing else, as a server process
// that dies does: its connections send no CLOSE and vanish.
func (l *Listener) Crash() { _ = l.t.Conn.Close() }
