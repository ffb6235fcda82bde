package transport

// WithTestTLS is testConfig for the external test package (transport_test).
func WithTestTLS(c Config) Config { return testConfig(c) }
