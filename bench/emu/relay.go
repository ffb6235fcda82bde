package emu

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/bench/netem"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
)

// Defaults for RelayConfig's zero fields.
const (
	DefaultListen      = "127.0.0.1:0"
	DefaultSocketBuf   = 4 << 20 // bytes, SO_RCVBUF / SO_SNDBUF request (the kernel caps it at rmem_max / wmem_max)
	DefaultMaxClients  = 64
	DefaultMaxDatagram = 65535 // bytes of UDP payload: everything IPv4 UDP can carry
	// DefaultClientIdle frees a client slot after 30 s without a datagram
	// from that client: the UDP timeout of Linux conntrack
	// (nf_conntrack_udp_timeout) and the floor RFC 4787 §4.3 (REQ-5) sets
	// for a NAT's UDP mappings, so a real client that goes quiet for less
	// keeps its slot on the relay as it would its NAT binding.
	DefaultClientIdle = 30 * time.Second
)

// Wire overhead added to each datagram's payload to get netem's Packet.Size,
// so the link serialises whole IP packets as the simulator does
// (bench/sim counts IPv4 20 + UDP 8 bytes of headers). Layer-2 framing is
// not counted, in either driver.
const (
	headerBytesV4 = 20 + 8 // IPv4 + UDP
	headerBytesV6 = 40 + 8 // IPv6 + UDP
)

// smallBuf is the buffer size of the pooled packet buffers that carry
// ordinary datagrams (anything up to an Ethernet MTU, with room); larger
// datagrams use buffers of MaxDatagram bytes from a second free list.
const smallBuf = 2048

var (
	// ErrInvalidConfig wraps every RelayConfig validation error.
	ErrInvalidConfig = errors.New("emu: invalid relay config")
	// ErrClosed is returned by SetPath after Close.
	ErrClosed = errors.New("emu: relay closed")
)

// RelayConfig configures a Relay. Zero fields take the documented defaults.
type RelayConfig struct {
	// Listen is the front address clients send to (default
	// DefaultListen, "127.0.0.1:0": loopback, a free port).
	Listen string
	// Target is the server's UDP address (required).
	Target string
	// Forward (client → server) and Reverse (server → client) are the two
	// directions of the emulated bottleneck, with the simulator's
	// semantics (netem.LinkConfigFromPath). Each needs a capacity: a
	// rate, a trace or a rate walk.
	Forward, Reverse scenario.Path
	// Seed seeds both links' random choices (loss, jitter, flow hash):
	// forward gets Seed·2+1 and reverse Seed·2+2, as in bench/sim.
	Seed uint64
	// Clock timestamps arrivals and drives the links (default
	// clock.NewSystem()). It must advance in real time: the relay sleeps
	// on real timers for the durations the clock's readings imply.
	Clock clock.Clock
	// Logger receives the relay's logs (nil: silent).
	Logger *slog.Logger
	// ReadBuffer and WriteBuffer are the socket buffer sizes requested
	// for every socket, in bytes (default DefaultSocketBuf; a negative
	// value leaves the kernel's default). Failures are logged, not fatal.
	ReadBuffer, WriteBuffer int
	// MaxClients caps the number of distinct client addresses (default
	// DefaultMaxClients). Datagrams from further clients are dropped and
	// counted in RelayStats.DroppedNoClientSlot. A slot is held until
	// ClientIdle passes without a datagram from its client.
	MaxClients int
	// ClientIdle frees a client slot (and closes its back socket) once its
	// client has sent nothing for this long (default DefaultClientIdle;
	// negative: never). Without it, MaxClients spoofed datagrams from as
	// many source ports would hold every slot for the relay's lifetime
	// and keep every later client out. Only datagrams from the client
	// refresh a slot, as only outbound packets refresh a NAT mapping
	// (RFC 4787 §4.3, REQ-6): a server that keeps answering a vanished
	// client does not keep its slot.
	ClientIdle time.Duration
	// MaxDatagram is the largest UDP payload relayed, in bytes (default
	// DefaultMaxDatagram). Larger datagrams are dropped and counted in
	// DirectionStats.Oversize.
	MaxDatagram int
	// Spin makes the scheduler busy-wait (yielding) for the last Spin
	// before each link event instead of sleeping on a timer: Go's timers
	// on Linux wake up to ~1 ms late, spinning brings that to a few µs at
	// the cost of CPU while packets are in flight. 0 (default) never
	// spins; to help, Spin should exceed the timer's lateness (≥ 1.1 ms).
	// See the package doc, "Timing".
	Spin time.Duration
	// Filter, if set, sees every datagram the relay reads, before its
	// link, and drops it by returning false (counted in
	// DirectionStats.Filtered): a middlebox that drops chosen datagrams,
	// such as a server's first flights. It runs on the reading socket's
	// goroutine (the front socket's, or a client's back socket's), so
	// calls for the two directions may be concurrent; it must be quick.
	Filter func(d Datagram) bool
	// Observe, if set, sees every datagram that crossed its link, just
	// before the relay writes it out (not those a blackout drops). It
	// runs on the scheduler goroutine, in the order the datagrams leave;
	// it must be quick.
	Observe func(d Datagram)
}

