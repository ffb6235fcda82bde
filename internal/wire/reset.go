package wire

// StatelessReset is an endpoint's answer to a datagram for a connection it
// does not hold (type StatelessReset, RFC 9000 §10.3): it lost the
// connection's state (it restarted, say), so it cannot send an
// authenticated Close, and instead proves it is the server the connection
// was with by a token it gave the client inside the TLS handshake, where
// no one else could read it:
//
//	stateless reset token (128)
//
// The header carries the connection ID of the datagram that triggered it;
// its packet number and timestamp mean nothing (zero). A StatelessReset is
// never protected (the keys are what was lost), so its flags and epoch are
// zero. It is StatelessResetLen bytes, and is only sent in answer to a
// larger datagram, never to a StatelessReset, so two endpoints that both
// lost their state cannot reset each other forever, and a forged source
// address draws less than it sent (RFC 9000 §10.3.3).
type StatelessReset struct {
	Token [StatelessResetTokenLen]byte
}

// StatelessResetTokenLen is the token's length (RFC 9000 §10.3: 16 bytes).
const StatelessResetTokenLen = 16

// StatelessResetLen is a StatelessReset datagram's length: the header and
// the token. A datagram that draws one must be longer (MinResetTrigger).
const StatelessResetLen = HeaderLen + StatelessResetTokenLen

// MinResetTrigger is the shortest datagram an endpoint answers with a
// StatelessReset: one byte longer than the reset, which RFC 9000 §10.3
// requires to be smaller than the packet that triggered it.
const MinResetTrigger = StatelessResetLen + 1

// AppendStatelessReset appends r's body to b.
func AppendStatelessReset(b []byte, r *StatelessReset) []byte {
	return append(b, r.Token[:]...)
}

// ParseStatelessReset decodes a StatelessReset body into r: exactly the
// token (shorter: ErrShort; longer: ErrLength).
func ParseStatelessReset(body []byte, r *StatelessReset) error {
	if len(body) < StatelessResetTokenLen {
		return ErrShort
	}
	if len(body) != StatelessResetTokenLen {
		return ErrLength
	}
	copy(r.Token[:], body)
	return nil
}
