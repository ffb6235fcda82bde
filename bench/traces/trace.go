// Package traces reads link-capacity traces in the format of the Mahimahi
// emulator's mm-link (R. Netravali et al., "Mahimahi: Accurate
// Record-and-Replay for HTTP", USENIX ATC 2015), and holds, beside this
// code, eight cellular traces recorded with the Saturator tool of
// K. Winstein, A. Sivaraman and H. Balakrishnan, "Stochastic Forecasts
// Achieve High Throughput and Low Delay over Cellular Networks", USENIX
// NSDI 2013 (README.md in this directory: their attribution, lengths and
// rates).
//
// # The format
//
// One decimal integer per line: a time in milliseconds since the start of
// the trace at which one delivery opportunity of OpportunityBytes occurs.
// Several opportunities in one millisecond repeat the number. Times never
// decrease. The trace lasts until its last line, and repeats with that
// period: the opportunity at t ms of the first pass recurs at t + k·period.
// A file holding the single line "1" is therefore a fixed link of one
// 1500-byte opportunity per millisecond, 12 Mbit/s.
//
// mm-link refuses an empty line, a decreasing time, a file without a line
// and a last line of 0 (a trace that lasts no time cannot repeat); so does
// Parse, naming the line. We also refuse anything but digits on a line
// (mm-link's atoi would read "12abc" as 12; spaces around the number and a
// Windows line end are allowed), lines longer than 256 bytes and times
// beyond MaxMs.
//
// # Storage
//
// The T-Mobile files are a megabyte of text and up to ~200 000 lines. A
// Trace keeps one entry per distinct millisecond ("run"), varint-encoded
// as (milliseconds since the previous run, opportunities in this run): two
// bytes for most runs, so the largest trace here takes about 200 kB in
// memory instead of 800 kB as one uint32 per line. A link only ever walks a
// trace forward (Cursor), so it never needs random access.
package traces

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fresh-udp/fresh/cc"
)

// OpportunityBytes is what one delivery opportunity carries: one
// 1500-byte packet, an Ethernet MTU, as the traces were recorded
// (Saturator counted MTU-sized packets). mm-link's link queue uses 1504
// because it also counts the 4-byte header a TUN device puts before each
// packet; our links count IP bytes only.
const OpportunityBytes = 1500

// MaxMs bounds a line's time (about 49.7 days, the largest uint32): far
// beyond any recorded trace, and it keeps a typo such as a nanosecond
// timestamp from being read as a 30-year trace.
const MaxMs = 1<<32 - 1

// maxLine bounds a line in bytes: a valid one has at most 10 digits, and
// a binary file fed in by mistake fails at its first long "line" instead
// of being buffered whole.
const maxLine = 256

// ErrInvalid wraps every error about a trace's contents.
var ErrInvalid = errors.New("invalid trace")

// Trace is a parsed trace file. It is immutable, so one Trace can drive
// any number of links at once (Load shares it within the process).
type Trace struct {
	name          string // the file it was read from, for messages
	runs          []byte // per run: uvarint(ms since the previous run), uvarint(opportunities)
	nRuns         int
	opportunities int64  // lines: opportunities per period
	periodMs      uint64 // the last line's time
}

// Name is the path the trace was read from (or the name given to Parse).
func (t *Trace) Name() string { return t.name }

// Period is the trace's length: the last line's time. The trace repeats
// with this period.
func (t *Trace) Period() time.Duration { return time.Duration(t.periodMs) * time.Millisecond }

// Opportunities is the number of delivery opportunities in one period
// (the number of lines).
func (t *Trace) Opportunities() int64 { return t.opportunities }

// MeanRate is the capacity averaged over one period:
// Opportunities · OpportunityBytes · 8 bits / Period.
func (t *Trace) MeanRate() cc.Bandwidth {
	return cc.Bandwidth(float64(t.opportunities) * OpportunityBytes * 8 / t.Period().Seconds())
}

