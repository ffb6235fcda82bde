package transport

// testConfig is the configuration every transport test builds its endpoints
// from: it adds the test credentials to c once the handshake authenticates
// (until then it returns c as it is).
func testConfig(c Config) Config { return c }
