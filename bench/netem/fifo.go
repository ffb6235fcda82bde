package netem

import (
	"errors"
	"fmt"

	"github.com/fresh-udp/fresh/clock"
)

// ErrInvalidConfig wraps every configuration error of this package.
var ErrInvalidConfig = errors.New("netem: invalid config")

// DefaultLimit is the queue capacity in packets when a config sets neither
// a packet nor a byte limit: 1000, as Linux's pfifo (txqueuelen), the codel
// qdisc's limit, and the AQM paper's Table 1 for CoDel, FQ-CoDel and CAKE.
const DefaultLimit = 1000

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// limits is the packet and byte capacity shared by every discipline. A zero
// field is no limit on that dimension; both zero means DefaultLimit packets.
type limits struct {
	packets int // packets, 0 = unlimited
	bytes   int // bytes, 0 = unlimited
}

func newLimits(packets, bytes int) (limits, error) {
	if packets < 0 || bytes < 0 {
		return limits{}, invalid("queue limits must not be negative (limit %d, limit_bytes %d)", packets, bytes)
	}
	if packets == 0 && bytes == 0 {
		packets = DefaultLimit
	}
	return limits{packets: packets, bytes: bytes}, nil
}

// over reports whether a backlog of n packets and b bytes exceeds the limits.
func (l limits) over(n, b int) bool {
	return (l.packets > 0 && n > l.packets) || (l.bytes > 0 && b > l.bytes)
}

// FIFOConfig configures a drop-tail FIFO.
type FIFOConfig struct {
	// Limit is the capacity in packets (a pfifo); 0 = no packet limit.
	Limit int
	// LimitBytes is the capacity in bytes (a bfifo); 0 = no byte limit.
	// With both set, a packet is dropped if it would break either. With
	// neither set, the limit is DefaultLimit packets.
	LimitBytes int
}

// FIFO is a drop-tail first-in first-out queue: an arriving packet that
// would take the backlog over the packet or byte limit is dropped
// (DropOverflow) and the queue is left unchanged.
type FIFO struct {
	lim  limits
	q    pktQueue
	drop DropFunc
}

var _ Queue = (*FIFO)(nil)

// NewFIFO returns an empty FIFO. onDrop may be nil.
func NewFIFO(cfg FIFOConfig, onDrop DropFunc) (*FIFO, error) {
	lim, err := newLimits(cfg.Limit, cfg.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("fifo: %w", err)
	}
	return &FIFO{lim: lim, drop: dropOrNop(onDrop)}, nil
}

// Enqueue appends p, or drops it if the queue would overflow.
func (f *FIFO) Enqueue(now clock.Mono, p *Packet) {
	if f.lim.over(f.q.len()+1, f.q.bytes+p.Size) {
		f.drop(now, p, DropOverflow)
		return
	}
	p.EnqueuedAt = now
	f.q.push(p)
}

// Dequeue returns the oldest packet, or nil.
func (f *FIFO) Dequeue(now clock.Mono) *Packet { return f.q.pop() }

// Len is the backlog in packets.
func (f *FIFO) Len() int { return f.q.len() }

// Bytes is the backlog in bytes.
func (f *FIFO) Bytes() int { return f.q.bytes }

func dropOrNop(f DropFunc) DropFunc {
	if f == nil {
		return func(clock.Mono, *Packet, DropReason) {}
	}
	return f
}
