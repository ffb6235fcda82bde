package ntpclock

import (
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/fresh-udp/fresh"
	"github.com/fresh-udp/fresh/clock"
)

// ErrNotSynchronized is returned where a caller needs synchronized wall time
// and the NTP clock has no valid sync younger than Config.MaxAge. The
// caller acts on it by not trusting one-way delays (the owd controller then runs on RTT/2).
var ErrNotSynchronized = errors.New("ntpclock: not synchronized")

// ErrInvalidResponse is wrapped (together with the ntp package's own
// sentinel, e.g. ntp.ErrKissOfDeath) when a server answered but
// Response.Validate rejected the answer: unsynchronized server (leap
// indicator 3 / stratum 0), kiss-of-death, stale reference, too large root
// distance. Retrying later or choosing another server is the remedy; a
// network error does not wrap it.
var ErrInvalidResponse = errors.New("ntpclock: invalid NTP response")

// ErrOffsetTooLarge is wrapped, with ErrInvalidResponse, when a valid
// answer's offset exceeds Config.PanicThreshold: a server that lies (or a
// wildly wrong local clock, which needs a human or PanicThreshold < 0).
var ErrOffsetTooLarge = errors.New("ntpclock: offset beyond the panic threshold")

// ErrInvalidConfig is wrapped by every error a constructor of this package
// returns for a Config field out of range; the message names the field. It
// is the same value in every fresh package (clock, owd, acp, transport,
// …): errors.Is(err, transport.ErrInvalidConfig) holds for all of them.
var ErrInvalidConfig = fresh.ErrInvalidConfig

// Config configures an NTP-corrected clock. The zero value is valid: each
// zero field takes the default written beside it. Negative durations are
// rejected with ErrInvalidConfig, except StepThreshold and PanicThreshold
// (see there).
type Config struct {
	// Server is the NTP server, "host" or "host:port". Default
	// "pool.ntp.org".
	Server string
	// Port is used when Server names no port. Default 123 (RFC 5905 §7.2).
	Port int
	// Timeout bounds one query. Default 5 s (github.com/beevik/ntp's).
	Timeout time.Duration
	// Interval is the time between successful syncs. Default 64 s: 2^6 s,
	// the default minimum poll of ntpd and chrony (minpoll 6).
	Interval time.Duration
	// RetryInterval is the time until the next attempt after a failed
	// query. Default 16 s: 2^4 s, RFC 5905's MINPOLL.
	RetryInterval time.Duration
	// MaxAge is how long after the last valid sync the clock still counts
	// as synchronized. Default 4·Interval (four missed polls).
	MaxAge time.Duration
	// StepThreshold: a measured error larger than this is corrected at
	// once (stepped) instead of slewed. Default 128 ms, ntpd's step
	// threshold (RFC 5905 Appendix A, STEPT). The first valid sync is
	// always stepped. A negative value disables stepping after the first
	// sync (always slew), like ntpd's "tinker step 0".
	StepThreshold time.Duration
	// MaxSlewPPM is the slew rate, parts per million: the applied
	// correction moves toward the measured offset by at most this many µs
	// per second of monotonic time. Default 500, ntpd's and the Linux
	// kernel's adjtime limit (chrony allows up to 83 333 ppm).
	MaxSlewPPM float64
	// PanicThreshold rejects an answer whose offset exceeds it, first
	// sync included: the answer fails with ErrOffsetTooLarge (wrapped in
	// ErrInvalidResponse), the clock is left alone and not synchronized.
	// A well-formed answer hours off is a server that lies or is broken,
	// and stepping every stamp by hours would be worse than no NTP (the
	// in-band estimator does not need it). Default 1000 s, ntpd's panic
	// threshold (RFC 5905 Appendix A.1.1, PANICT); negative disables, for
	// a host that boots without a real-time clock and needs the first
	// sync to step it by years (ntpd's -g).
	PanicThreshold time.Duration
	// Logger receives sync failures and steps from Run. Nil is silent.
	Logger *slog.Logger
}

