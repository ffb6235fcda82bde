package qlog

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Version and Format are the qlog_version and qlog_format of the header
// record. 0.3 is the newest version qvis reads; its JSON-SEQ form is what
// quic-go writes, so qvis draws both the same way.
const (
	Version = "0.3"
	Format  = "JSON-SEQ"
)

// recordSeparator starts every JSON-SEQ record (RFC 7464 §2.2), and a line
// feed ends it.
const recordSeparator = 0x1e

// bufferSize is the Writer's buffer: one write system call per 32 KiB of
// trace, about 150 packet events, so tracing does not add a system call
// per packet.
const bufferSize = 32 << 10

// Writer writes one connection's events as a qlog JSON-SEQ trace: a
// header record, then one record per event. It buffers and is safe for
// concurrent use. The first write error is kept: later events are dropped
// and Close returns it.
type Writer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	c    io.Closer
	rec  []byte // the record being built
	last Metrics
	err  error
	done bool
}

var _ Tracer = (*Writer)(nil)

// NewWriter starts a trace of the connection info describes on w, with
// title as the header's title, and writes its header record. Close
// flushes the buffer and closes w.
func NewWriter(w io.WriteCloser, info ConnInfo, title string) *Writer {
	qw := &Writer{w: bufio.NewWriterSize(w, bufferSize), c: w, rec: make([]byte, 0, 512)}
	qw.writeHeader(info, title)
	return qw
}

func (w *Writer) writeHeader(info ConnInfo, title string) {
	odcid := fmt.Sprintf("%016x", info.ConnID)
	b := append(w.rec[:0], recordSeparator)
	b = append(b, `{"qlog_version":"`+Version+`","qlog_format":"`+Format+`","title":`...)
	b = appendString(b, title)
	b = append(b, `,"trace":{"vantage_point":{"type":`...)
	b = appendString(b, string(info.Role))
	b = append(b, `},"common_fields":{"ODCID":"`...)
	b = append(b, odcid...)
	b = append(b, `","group_id":"`...)
	b = append(b, odcid...)
	b = append(b, `","protocol_type":["QUIC"],"time_format":"relative","reference_time":`...)
	b = appendMillis(b, time.Duration(info.Start.UnixNano()))
	if info.Remote != nil {
		b = append(b, `,"peer_address":`...)
		b = appendString(b, info.Remote.String())
	}
	b = append(b, "}}}\n"...)
	w.rec = b
	w.flushRecord()
}

// begin starts an event record; w.mu is held.
func (w *Writer) begin(t time.Duration, name string) []byte {
	b := append(w.rec[:0], recordSeparator)
	b = append(b, `{"time":`...)
	b = appendMillis(b, t)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	return append(b, `","data":{`...)
}

// end closes the record in b and buffers it; w.mu is held.
func (w *Writer) end(b []byte) {
	w.rec = append(b, "}}\n"...)
	w.flushRecord()
}

func (w *Writer) flushRecord() {
	if w.err != nil || w.done {
		return
	}
	_, w.err = w.w.Write(w.rec)
}

// PacketSent writes transport:packet_sent.
func (w *Writer) PacketSent(t time.Duration, p *Packet) { w.packet(t, "transport:packet_sent", p) }

// PacketReceived writes transport:packet_received.
func (w *Writer) PacketReceived(t time.Duration, p *Packet) {
	w.packet(t, "transport:packet_received", p)
}

func (w *Writer) packet(t time.Duration, name string, p *Packet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, name)
	b = append(b, `"header":{"packet_type":`...)
	b = appendString(b, p.Type)
	b = append(b, `,"packet_number":`...)
	b = strconv.AppendInt(b, p.Number, 10)
	b = append(b, `},"raw":{"length":`...)
	b = strconv.AppendInt(b, int64(p.Length), 10)
	b = append(b, `},"frames":[{"frame_type":`...)
	f := &p.Frame
	b = appendString(b, f.Type)
	switch f.Type {
	case "stream", "crypto":
		if f.Type == "stream" {
			b = append(b, `,"stream_id":0`...) // fresh has one stream each way
		}
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, f.Offset, 10)
		b = append(b, `,"length":`...)
		b = strconv.AppendInt(b, int64(f.Length), 10)
		if f.Fin {
			b = append(b, `,"fin":true`...)
		}
	case "update":
		b = append(b, `,"length":`...)
		b = strconv.AppendInt(b, int64(f.Length), 10)
	case "ack":
		b = append(b, `,"ack_delay":`...)
		b = appendMillis(b, f.AckDelay)
		b = append(b, `,"acked_ranges":[`...)
		// qlog lists ranges in ascending order; fresh's ACK has the
		// largest first.
		for i := len(f.AckRanges) - 1; i >= 0; i-- {
			r := f.AckRanges[i]
			b = append(b, '[')
			b = strconv.AppendInt(b, r.Smallest, 10)
			if r.Largest != r.Smallest {
				b = append(b, ',')
				b = strconv.AppendInt(b, r.Largest, 10)
			}
			b = append(b, ']')
			if i > 0 {
				b = append(b, ',')
			}
		}
		b = append(b, ']')
		if f.OWDSamples > 0 {
			b = append(b, `,"owd_samples":`...)
			b = strconv.AppendInt(b, int64(f.OWDSamples), 10)
		}
	case "connection_close":
		b = append(b, `,"error_space":"transport","error_code":`...)
		b = strconv.AppendUint(b, uint64(f.ErrorCode), 10)
		if f.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, f.Reason)
		}
	}
	b = append(b, "}]"...)
	w.end(b)
}

