package quichook

// ForgeData builds a shim data datagram as an off-path attacker can: the
// layout is public, the receiver's cookie for the spoofed address is not,
// so it carries a guess.
func ForgeData(seq uint64, payload []byte) []byte {
	b := make([]byte, dataHeaderLen+len(payload))
	(&dataHeader{cookie: 0x0123456789abcdef, seq: seq, sent: 1}).put(b)
	copy(b[dataHeaderLen:], payload)
	return b
}

// ForgeHello builds a first hello as an off-path attacker can.
func ForgeHello() []byte { return appendHello(nil, hello{typ: typeHello, cookie: 42}) }

// Hello builds a hello with cookie and, if echo is not nil, that echo:
// what a peer with the hook sends, for tests that play one by hand.
func Hello(cookie uint64, echo *uint64) []byte {
	h := hello{typ: typeHello, cookie: cookie}
	if echo != nil {
		h.hasEcho, h.echo = true, *echo
	}
	return appendHello(nil, h)
}

// HelloCookie returns the cookie a hello or its answer carries.
func HelloCookie(b []byte) uint64 {
	h, err := parseHello(b)
	if err != nil {
		return 0
	}
	return h.cookie
}

// DataWithCookie is ForgeData with the receiver's real cookie.
func DataWithCookie(cookie, seq uint64, payload []byte) []byte {
	b := ForgeData(seq, payload)
	(&dataHeader{cookie: cookie, seq: seq, sent: 1}).put(b)
	return b
}

// ParseShimData returns the cookie and sequence number of a shim data
// datagram (ok false for anything else): what a peer playing the hook by
// hand acknowledges.
func ParseShimData(b []byte) (cookie, seq uint64, ok bool) {
	h, _, err := parseData(b)
	return h.cookie, h.seq, err == nil
}

// Feedback builds a feedback datagram with the data sender's cookie that
// acknowledges seq alone with a one-way delay of owdMicros, measured
// against a trusted clock offset if synced: what a peer with the hook
// sends, or one that lies about the delays.
func Feedback(cookie, seq uint64, owdMicros int32, synced bool) []byte {
	f := feedback{cookie: cookie, synced: synced, nRanges: 1, nSamples: 1}
	f.ranges[0] = seqRange{seq, seq}
	f.samples[0] = owdSample{seq: seq, owd: owdMicros}
	return f.append(nil)
}