// Defaults of Config (see the fields).
const (
	DefaultServer         = "pool.ntp.org"
	DefaultPort           = 123
	DefaultTimeout        = 5 * time.Second
	DefaultInterval       = 64 * time.Second
	DefaultRetryInterval  = 16 * time.Second
	DefaultStepThreshold  = 128 * time.Millisecond
	DefaultMaxSlewPPM     = 500.0
	DefaultPanicThreshold = 1000 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return c, fresh.InvalidField("ntpclock.Config.Port", "%d not in 0..65535", c.Port)
	case c.Timeout < 0, c.Interval < 0, c.RetryInterval < 0, c.MaxAge < 0:
		return c, fresh.InvalidField("ntpclock.Config", "durations must not be negative (Timeout %v, Interval %v, RetryInterval %v, MaxAge %v)",
			c.Timeout, c.Interval, c.RetryInterval, c.MaxAge)
	case c.MaxSlewPPM < 0 || math.IsNaN(c.MaxSlewPPM) || c.MaxSlewPPM >= 1e6:
		// A slew of 1e6 ppm or more would let a slewed clock stand still
		// or run backwards.
		return c, fresh.InvalidField("ntpclock.Config.MaxSlewPPM", "%v not in [0, 1e6)", c.MaxSlewPPM)
	}
	if c.Server == "" {
		c.Server = DefaultServer
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.MaxAge == 0 {
		c.MaxAge = 4 * c.Interval
	}
	if c.StepThreshold == 0 {
		c.StepThreshold = DefaultStepThreshold
	}
	if c.MaxSlewPPM == 0 {
		c.MaxSlewPPM = DefaultMaxSlewPPM
	}
	if c.PanicThreshold == 0 {
		c.PanicThreshold = DefaultPanicThreshold
	}
	return c, nil
}

// Sample is one validated NTP measurement.
type Sample struct {
	// Offset is server time − local (base clock) time: add it to the base
	// clock's wall reading to get the server's time (RFC 5905 θ).
	Offset time.Duration
	// RTT is the measured round trip to the server (RFC 5905 δ).
	RTT time.Duration
	// RootDelay and RootDispersion are the server's own distance to its
	// reference, as it reports them.
	RootDelay, RootDispersion time.Duration
	// Stratum is the server's stratum (1 = reference clock attached).
	Stratum uint8
	// Server is the address queried, host:port.
	Server string
}

// Adjustment says how a sample was applied.
type Adjustment int

const (
	// Stepped: the correction jumped to the measured offset (first sync,
	// or an error above StepThreshold). Wall time may jump, even backwards.
	Stepped Adjustment = iota + 1
	// Slewed: the correction moves toward the measured offset at
	// MaxSlewPPM. Wall time stays continuous and monotonic.
	Slewed
)

func (a Adjustment) String() string {
	switch a {
	case Stepped:
		return "step"
	case Slewed:
		return "slew"
	}
	return "Adjustment(" + strconv.Itoa(int(a)) + ")"
}

// State is the sans-I/O core of the NTP clock: the correction to add to a
// base clock's wall time, driven only by explicit calls carrying the base
// clock's monotonic time. It never reads a clock or touches the network, so
// tests and the simulator drive it directly. Not safe for concurrent use.
//
// The correction is piecewise linear in monotonic time: after a slewed
// sample it moves from its value at that moment toward the sample's offset
// at MaxSlewPPM, then holds. Between syncs it holds the last estimate (no
// frequency discipline: see the package doc).
type State struct {
	cfg Config

	from, target time.Duration // correction at `since`, and where it slews to
	since        clock.Mono

	next     clock.Mono // next sync due
	lastSync clock.Mono
	last     Sample
	err      error

	syncs, steps uint64
}