// Datagram is one datagram as RelayConfig.Filter and Observe see it.
type Datagram struct {
	Forward bool           // client → server
	Client  netip.AddrPort // the client's address, as the front socket sees it
	// Data is the UDP payload, valid only during the call; Filter and
	// Observe must not keep or change it.
	Data []byte
	// Corrupted (Observe only) says the link flipped a bit of Data (the
	// path's corrupt settings, bench/netem).
	Corrupted bool
}

func (c *RelayConfig) fill() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Target == "" {
		return bad("target is required")
	}
	if c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ReadBuffer == 0 {
		c.ReadBuffer = DefaultSocketBuf
	}
	if c.WriteBuffer == 0 {
		c.WriteBuffer = DefaultSocketBuf
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxClients < 0 {
		return bad("max clients %d is negative", c.MaxClients)
	}
	if c.ClientIdle == 0 {
		c.ClientIdle = DefaultClientIdle
	}
	if c.ClientIdle < 0 {
		c.ClientIdle = never
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.MaxDatagram < 1 || c.MaxDatagram > DefaultMaxDatagram {
		return bad("max datagram %d out of range 1..%d", c.MaxDatagram, DefaultMaxDatagram)
	}
	if c.Spin < 0 {
		return bad("spin %v is negative", c.Spin)
	}
	return nil
}

// DirectionStats are one direction's counters since NewRelay.
type DirectionStats struct {
	// Link is the emulated link's own counters (queue, drops, busy time).
	Link netem.LinkStats
	// DatagramsIn/BytesIn count datagrams read from the sockets and offered
	// to the link (payload bytes); DatagramsOut/BytesOut those written
	// out after crossing it.
	DatagramsIn, BytesIn   uint64
	DatagramsOut, BytesOut uint64
	// ReadErrors and WriteErrors count failed socket reads and writes
	// (e.g. ECONNREFUSED while the server is not listening). Forward
	// WriteErrors also count back sockets that could not be opened (the
	// datagram that needed one is dropped).
	ReadErrors, WriteErrors uint64
	// Oversize counts datagrams larger than MaxDatagram, dropped unread.
	Oversize uint64
	// Blackout counts datagrams that crossed the link during a blackout
	// (SetBlackout) and were dropped instead of written.
	Blackout uint64
	// Filtered counts datagrams RelayConfig.Filter dropped.
	Filtered uint64
	// NotIPv4 (TUN router only) counts packets read from a TUN that are
	// not well-formed IPv4 (IPv6 is disabled in the namespaces), dropped.
	NotIPv4 uint64
}

// RelayStats are the relay's counters since NewRelay.
type RelayStats struct {
	Forward, Reverse DirectionStats
	// Clients is the number of client slots in use.
	Clients int
	// ClientsExpired counts slots freed after ClientIdle without a
	// datagram from their client.
	ClientsExpired uint64
	// DroppedNoClientSlot counts datagrams from new clients beyond
	// MaxClients, dropped at the front socket (not offered to the link).
	DroppedNoClientSlot uint64
	// Rebinds counts back sockets replaced by Rebind.
	Rebinds uint64
}

// Relay is a real-time emulated bottleneck between UDP clients and one
// server; see the package doc. Its methods are safe for concurrent use.
type Relay struct {
	cfg     RelayConfig
	log     *slog.Logger
	target  netip.AddrPort
	front   *net.UDPConn
	frontV4 bool // front socket's datagrams are IPv4 (or v4-mapped)

	sched // links, scheduler goroutine, buffers

	clientsMu sync.Mutex
	clients   map[netip.AddrPort]*client
	closed    bool // under clientsMu: no new clients

	// Under sched.mu: the scheduler's write state and the final stats.
	oob    []byte // scratch for egress TOS control messages
	noMark bool   // sendmsg refused a TOS cmsg once: stop re-marking
	final  *RelayStats

	fwdC, revC dirCounters
	noSlot     atomic.Uint64
	expired    atomic.Uint64
	rebinds    atomic.Uint64
	blackout   atomic.Bool
	// nextSweep is when the front reader next looks for idle slots
	// (clock.Mono; only the front reader touches it).
	nextSweep clock.Mono

	closeOnce sync.Once
	closeErr  error
}

// dirCounters are one direction's socket counters. The In/Read ones are
// written by reader goroutines, the Out/Write ones by the scheduler.
type dirCounters struct {
	in, inBytes, out, outBytes  atomic.Uint64
	readErr, writeErr, oversize atomic.Uint64
	notIPv4, blackout, filtered atomic.Uint64
}

func (d *dirCounters) snapshot(link netem.LinkStats) DirectionStats {
	return DirectionStats{
		Link:         link,
		DatagramsIn:  d.in.Load(),
		BytesIn:      d.inBytes.Load(),
		DatagramsOut: d.out.Load(),
		BytesOut:     d.outBytes.Load(),
		ReadErrors:   d.readErr.Load(),
		WriteErrors:  d.writeErr.Load(),
		Oversize:     d.oversize.Load(),
		NotIPv4:      d.notIPv4.Load(),
		Blackout:     d.blackout.Load(),
		Filtered:     d.filtered.Load(),
	}
}

// client is one distinct client address and the back socket that stands
// for it towards the server.
type client struct {
	addr   netip.AddrPort              // as seen on the front socket
	back   atomic.Pointer[net.UDPConn] // connected to Target; Rebind replaces it
	flow   uint64                      // FlowKey base: a hash of addr (low bit = direction)
	v4     bool                        // addr is IPv4 or v4-mapped (egress TOS cmsg kind)
	backV4 bool                        // the back socket talks IPv4
	// lastSeen is when the client last sent a datagram (clock.Mono),
	// for ClientIdle.
	lastSeen atomic.Int64
}

// NewRelay validates cfg, builds the two links, listens on cfg.Listen and
// starts the relay. Close it to stop its goroutines and sockets.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	target, err := net.ResolveUDPAddr("udp", cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("%w: target %q: %w", ErrInvalidConfig, cfg.Target, err)
	}
	listen, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: listen %q: %w", ErrInvalidConfig, cfg.Listen, err)
	}
	r := &Relay{
		cfg:     cfg,
		log:     cfg.Logger,
		target:  target.AddrPort(),
		clients: make(map[netip.AddrPort]*client),
		oob:     make([]byte, max(oobSize, 64)),
	}
	r.pool.largeSize = cfg.MaxDatagram
	if err := r.initSched(cfg.Clock, cfg.Spin, cfg.Forward, cfg.Reverse, cfg.Seed); err != nil {
		return nil, err
	}
	r.out = r.send
	if r.front, err = net.ListenUDP("udp", listen); err != nil {
		return nil, fmt.Errorf("emu: listen %s: %w", cfg.Listen, err)
	}
	r.frontV4 = is4(r.front.LocalAddr())
	r.setupSocket(r.front, "front", r.frontV4)
	r.log.Info("emu relay listening", "addr", r.front.LocalAddr(), "target", r.target,
		"forward", netem.LinkConfigFromPath(cfg.Forward, 0), "reverse", netem.LinkConfigFromPath(cfg.Reverse, 0))

	r.wg.Add(2)
	go r.schedule()
	go r.readFront()
	return r, nil
}