// Parse reads a trace from r; name labels the errors (usually the file's
// path). Errors wrap ErrInvalid and give the 1-based line number.
func Parse(r io.Reader, name string) (*Trace, error) {
	t := &Trace{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64), maxLine)
	var prev uint64
	var runMs uint64
	var runN uint64
	flush := func() {
		if runN == 0 {
			return
		}
		t.runs = binary.AppendUvarint(t.runs, runMs-prev)
		t.runs = binary.AppendUvarint(t.runs, runN)
		t.nRuns++
		prev = runMs
	}
	line := 0
	for sc.Scan() {
		line++
		// Spaces around the number and a Windows line end are harmless.
		b := bytes.TrimSpace(sc.Bytes())
		ms, err := parseMs(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: line %d: %v", ErrInvalid, name, line, err)
		}
		switch {
		case runN > 0 && ms < runMs:
			return nil, fmt.Errorf("%w: %s: line %d: %d ms is before the previous line's %d ms (times must not decrease)", ErrInvalid, name, line, ms, runMs)
		case runN > 0 && ms == runMs:
			runN++
		default:
			flush()
			runMs, runN = ms, 1
		}
		t.opportunities++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: %s: line %d: too long for a time in milliseconds", ErrInvalid, name, line+1)
		}
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	if t.opportunities == 0 {
		return nil, fmt.Errorf("%w: %s: no delivery opportunities (the file is empty): want one time in ms per line", ErrInvalid, name)
	}
	if runMs == 0 {
		return nil, fmt.Errorf("%w: %s: the trace lasts 0 ms: its last line is the period it repeats with and must be > 0", ErrInvalid, name)
	}
	flush()
	t.periodMs = runMs
	t.runs = t.runs[:len(t.runs):len(t.runs)]
	return t, nil
}

// parseMs reads one line: decimal digits only, at most MaxMs.
func parseMs(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty line: want a time in ms")
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a time in whole milliseconds", clip(b))
		}
		v = v*10 + uint64(c-'0')
		if v > MaxMs {
			return 0, fmt.Errorf("%s ms is beyond the largest time accepted, %d ms", clip(b), uint64(MaxMs))
		}
	}
	return v, nil
}

// clip shortens a bad line for an error message.
func clip(b []byte) string {
	if len(b) > 24 {
		return string(b[:24]) + "…"
	}
	return string(b)
}

// Cursor walks a trace's delivery opportunities in time order, repeating
// the trace forever. The zero Cursor is unusable; get one from Start.
type Cursor struct {
	t      *Trace
	off    int    // byte offset of the next run in t.runs
	prevMs uint64 // time of the previous run within the current pass
	baseMs uint64 // start of the current pass: passes completed · period
}

// Start returns a cursor whose first run is the first one at or after
// offset into the trace (offset is taken modulo the period, since the
// trace repeats), and the position of offset in that run's time base: the
// cursor's times count from the start of the pass offset falls in, so a
// run's time minus offsetMs is how long after the start it comes.
func (t *Trace) Start(offset time.Duration) (c Cursor, offsetNs int64) {
	period := int64(t.Period())
	o := int64(offset) % period
	if o < 0 {
		o += period
	}
	c = Cursor{t: t}
	for {
		save := c
		ms, _ := c.Next()
		if int64(ms)*int64(time.Millisecond) >= o {
			return save, o
		}
	}
}

// Next returns the time of the next run, in ms since the start of the
// cursor's first pass (it keeps growing across repetitions), and how many
// opportunities occur then (≥ 1).
func (c *Cursor) Next() (ms uint64, n int64) {
	if c.off >= len(c.t.runs) {
		c.off, c.prevMs = 0, 0
		c.baseMs += c.t.periodMs
	}
	d, k := binary.Uvarint(c.t.runs[c.off:])
	c.off += k
	cnt, k := binary.Uvarint(c.t.runs[c.off:])
	c.off += k
	c.prevMs += d
	return c.baseMs + c.prevMs, int64(cnt)
}

// SkipPeriods moves the cursor k whole passes ahead without walking them
// (a link idle for many periods), returning the opportunities skipped.
func (c *Cursor) SkipPeriods(k uint64) int64 {
	c.baseMs += k * c.t.periodMs
	return int64(k) * c.t.opportunities
}

// Trace is the trace the cursor walks.
func (c *Cursor) Trace() *Trace { return c.t }
