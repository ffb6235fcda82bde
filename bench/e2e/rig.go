package e2e

// The rig every end-to-end test and interop case shares: a listener on a
// socket of its own, the relay (bench/emu) in front of it, connections
// dialled through the relay and matched with the listener's side, and a
// stream of seeded pseudo-random bytes that both ends hash (SHA-256), so
// a transfer ends with a byte-exact check.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// RigConfig configures a Rig.
type RigConfig struct {
	// Relay is the relay's configuration: Forward, Reverse, Seed and any
	// of its other settings. Target is the rig's listener, whatever it
	// says.
	Relay emu.RelayConfig
	// Server configures the listener; its TLS defaults to the loopback
	// development certificate (WithTLS).
	Server transport.Config
	// DisableRetry and StatelessResetKey are the listener's Transport's.
	DisableRetry      bool
	StatelessResetKey *[32]byte
	// Wrap, if set, wraps the listener's socket (to watch what it reads).
	Wrap func(*net.UDPConn) net.PacketConn
}

// Rig is a listener behind the relay. Close it to release everything.
type Rig struct {
	// Sock is the listener's socket, the rig's own, so that Crash can
	// close it alone.
	Sock      *net.UDPConn
	Transport *transport.Transport
	Listener  *transport.Listener
	Relay     *emu.Relay

	mu   sync.Mutex
	acc  map[*transport.Listener]*acceptor
	more []io.Closer // listeners a caller swapped in
}

// NewRig opens the listener on 127.0.0.1 and the relay in front of it.
func NewRig(cfg RigConfig) (*Rig, error) {
	sock, err := transport.ListenUDP("127.0.0.1:0", false)
	if err != nil {
		return nil, fmt.Errorf("rig: listener socket: %w", err)
	}
	var conn net.PacketConn = sock
	if cfg.Wrap != nil {
		conn = cfg.Wrap(sock)
	}
	r := &Rig{Sock: sock, acc: map[*transport.Listener]*acceptor{}}
	r.Transport = &transport.Transport{Conn: conn, DisableRetry: cfg.DisableRetry, StatelessResetKey: cfg.StatelessResetKey}
	if r.Listener, err = r.Transport.Listen(WithTLS(cfg.Server)); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("rig: listen: %w", err)
	}
	rc := cfg.Relay
	rc.Target = sock.LocalAddr().String()
	if r.Relay, err = emu.NewRelay(rc); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("rig: relay: %w", err)
	}
	return r, nil
}

// Close closes the relay, the listener's Transport and socket, every
// listener Use swapped in, and the accepted connections no Dial claimed.
func (r *Rig) Close() error {
	if r.Relay != nil {
		_ = r.Relay.Close()
	}
	r.mu.Lock()
	accs, more := r.acc, r.more
	r.acc, r.more = nil, nil
	r.mu.Unlock()
	for _, c := range more {
		_ = c.Close()
	}
	for _, a := range accs {
		a.close()
	}
	if r.Transport != nil {
		_ = r.Transport.Close()
	}
	return r.Sock.Close()
}

// Crash closes the listener's socket and nothing else, as a server process
// that dies does: its connections send no CLOSE and vanish.
func (r *Rig) Crash() { _ = r.Sock.Close() }

// Use makes l the listener Dial accepts from (a server restarted on the
// same port); Close closes it.
func (r *Rig) Use(l *transport.Listener) {
	r.mu.Lock()
	r.more = append(r.more, l)
	r.mu.Unlock()
	r.Listener = l
}

// Dial dials through the relay with cfg (TLS: WithTLS) and returns both
// ends of the connection. Several Dials may run at once: each gets the
// listener's Conn with its own connection ID.
func (r *Rig) Dial(ctx context.Context, cfg transport.Config) (cli, srv *transport.Conn, err error) {
	cli, err = transport.Dial(ctx, r.Relay.Addr().String(), WithTLS(cfg))
	if err != nil {
		return nil, nil, err
	}
	if srv, err = r.Accept(ctx, cli); err != nil {
		_ = cli.Abort()
		return nil, nil, err
	}
	return cli, srv, nil
}