func is4(a net.Addr) bool {
	ua, ok := a.(*net.UDPAddr)
	return ok && ua.IP.To4() != nil
}

// setupSocket sets buffer sizes and TOS reception; failures are logged.
func (r *Relay) setupSocket(c *net.UDPConn, name string, v4 bool) {
	if r.cfg.ReadBuffer > 0 {
		if err := c.SetReadBuffer(r.cfg.ReadBuffer); err != nil {
			r.log.Warn("emu: set read buffer", "socket", name, "bytes", r.cfg.ReadBuffer, "err", err)
		}
	}
	if r.cfg.WriteBuffer > 0 {
		if err := c.SetWriteBuffer(r.cfg.WriteBuffer); err != nil {
			r.log.Warn("emu: set write buffer", "socket", name, "bytes", r.cfg.WriteBuffer, "err", err)
		}
	}
	if err := enableRecvTOS(c, v4); err != nil {
		r.log.Warn("emu: cannot read TOS; treating every datagram as best effort", "socket", name, "err", err)
	}
}

// Addr is the front address clients send to.
func (r *Relay) Addr() net.Addr { return r.front.LocalAddr() }

// Stats returns the relay's counters. After Close they stay at their
// final values (packets still in the links at Close are in Link.Backlog
// and Link.InFlight and were dropped).
func (r *Relay) Stats() RelayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.final != nil {
		return *r.final
	}
	return r.statsLocked()
}