// PacketLost writes recovery:packet_lost.
func (w *Writer) PacketLost(t time.Duration, packetType string, pn int64, trigger string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "recovery:packet_lost")
	b = append(b, `"header":{"packet_type":`...)
	b = appendString(b, packetType)
	b = append(b, `,"packet_number":`...)
	b = strconv.AppendInt(b, pn, 10)
	b = append(b, `},"trigger":`...)
	b = appendString(b, trigger)
	w.end(b)
}

// MetricsUpdated writes recovery:metrics_updated with the fields that
// changed since the last one, as the draft has it (and qvis expects):
// the first carries every known field.
func (w *Writer) MetricsUpdated(t time.Duration, m Metrics) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "recovery:metrics_updated")
	n := len(b)
	field := func(name string) {
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	if m.CongestionWindow != w.last.CongestionWindow {
		field("congestion_window")
		b = strconv.AppendInt(b, m.CongestionWindow, 10)
	}
	if m.BytesInFlight != w.last.BytesInFlight || w.last == (Metrics{}) {
		field("bytes_in_flight")
		b = strconv.AppendInt(b, m.BytesInFlight, 10)
	}
	for _, d := range [...]struct {
		name     string
		cur, old time.Duration
	}{
		{"smoothed_rtt", m.SmoothedRTT, w.last.SmoothedRTT},
		{"min_rtt", m.MinRTT, w.last.MinRTT},
		{"latest_rtt", m.LatestRTT, w.last.LatestRTT},
		{"rtt_variance", m.RTTVariance, w.last.RTTVariance},
	} {
		if d.cur != d.old {
			field(d.name)
			b = appendMillis(b, d.cur)
		}
	}
	if m.PacingRate != w.last.PacingRate {
		field("pacing_rate")
		b = strconv.AppendUint(b, m.PacingRate, 10)
	}
	w.last = m
	if len(b) == n {
		return // nothing changed: no record
	}
	w.end(b)
}

// CongestionStateUpdated writes recovery:congestion_state_updated.
func (w *Writer) CongestionStateUpdated(t time.Duration, old, new string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "recovery:congestion_state_updated")
	if old != "" {
		b = append(b, `"old":`...)
		b = appendString(b, old)
		b = append(b, ',')
	}
	b = append(b, `"new":`...)
	b = appendString(b, new)
	w.end(b)
}

// OWDSample writes fresh:owd_sample, delays in µs.
func (w *Writer) OWDSample(t time.Duration, s OWDSample) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "fresh:owd_sample")
	b = append(b, `"packet_number":`...)
	b = strconv.AppendInt(b, s.PacketNumber, 10)
	b = append(b, `,"owd_us":`...)
	b = strconv.AppendInt(b, s.OWD.Microseconds(), 10)
	b = append(b, `,"owd_min_us":`...)
	b = strconv.AppendInt(b, s.MinOWD.Microseconds(), 10)
	b = append(b, `,"synced":`...)
	b = strconv.AppendBool(b, s.Synced)
	w.end(b)
}

// ClockOffset writes fresh:clock_offset, the offset in µs.
func (w *Writer) ClockOffset(t time.Duration, offset time.Duration, synced, trusted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "fresh:clock_offset")
	b = append(b, `"offset_us":`...)
	b = strconv.AppendInt(b, offset.Microseconds(), 10)
	b = append(b, `,"synced":`...)
	b = strconv.AppendBool(b, synced)
	b = append(b, `,"source":`...)
	if trusted {
		b = append(b, `"trusted_peer_clock"`...)
	} else {
		b = append(b, `"inband"`...)
	}
	w.end(b)
}

// UpdateAge writes fresh:update_age, the age in µs.
func (w *Writer) UpdateAge(t time.Duration, pn int64, age time.Duration, early bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(t, "fresh:update_age")
	b = append(b, `"packet_number":`...)
	b = strconv.AppendInt(b, pn, 10)
	b = append(b, `,"age_us":`...)
	b = strconv.AppendInt(b, age.Microseconds(), 10)
	if early {
		b = append(b, `,"early":true`...)
	}
	w.end(b)
}

// Close flushes the trace and closes the underlying writer. Events after
// it are dropped; a second Close returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	err := w.err
	if err == nil {
		err = w.w.Flush()
	}
	if cerr := w.c.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendMillis appends d in milliseconds, qlog's time unit, to µs
// resolution: the session's clock is finer, qvis draws no finer, and a
// float64 holds every µs of a year of relative time exactly.
func appendMillis(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, math.Round(float64(d)/1e3)/1e3, 'f', -1, 64)
}

// appendString appends s as a JSON string (RFC 8259 §7): quotes,
// backslashes and control characters escaped, invalid UTF-8 replaced.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