// Accept waits for the listener's side of cli, a Conn dialled through the
// relay (by Dial, or DialEarly: then once its handshake completes).
func (r *Rig) Accept(ctx context.Context, cli *transport.Conn) (*transport.Conn, error) {
	id, _ := cli.ConnectionIDs()
	r.mu.Lock()
	if r.acc == nil {
		r.mu.Unlock()
		return nil, errors.New("rig: closed")
	}
	a := r.acc[r.Listener]
	if a == nil {
		a = newAcceptor(r.Listener)
		r.acc[r.Listener] = a
	}
	r.mu.Unlock()
	return a.wait(ctx, id)
}

// acceptor accepts every connection of one listener and hands each to the
// Accept waiting for its client connection ID.
type acceptor struct {
	l    *transport.Listener
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	conns   map[uint64]*transport.Conn
	changed chan struct{} // closed and replaced when conns or err change
	err     error
}

func newAcceptor(l *transport.Listener) *acceptor {
	ctx, stop := context.WithCancel(context.Background())
	a := &acceptor{l: l, stop: stop, done: make(chan struct{}), conns: map[uint64]*transport.Conn{}, changed: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			c, err := l.Accept(ctx)
			a.mu.Lock()
			if err != nil {
				a.err = fmt.Errorf("rig: accept: %w", err)
			} else {
				id, _ := c.ConnectionIDs()
				a.conns[id] = c
			}
			close(a.changed)
			a.changed = make(chan struct{})
			a.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return a
}

func (a *acceptor) wait(ctx context.Context, id uint64) (*transport.Conn, error) {
	for {
		a.mu.Lock()
		c, ok := a.conns[id]
		delete(a.conns, id)
		err, changed := a.err, a.changed
		a.mu.Unlock()
		switch {
		case ok:
			return c, nil
		case err != nil:
			return nil, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("rig: no accepted connection for client ID %016x: %w", id, ctx.Err())
		}
	}
}

// close stops the accept loop and closes the connections nobody claimed.
func (a *acceptor) close() {
	a.stop()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, c := range a.conns {
		_ = c.Close()
		delete(a.conns, id)
	}
}

// WithTLS gives c the loopback development certificate (devcert.Loopback)
// unless it has TLS or is Insecure.
func WithTLS(c transport.Config) transport.Config {
	if c.TLS == nil && !c.Insecure {
		conf, err := devcert.Loopback()
		if err != nil {
			panic(fmt.Sprintf("devcert.Loopback: %v", err)) // an in-memory CA cannot fail but for a broken crypto/rand
		}
		c.TLS = conf
	}
	return c
}

// SampleInterval is how often a Stream notes the bytes read so far, for
// Goodput.
const SampleInterval = 100 * time.Millisecond

// Stream is a stream of pseudo-random bytes (a seeded PCG, so neither end
// keeps it in memory) written on one Conn and read on another, both ends
// hashing it, with a sampler of the bytes read every SampleInterval.
type Stream struct {
	size       int64
	sent, got  atomic.Int64
	start      time.Time
	stop       chan struct{}
	stopOnce   sync.Once
	writerErr  chan error
	readerErr  chan error
	sentSum    []byte    // the writer's hash, once writerErr said nil
	gotSum     []byte    // the reader's hash, once readerErr said nil
	readerDone time.Time // when the reader saw the end, once readerErr said nil

	mu      sync.Mutex
	samples []sample
	doneS   chan struct{}
	wgS     sync.WaitGroup
}

type sample struct {
	at  time.Time
	got int64
}

// StartStream starts writing on w and reading on r. With size > 0 the
// writer writes size bytes and then half-closes (CloseWrite); with size 0
// it writes until Stop. Close the Stream (or Finish it) to stop its
// sampler.
func StartStream(w, r *transport.Conn, seed uint64, size int64) *Stream {
	s := &Stream{
		size: size, start: time.Now(), stop: make(chan struct{}),
		writerErr: make(chan error, 1), readerErr: make(chan error, 1), doneS: make(chan struct{}),
	}
	go s.write(w, seed)
	go func() {
		h := sha256.New()
		err := s.read(r, h)
		if err == nil {
			s.gotSum, s.readerDone = h.Sum(nil), time.Now()
		}
		s.readerErr <- err
	}()
	s.wgS.Add(1)
	go s.sample()
	return s
}

func (s *Stream) write(w *transport.Conn, seed uint64) {
	src := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for {
		left := int64(len(buf))
		if s.size > 0 {
			left = min(left, s.size-s.sent.Load())
		}
		select {
		case <-s.stop:
			left = 0
		default:
		}
		if left == 0 {
			s.sentSum = h.Sum(nil)
			s.writerErr <- w.CloseWrite()
			return
		}
		b := buf[:left]
		fill(src, b)
		n, err := w.Write(b)
		h.Write(b[:n])
		s.sent.Add(int64(n))
		if err != nil {
			s.writerErr <- err
			return
		}
	}
}

// fill fills b with the stream's next bytes.
func fill(r *rand.Rand, b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

func (s *Stream) read(r *transport.Conn, h hash.Hash) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		h.Write(buf[:n])
		s.got.Add(int64(n))
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *Stream) sample() {
	defer s.wgS.Done()
	tk := time.NewTicker(SampleInterval)
	defer tk.Stop()
	for {
		s.mu.Lock()
		s.samples = append(s.samples, sample{time.Now(), s.got.Load()})
		s.mu.Unlock()
		select {
		case <-s.doneS:
			return
		case <-tk.C:
		}
	}
}

// Sent and Got are the bytes written and read so far.
func (s *Stream) Sent() int64 { return s.sent.Load() }
func (s *Stream) Got() int64  { return s.got.Load() }

// Start is when StartStream was called.
func (s *Stream) Start() time.Time { return s.start }

// Stop makes a writer that writes until stopped half-close after its
// current write.
func (s *Stream) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

// WriterErr and ReaderErr each deliver one value: nil when the writer
// half-closed cleanly / the reader saw io.EOF, or the error that ended it.
// A caller that takes a value there cannot Finish.
func (s *Stream) WriterErr() <-chan error { return s.writerErr }
func (s *Stream) ReaderErr() <-chan error { return s.readerErr }

// Close stops the sampler; it is idempotent.
func (s *Stream) Close() {
	select {
	case <-s.doneS:
	default:
		close(s.doneS)
	}
	s.wgS.Wait()
}

// StreamResult is what a byte-exact stream moved.
type StreamResult struct {
	Bytes  int64
	SHA256 []byte
	// Took is from StartStream to the reader's end of stream.
	Took time.Duration
}

// Goodput is the stream's goodput over its whole life, bit/s.
func (r StreamResult) Goodput() float64 {
	if r.Took <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Took.Seconds()
}

// Finish ends the stream (Stop, for a writer that writes until stopped;
// one of a given size writes it all), waits up to within for the writer to half-close and the reader to see
// the end, and requires the stream byte-exact: both ended cleanly and
// read as many bytes, with the same SHA-256, as were written.
func (s *Stream) Finish(within time.Duration) (StreamResult, error) {
	defer s.Close()
	if s.size == 0 {
		s.Stop()
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case err := <-s.writerErr:
		if err != nil {
			return StreamResult{}, fmt.Errorf("writer: %w", err)
		}
	case <-timer.C:
		return StreamResult{}, fmt.Errorf("the writer did not end within %v (%d bytes written)", within, s.Sent())
	}
	select {
	case err := <-s.readerErr:
		if err != nil {
			return StreamResult{}, fmt.Errorf("reader: %w (%d of %d bytes read)", err, s.Got(), s.Sent())
		}
	case <-timer.C:
		return StreamResult{}, fmt.Errorf("the reader did not see the end of the stream within %v (%d of %d bytes read)", within, s.Got(), s.Sent())
	}
	if s.Sent() != s.Got() {
		return StreamResult{}, fmt.Errorf("stream length: %d bytes written, %d read", s.Sent(), s.Got())
	}
	if string(s.sentSum) != string(s.gotSum) {
		return StreamResult{}, fmt.Errorf("stream sha256: written %x, read %x", s.sentSum, s.gotSum)
	}
	return StreamResult{Bytes: s.Got(), SHA256: s.gotSum, Took: s.readerDone.Sub(s.start)}, nil
}

// Goodput is the stream's goodput, bit/s, over [from, to], from the
// samples nearest inside it (0 without two samples in it).
func (s *Stream) Goodput(from, to time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a, b *sample
	for i := range s.samples {
		x := &s.samples[i]
		if a == nil && !x.at.Before(from) {
			a = x
		}
		if !x.at.After(to) {
			b = x
		}
	}
	if a == nil || b == nil || !b.at.After(a.at) {
		return 0
	}
	return float64(b.got-a.got) * 8 / b.at.Sub(a.at).Seconds()
}
