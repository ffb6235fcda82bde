package ntpclock

import (
	"context"
	"fmt"
	"github.com/fresh-udp/fresh/clock"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/beevik/ntp"
)

// address returns Server as host:port, adding Port when Server has none.
func (c Config) address() string {
	if _, _, err := net.SplitHostPort(c.Server); err == nil {
		return c.Server
	}
	return net.JoinHostPort(strings.Trim(c.Server, "[]"), strconv.Itoa(c.Port))
}

// Query performs one NTP query to cfg's server and validates the answer
// with ntp's Response.Validate. It is the only function of this package
// that does network I/O. wall supplies the local timestamps T1 and T4 (pass
// the base clock's Wall, so the offset is measured against that clock); nil
// means the system clock (read in user space: the context-aware dialer
// hides the *net.UDPConn ntp needs for kernel timestamps). ctx bounds the
// query together with cfg.Timeout, and cancelling it interrupts the wait
// for the answer.
func Query(ctx context.Context, cfg Config, wall func() time.Time) (Sample, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Sample{}, err
	}
	addr := cfg.address()
	timeout := cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := ctx.Err(); err != nil {
		return Sample{}, fmt.Errorf("ntpclock: query %s: %w", addr, err)
	}
	if timeout <= 0 {
		return Sample{}, fmt.Errorf("ntpclock: query %s: %w", addr, context.DeadlineExceeded)
	}
	resp, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{
		Timeout:       timeout,
		GetSystemTime: wall,
		Dialer: func(_, remote string) (net.Conn, error) {
			return dialContext(ctx, remote)
		},
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return Sample{}, fmt.Errorf("ntpclock: query %s: %w", addr, err)
	}
	smp, err := sampleFromResponse(addr, resp)
	if err == nil && cfg.PanicThreshold > 0 && (smp.Offset > cfg.PanicThreshold || smp.Offset < -cfg.PanicThreshold) {
		return Sample{}, fmt.Errorf("ntpclock: query %s (stratum %d): %w: %w: offset %v, threshold %v",
			addr, smp.Stratum, ErrInvalidResponse, ErrOffsetTooLarge, smp.Offset, cfg.PanicThreshold)
	}
	return smp, err
}

// sampleFromResponse validates resp (RFC 5905 sanity checks as implemented
// by ntp.Response.Validate) and converts it.
func sampleFromResponse(addr string, resp *ntp.Response) (Sample, error) {
	if err := resp.Validate(); err != nil {
		return Sample{}, fmt.Errorf("ntpclock: query %s (stratum %d, leap %d): %w: %w",
			addr, resp.Stratum, resp.Leap, ErrInvalidResponse, err)
	}
	return Sample{
		Offset:         resp.ClockOffset,
		RTT:            resp.RTT,
		RootDelay:      resp.RootDelay,
		RootDispersion: resp.RootDispersion,
		Stratum:        resp.Stratum,
		Server:         addr,
	}, nil
}

// dialContext dials UDP under ctx and returns a conn whose pending reads are
// interrupted when ctx is cancelled.
func dialContext(ctx context.Context, remote string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", remote)
	if err != nil {
		return nil, err
	}
	c := &ctxConn{Conn: conn}
	c.stop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cancelled = true
		_ = c.Conn.SetDeadline(pastDeadline)
	})
	return c, nil
}

var pastDeadline = time.Unix(1, 0)

// ctxConn keeps a cancelled context's past deadline from being overwritten
// by the ntp package's own SetDeadline.
type ctxConn struct {
	net.Conn
	stop      func() bool
	mu        sync.Mutex
	cancelled bool
}

func (c *ctxConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled {
		t = pastDeadline
	}
	return c.Conn.SetDeadline(t)
}

