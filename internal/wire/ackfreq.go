package wire

import "encoding/binary"

// AckFrequency is the data sender's request for how often the receiver
// acknowledges (type AckFrequency), the ACK_FREQUENCY frame of the IETF
// draft "QUIC Acknowledgment Frequency" (draft-ietf-quic-ack-frequency,
// §4), in this format's fixed-width fields:
//
//	sequence number (64) | ack-eliciting threshold (32)
//	| requested max ACK delay µs (32) | reordering threshold (32)
//
// Threshold is how many ack-eliciting packets the receiver may take
// without sending an ACK at once (0: acknowledge every one; 1 is RFC 9000
// §13.2.2's every second packet); MaxAckDelayMicros bounds how long it may
// hold one (RFC 9000 §13.2.1's max_ack_delay, for this connection from
// now on); ReorderThreshold is how far out of order a packet may arrive
// before the receiver acknowledges at once (0: never for reordering; 1:
// any packet after a gap, RFC 9000 §13.2.1's rule). The receiver applies
// only a sequence number above every one it applied (draft §4: requests
// can be reordered on the way). It is sent only to a peer that consented
// with its min_ack_delay transport parameter (draft §3), and is
// ack-eliciting: a lost one is sent again, the newest only.
type AckFrequency struct {
	Seq               int64
	Threshold         uint32
	MaxAckDelayMicros uint32
	ReorderThreshold  uint32
}

// AckFrequencyLen is an AckFrequency body's length.
const AckFrequencyLen = 8 + 4 + 4 + 4

// MaxAckDelayLimit bounds a max ACK delay in µs: values of 2^14 ms or more
// are invalid (RFC 9000 §18.2, max_ack_delay), which the draft's requested
// max ACK delay inherits (a receiver could not honour a larger one without
// stalling the sender's PTO, RFC 9002 §6.2.1).
const MaxAckDelayLimit = 1 << 14 * 1000

// AppendAckFrequency appends f's body to b. The caller keeps 0 ≤ Seq ≤
// MaxPacketNumber and MaxAckDelayMicros < MaxAckDelayLimit; outside those
// the encoding is one ParseAckFrequency rejects.
func AppendAckFrequency(b []byte, f *AckFrequency) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(f.Seq))
	b = binary.BigEndian.AppendUint32(b, f.Threshold)
	b = binary.BigEndian.AppendUint32(b, f.MaxAckDelayMicros)
	return binary.BigEndian.AppendUint32(b, f.ReorderThreshold)
}

// ParseAckFrequency decodes an AckFrequency body into f: exactly
// AckFrequencyLen bytes (ErrShort, ErrLength), a sequence number within
// MaxPacketNumber and a delay below MaxAckDelayLimit (ErrValue: the draft,
// §4, makes an invalid value a PROTOCOL_VIOLATION; the session closes the
// connection on it).
func ParseAckFrequency(body []byte, f *AckFrequency) error {
	if len(body) < AckFrequencyLen {
		return ErrShort
	}
	if len(body) != AckFrequencyLen {
		return ErrLength
	}
	seq := binary.BigEndian.Uint64(body)
	delay := binary.BigEndian.Uint32(body[12:])
	if seq > MaxPacketNumber || delay >= MaxAckDelayLimit {
		return ErrValue
	}
	f.Seq = int64(seq)
	f.Threshold = binary.BigEndian.Uint32(body[8:])
	f.MaxAckDelayMicros = delay
	f.ReorderThreshold = binary.BigEndian.Uint32(body[16:])
	return nil
}