// NewState returns a state for cfg (zero fields take defaults), created at
// base-clock monotonic time now. A first sync is due at once.
func NewState(cfg Config, now clock.Mono) (*State, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &State{cfg: cfg, next: now, since: now}, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *State) Config() Config { return s.cfg }

// Correction returns the offset to add to the base clock's wall time at
// monotonic time now.
func (s *State) Correction(now clock.Mono) time.Duration {
	d := s.target - s.from
	if d == 0 {
		return s.target
	}
	el := max(now.Sub(s.since), 0)
	move := time.Duration(float64(el) * s.cfg.MaxSlewPPM / 1e6)
	if d > 0 {
		return s.from + min(d, move)
	}
	return s.from - min(-d, move)
}

// Observe applies a valid sample taken at monotonic time now and schedules
// the next sync one Interval later. The first sample, and one whose offset
// differs from the current correction by more than StepThreshold, is
// stepped; any other is slewed.
func (s *State) Observe(now clock.Mono, smp Sample) Adjustment {
	cur := s.Correction(now)
	diff := smp.Offset - cur
	adj := Slewed
	if s.syncs == 0 || (s.cfg.StepThreshold >= 0 && (diff > s.cfg.StepThreshold || diff < -s.cfg.StepThreshold)) {
		adj = Stepped
		cur = smp.Offset
		s.steps++
	}
	s.from, s.target, s.since = cur, smp.Offset, now
	s.syncs++
	s.lastSync = now
	s.next = now.Add(s.cfg.Interval)
	s.last = smp
	s.err = nil
	return adj
}

// ObserveError records a failed query at monotonic time now and schedules a
// retry one RetryInterval later. The correction is kept (holdover): it is
// still the best estimate, and Synchronized decays with MaxAge.
func (s *State) ObserveError(now clock.Mono, err error) {
	s.err = err
	s.next = now.Add(s.cfg.RetryInterval)
}

// NextSync returns the monotonic time the next query is due.
func (s *State) NextSync() clock.Mono { return s.next }

// Due reports whether a query is due at now.
func (s *State) Due(now clock.Mono) bool { return !now.Before(s.next) }

// Synchronized reports whether there was a valid sync no older than MaxAge.
func (s *State) Synchronized(now clock.Mono) bool {
	return s.syncs > 0 && now.Sub(s.lastSync) <= s.cfg.MaxAge
}

// Status is a snapshot of an NTP clock.
type Status struct {
	// Offset is the last measured offset, server − base clock.
	Offset time.Duration
	// Correction is the offset applied now; it differs from Offset while
	// Slewing.
	Correction time.Duration
	// Slewing reports whether Correction is still moving toward Offset.
	Slewing bool
	// RTT is the last measured round trip to the server; RootDelay and
	// RootDispersion are the server's own, as it reported them.
	RTT, RootDelay, RootDispersion time.Duration
	// LastSync is the monotonic time of the last valid sync (meaningful
	// when Syncs > 0); NextSync when the next query is due.
	LastSync, NextSync clock.Mono
	// Synchronized: a valid sync no older than MaxAge.
	Synchronized bool
	// Server and Stratum describe the last valid sample's server.
	Server  string
	Stratum uint8
	// Syncs counts valid samples applied, Steps those that were stepped.
	Syncs, Steps uint64
	// Err is the last query's error, nil after a success.
	Err error
}

// Status returns a snapshot at monotonic time now.
func (s *State) Status(now clock.Mono) Status {
	c := s.Correction(now)
	return Status{
		Offset:         s.target,
		Correction:     c,
		Slewing:        c != s.target,
		RTT:            s.last.RTT,
		RootDelay:      s.last.RootDelay,
		RootDispersion: s.last.RootDispersion,
		LastSync:       s.lastSync,
		NextSync:       s.next,
		Synchronized:   s.Synchronized(now),
		Server:         s.last.Server,
		Stratum:        s.last.Stratum,
		Syncs:          s.syncs,
		Steps:          s.steps,
		Err:            s.err,
	}
}