func (r *Relay) statsLocked() RelayStats {
	r.clientsMu.Lock()
	n := len(r.clients)
	r.clientsMu.Unlock()
	return RelayStats{
		Forward:             r.fwdC.snapshot(r.fwd.Stats()),
		Reverse:             r.revC.snapshot(r.rev.Stats()),
		Clients:             n,
		ClientsExpired:      r.expired.Load(),
		DroppedNoClientSlot: r.noSlot.Load(),
		Rebinds:             r.rebinds.Load(),
	}
}

// SetPath applies path changes now (nil: leave that direction alone), as
// a scenario's scheduled change: see netem.Link.ApplyChange for what
// changes when. Both changes are checked before either is applied.
func (r *Relay) SetPath(forward, reverse *scenario.PathChange) error {
	return r.applyChange(forward, reverse, func() bool { return r.final != nil })
}

// SetBlackout starts (on) or ends (off) a blackout: while it lasts every
// datagram that crosses either link is dropped instead of written,
// including those already in the links when it began, as if the
// bottleneck's cable were pulled. The links keep running (queueing,
// serialisation), so traffic resumes where the emulated path would. Drops
// are counted in DirectionStats.Blackout.
func (r *Relay) SetBlackout(on bool) { r.blackout.Store(on) }

// checkChange mirrors netem's validation so SetPath can refuse a bad pair
// before touching either link.
func checkChange(c *scenario.PathChange) error {
	if c == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Rate != nil && *c.Rate == 0:
		return bad("rate must be positive")
	case (c.Rate != nil && c.Trace != nil) || (c.Rate != nil && c.RateWalk != nil) || (c.Trace != nil && c.RateWalk != nil):
		return bad("give only one of rate, trace and rate_walk")
	case c.Delay != nil && *c.Delay < 0:
		return bad("delay %v is negative", c.Delay.D())
	case c.Jitter != nil && *c.Jitter < 0:
		return bad("jitter %v is negative", c.Jitter.D())
	case c.Loss != nil && !(*c.Loss >= 0 && *c.Loss <= 1):
		return bad("loss %v outside 0..1", *c.Loss)
	}
	return nil
}

// Close stops the relay: it closes every socket, waits for every goroutine
// it started, drops the packets still in the links and releases the
// buffers. It is idempotent; later calls return the first call's result.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		close(r.done)
		r.clientsMu.Lock()
		r.closed = true
		backs := make([]*net.UDPConn, 0, len(r.clients))
		for _, cl := range r.clients {
			backs = append(backs, cl.back.Load())
		}
		r.clientsMu.Unlock()
		r.closeErr = r.front.Close()
		for _, b := range backs {
			if err := b.Close(); err != nil && r.closeErr == nil {
				r.closeErr = err
			}
		}
		r.wg.Wait()

		r.mu.Lock()
		st := r.statsLocked()
		r.final = &st
		// Packets in the links and the arrival channel are garbage now;
		// drop every reference so their buffers can be collected.
		r.discard()
		r.mu.Unlock()
		r.log.Info("emu relay closed", "addr", r.front.LocalAddr())
	})
	return r.closeErr
}

// clientFor returns the client for a datagram from addr that arrived at
// now, creating it (and its back socket and reader) if there is a free
// slot, and refreshes its idle timer. nil means drop. Only the front
// reader calls it.
func (r *Relay) clientFor(addr netip.AddrPort, now clock.Mono) *client {
	if !now.Before(r.nextSweep) {
		r.expireIdle(now)
	}
	r.clientsMu.Lock()
	cl := r.clients[addr]
	n := len(r.clients)
	r.clientsMu.Unlock()
	if cl != nil {
		cl.lastSeen.Store(int64(now))
		return cl
	}
	if n >= r.cfg.MaxClients && r.expireIdle(now) > 0 {
		r.clientsMu.Lock()
		n = len(r.clients)
		r.clientsMu.Unlock()
	}
	if n >= r.cfg.MaxClients {
		if r.noSlot.Add(1) == 1 {
			r.log.Warn("emu: client limit reached; dropping datagrams from new clients", "limit", r.cfg.MaxClients, "client", addr)
		}
		return nil
	}
	back, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(r.target))
	if err != nil {
		r.fwdC.writeErr.Add(1)
		r.log.Warn("emu: open back socket", "client", addr, "target", r.target, "err", err)
		return nil
	}
	cl = &client{
		addr:   addr,
		flow:   hashAddr(addr) &^ 1,
		v4:     addr.Addr().Is4() || addr.Addr().Is4In6(),
		backV4: is4(back.LocalAddr()),
	}
	cl.back.Store(back)
	cl.lastSeen.Store(int64(now))
	r.setupSocket(back, "back", cl.backV4)
	r.clientsMu.Lock()
	if r.closed {
		r.clientsMu.Unlock()
		_ = back.Close()
		return nil
	}
	r.clients[addr] = cl
	r.wg.Add(1)
	r.clientsMu.Unlock()
	r.log.Debug("emu: new client", "client", addr, "back", back.LocalAddr())
	go r.readBack(cl, back)
	return cl
}