func (c *ctxConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled {
		t = pastDeadline
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// Clock is a clock.Clock whose wall time is a base clock's wall time plus an
// NTP-measured correction (slewed, or stepped on first sync and above
// StepThreshold); its monotonic time is the base clock's, untouched. It is
// safe for concurrent use. It starts no goroutine: the owner calls Sync
// itself, or runs Run in a goroutine it owns and stops it by cancelling the
// context.
type Clock struct {
	base clock.Clock
	mu   sync.Mutex
	st   *State
}

// New returns an unsynchronized NTP clock over base (zero cfg fields
// take defaults). Until the first valid sync Wall equals base.Wall.
func New(base clock.Clock, cfg Config) (*Clock, error) {
	st, err := NewState(cfg, base.Now())
	if err != nil {
		return nil, err
	}
	return &Clock{base: base, st: st}, nil
}

var _ clock.Clock = (*Clock)(nil)

// Now returns the base clock's monotonic time.
func (c *Clock) Now() clock.Mono { return c.base.Now() }

// Wall returns the base clock's wall time plus the current correction.
func (c *Clock) Wall() time.Time {
	now := c.base.Now()
	c.mu.Lock()
	corr := c.st.Correction(now)
	c.mu.Unlock()
	return c.base.Wall().Add(corr)
}

// SyncedWall returns Wall, or an error wrapping ErrNotSynchronized when
// there is no valid sync younger than MaxAge.
func (c *Clock) SyncedWall() (time.Time, error) {
	now := c.base.Now()
	c.mu.Lock()
	ok, err := c.st.Synchronized(now), c.st.err
	corr := c.st.Correction(now)
	c.mu.Unlock()
	if !ok {
		if err != nil {
			return time.Time{}, fmt.Errorf("%w (last error: %w)", ErrNotSynchronized, err)
		}
		return time.Time{}, ErrNotSynchronized
	}
	return c.base.Wall().Add(corr), nil
}

// Config returns the configuration in use, defaults filled in.
func (c *Clock) Config() Config { return c.st.Config() }

// Interval returns the time between successful syncs.
func (c *Clock) Interval() time.Duration { return c.st.cfg.Interval }

// NextSync returns the base-clock monotonic time the next sync is due.
func (c *Clock) NextSync() clock.Mono {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.NextSync()
}

// Synchronized reports whether there was a valid sync no older than MaxAge.
func (c *Clock) Synchronized() bool {
	now := c.base.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Synchronized(now)
}

// Status returns a snapshot.
func (c *Clock) Status() Status {
	now := c.base.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Status(now)
}

// Observe applies a sample measured against the base clock (the sans-I/O
// entry: Sync is Query followed by Observe or ObserveError).
func (c *Clock) Observe(smp Sample) Adjustment {
	now := c.base.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Observe(now, smp)
}

// ObserveError records a failed query.
func (c *Clock) ObserveError(err error) {
	now := c.base.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.ObserveError(now, err)
}

// Sync queries the server now, whatever NextSync says, and applies the
// result. The error (wrapped, with ErrInvalidResponse when the server's
// answer failed validation) is also kept in Status().Err.
func (c *Clock) Sync(ctx context.Context) error {
	_, err := c.sync(ctx)
	return err
}

func (c *Clock) sync(ctx context.Context) (Adjustment, error) {
	smp, err := Query(ctx, c.st.cfg, c.base.Wall)
	if err != nil {
		c.ObserveError(err)
		return 0, err
	}
	return c.Observe(smp), nil
}

// Run syncs whenever NextSync is due until ctx is cancelled, then returns
// ctx's error. It is the only part of this package that waits on real
// time, so base must advance in real time (a System clock, or a wrapper of
// one). Run it in a goroutine owned by the endpoint; cancelling ctx also
// interrupts a query in flight. Failures are logged to cfg.Logger, kept in
// Status, and retried after RetryInterval.
func (c *Clock) Run(ctx context.Context) error {
	log := c.st.cfg.Logger
	for {
		if wait := c.NextSync().Sub(c.base.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		adj, err := c.sync(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if log == nil {
			continue
		}
		if err != nil {
			log.Warn("ntpclock: sync failed", "err", err)
		} else if adj == Stepped {
			st := c.Status()
			log.Info("ntpclock: stepped", "offset", st.Offset, "rtt", st.RTT, "server", st.Server)
		}
	}
}