// Rebind gives every client a new back socket, so the server sees each
// from a new source port while the client keeps its slot: a NAT that
// rebinds (RFC 4787 §4.1: a mapping lost and made anew, a new external
// port). The old socket is closed at once, so the server's datagrams to
// the old port are lost (the kernel answers them with a port
// unreachable), as a NAT drops those for a binding it forgot; datagrams
// still in the forward link go out from the new port. It returns how
// many clients were rebound, and the first error opening a socket (that
// client keeps its old one).
func (r *Relay) Rebind() (int, error) { return r.RebindTo(netip.Addr{}) }

// RebindTo is Rebind with the new back sockets bound to the local address
// addr (the zero Addr: whichever the kernel picks, as Rebind), so the
// server sees every client come from a new address and port: a NAT that
// maps the client to another of its external addresses (RFC 4787 §4.1's
// "paired" pooling broken, or a carrier NAT's pool). On Linux every
// address of 127.0.0.0/8 is local, so 127.0.0.2, 127.0.0.3, … reach a
// server on 127.0.0.1.
func (r *Relay) RebindTo(addr netip.Addr) (int, error) {
	var local *net.UDPAddr
	if addr.IsValid() {
		local = net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0))
	}
	r.clientsMu.Lock()
	defer r.clientsMu.Unlock()
	if r.closed {
		return 0, ErrClosed
	}
	n := 0
	var first error
	for _, cl := range r.clients {
		back, err := net.DialUDP("udp", local, net.UDPAddrFromAddrPort(r.target))
		if err != nil {
			if first == nil {
				first = fmt.Errorf("emu: rebind %s: %w", cl.addr, err)
			}
			continue
		}
		r.setupSocket(back, "back", cl.backV4)
		old := cl.back.Swap(back)
		_ = old.Close()
		r.wg.Add(1)
		go r.readBack(cl, back)
		r.log.Debug("emu: client rebound", "client", cl.addr, "old", old.LocalAddr(), "new", back.LocalAddr())
		n++
	}
	r.rebinds.Add(uint64(n))
	return n, first
}

// expireIdle frees every slot whose client has sent nothing for
// ClientIdle and returns how many it freed. It runs when the table is
// full and otherwise at most every ClientIdle/4, so a slot lives at most
// 1.25·ClientIdle past its client's last datagram while the relay sees
// traffic. Closing the back socket ends its reader; a datagram of that
// client still in the forward link then fails to write (counted in
// Forward.WriteErrors), one still in the reverse link is delivered.
func (r *Relay) expireIdle(now clock.Mono) int {
	if r.cfg.ClientIdle == never {
		r.nextSweep = clock.Mono(math.MaxInt64)
		return 0
	}
	r.nextSweep = now.Add(r.cfg.ClientIdle / 4)
	var idle []*client
	r.clientsMu.Lock()
	for addr, cl := range r.clients {
		if now.Sub(clock.Mono(cl.lastSeen.Load())) >= r.cfg.ClientIdle {
			delete(r.clients, addr)
			idle = append(idle, cl)
		}
	}
	r.clientsMu.Unlock()
	for _, cl := range idle {
		_ = cl.back.Load().Close()
		r.log.Debug("emu: client slot expired", "client", cl.addr, "idle", r.cfg.ClientIdle)
	}
	r.expired.Add(uint64(len(idle)))
	return len(idle)
}

// hashAddr is FNV-1a over the address and port, then the SplitMix64
// finaliser: a FlowKey that spreads well (netem re-hashes it with its seed).
func hashAddr(a netip.AddrPort) uint64 {
	b := a.Addr().As16()
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	p := a.Port()
	h = (h ^ uint64(p&0xff)) * 1099511628211
	h = (h ^ uint64(p>>8)) * 1099511628211
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// direction of a datagram; also the low bit of its FlowKey.
type direction uint8

const (
	forward direction = 0 // client → server
	reverse direction = 1 // server → client
)

// never is a duration longer than any test or run; used for idle timers.
const never = time.Duration(math.MaxInt64)
