package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/session"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// What a monitor holds per device: the listener's heap and goroutines per
// idle mutual-TLS connection and per half-open handshake (a client that
// sent its ClientHello and never answered the server's flight). The
// clients run in a second process, this test binary started again
// (TestMemoryClients), so that what is measured is the listener's alone.
//
// The guard below runs with every `go test`; the measurement at scale is
// part of the long suite:
//
//	FRESH_REALTIME=1 FRESH_MEM_N=10000 go test -run TestMeasureMemory -v ./transport
const (
	memClientsEnv = "FRESH_MEM_CLIENTS" // the client process's arguments
	memCAEnv      = "FRESH_MEM_CA"      // the CA certificate, PEM
	memCertEnv    = "FRESH_MEM_CERT"    // the clients' certificate, PEM
	memKeyEnv     = "FRESH_MEM_KEY"     // and its key
)

// memSample is the listener process's memory after collecting garbage.
type memSample struct {
	heap       uint64 // /memory/classes/heap/objects:bytes (live objects once GC has run)
	stacks     uint64 // /memory/classes/heap/stacks:bytes
	inuse      uint64 // MemStats.HeapInuse: spans in use, fragmentation included
	goroutines int
}

func sampleMemory() memSample {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: s[0].Value.Uint64(), stacks: s[1].Value.Uint64(), inuse: ms.HeapInuse, goroutines: runtime.NumGoroutine()}
}

// settledMemory samples until the heap stops shrinking: on a loaded
// machine some connections are still releasing their handshake state (the
// last flight, TLS once the ticket is out) when the fixed wait ends, and
// a sample then counts it as theirs for good (8.06 KB against 7.1-7.5 KB
// per idle connection, once, in the full suite). It samples every 250 ms
// until a sample is no more than 0.5 % below the one before, for at most
// 30 s, and returns the smallest. (10 s was not always enough under the
// race detector in the full suite: 8.33 KB after a heap that was still
// shrinking when the 10 s ran out, 7.3-7.9 KB alone.)
func settledMemory() memSample {
	m := sampleMemory()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		next := sampleMemory()
		if float64(next.heap) >= 0.995*float64(m.heap) {
			if next.heap < m.heap {
				m = next
			}
			break
		}
		m = next
	}
	return m
}

// memPer is the growth from base to m per connection.
type memPer struct {
	heap, stacks, inuse, goroutines float64
}

func (m memSample) per(base memSample, n int) memPer {
	d := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return memPer{d(m.heap, base.heap), d(m.stacks, base.stacks), d(m.inuse, base.inuse), float64(m.goroutines-base.goroutines) / float64(n)}
}

func (p memPer) String() string {
	return fmt.Sprintf("heap objects %.0f B, stacks %.0f B, heap in use (spans) %.0f B, goroutines %.3f", p.heap, p.stacks, p.inuse, p.goroutines)
}

// mtlsCreds are a listener's and its clients' credentials for mutual TLS.
type mtlsCreds struct {
	server                 *tls.Config
	caPEM, certPEM, keyPEM []byte
}

func newMTLSCreds(t testing.TB) mtlsCreds {
	ca, err := devcert.NewCA("memory test CA")
	require.NoError(t, err)
	srv, err := ca.Issue("localhost", "localhost", "127.0.0.1")
	require.NoError(t, err)
	dev, err := ca.Issue("device-0001")
	require.NoError(t, err)
	certPEM, keyPEM, err := devcert.PEM(dev)
	require.NoError(t, err)
	return mtlsCreds{
		server: &tls.Config{Certificates: []tls.Certificate{srv}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()},
		caPEM:  ca.CertPEM(), certPEM: certPEM, keyPEM: keyPEM,
	}
}

// memRun is one measurement: n clients of mode ("idle": connections
// that completed their handshake and send nothing; "halfopen": ClientHellos
// never followed up) against a listener on tr.
type memRun struct {
	mode string
	n    int
	// warm clients connect before the baseline is taken, so that what is
	// measured is the n−warm after them: the cost of one more connection,
	// without the listener's own buffers that its first connections grow
	// (its send batch, about 1 MB under a connection storm).
	warm int
	// held is how many half-open handshakes the listener is expected to
	// hold (MaxHandshakes may refuse some); 0: n.
	held int
	tr   *Transport
	cfg  Config
	// profile, if set, is where a heap profile is written once measured.
	profile string
}

// measure runs r and returns the listener's growth per client and its
// counters when measured.
func (r memRun) measure(t *testing.T) (memPer, ListenerStats) {
	t.Helper()
	raiseNoFile(t)
	creds := newMTLSCreds(t)
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer udp.Close()
	r.tr.Conn = udp
	cfg := r.cfg
	cfg.TLS = creds.server
	l, err := r.tr.Listen(cfg)
	require.NoError(t, err)
	defer r.tr.Close()

	var conns []*Conn
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := l.Accept(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	accepted := func() int { mu.Lock(); defer mu.Unlock(); return len(conns) }
	held := r.n
	if r.held != 0 {
		held = r.held
	}

	child := exec.Command(os.Args[0], "-test.run=^TestMemoryClients$", "-test.v")
	child.Env = append(os.Environ(),
		fmt.Sprintf("%s=%s %s %d %d", memClientsEnv, r.mode, l.Addr(), r.warm, r.n),
		memCAEnv+"="+string(creds.caPEM), memCertEnv+"="+string(creds.certPEM), memKeyEnv+"="+string(creds.keyPEM))
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	ready := make(chan error, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
			} else {
				fmt.Fprintln(os.Stderr, "clients:", sc.Text())
			}
		}
		ready <- fmt.Errorf("client process ended before it was ready")
	}()
	defer func() {
		stdin.Close()
		_ = child.Wait()
	}()
	waitReady := func() {
		select {
		case err := <-ready:
			require.NoError(t, err)
		case <-time.After(5 * time.Minute):
			t.Fatal("client process not ready in 5 minutes")
		}
	}
	// The baseline: the listener with its accept loop and the warm
	// clients.
	waitReady()
	require.Eventually(t, func() bool { return accepted() == r.warm }, time.Minute, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	base := settledMemory()
	_, err = io.WriteString(stdin, "next\n")
	require.NoError(t, err)
	waitReady()
	switch r.mode {
	case "idle", "keepalive":
		require.Eventually(t, func() bool { return accepted() == r.n }, time.Minute, 10*time.Millisecond)
		// The server's last flight (the Accept and its session ticket)
		// has gone and TLS is released once the ticket is out; a
		// connection is idle once its driver has nothing to send. With
		// keep-alives every second, three rounds of them.
		time.Sleep(500 * time.Millisecond)
		if r.mode == "keepalive" {
			time.Sleep(3 * time.Second)
		}
	case "halfopen":
		require.Eventually(t, func() bool { return l.Stats().Connections == held }, time.Minute, 10*time.Millisecond)
		time.Sleep(200 * time.Millisecond)
		require.Equal(t, held, l.Stats().Connections)
	}
	m := settledMemory()
	if r.profile != "" {
		f, err := os.Create(r.profile)
		require.NoError(t, err)
		require.NoError(t, writeHeapProfile(f))
		f.Close()
	}
	per := m.per(base, r.n-r.warm)
	if r.mode == "halfopen" {
		per = m.per(base, held)
	}
	st := l.Stats()
	t.Logf("%s: %d clients after %d, listener %+v: per client %v", r.mode, r.n-r.warm, r.warm, st, per)
	cancel()
	<-acceptDone
	if r.mode != "halfopen" {
		require.Equal(t, r.n, accepted(), "every client stayed connected while measured")
	} else {
		require.Zero(t, accepted(), "no half-open handshake reached Accept")
	}
	return per, st
}

// raiseNoFile lifts the file-descriptor limit to its hard limit: a client
// Transport is a socket.
func raiseNoFile(t testing.TB) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// TestMemoryClients is the client process of the memory measurements; it
// skips unless started by one. It opens its clients, says "ready" and
// holds them until its stdin closes.
func TestMemoryClients(t *testing.T) {
	args := strings.Fields(os.Getenv(memClientsEnv))
	if len(args) != 4 {
		t.Skip("the client process of the memory measurements")
	}
	mode, addr := args[0], args[1]
	warm, err := strconv.Atoi(args[2])
	require.NoError(t, err)
	n, err := strconv.Atoi(args[3])
	require.NoError(t, err)
	raiseNoFile(t)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM([]byte(os.Getenv(memCAEnv))))
	cert, err := tls.X509KeyPair([]byte(os.Getenv(memCertEnv)), []byte(os.Getenv(memKeyEnv)))
	require.NoError(t, err)
	tlsConf := &tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{cert}}
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	require.NoError(t, err)
	stdin := bufio.NewReader(os.Stdin)
	var open func(from, to int)
	switch mode {
	case "idle", "keepalive":
		// A socket per client (package Dial), as devices have.
		cfg := Config{TLS: tlsConf, IdleTimeout: 10 * time.Minute, Linger: -1, HandshakeTimeout: time.Minute}
		if mode == "keepalive" {
			cfg.KeepAlive = time.Second
		}
		conns := make([]*Conn, n)
		defer func() {
			var wg sync.WaitGroup
			for _, c := range conns {
				if c != nil {
					wg.Go(func() { c.Close() })
				}
			}
			wg.Wait()
		}()
		open = func(from, to int) {
			var wg sync.WaitGroup
			sem := make(chan struct{}, 32)
			errs := make(chan error, to-from)
			for i := from; i < to; i++ {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					c, err := Dial(context.Background(), addr, cfg)
					if err != nil {
						errs <- err
						return
					}
					conns[i] = c
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		}
	case "halfopen":
		// Each client sends its ClientHello (and, after the Retry, again
		// with the token) and never reads the server's answer: the
		// listener holds a handshake waiting for a Finished that never
		// comes, until HandshakeTimeout.
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer udp.Close()
		scfg := Config{TLS: tlsConf}.sessionConfigOrPanic()
		open = func(from, to int) { halfOpen(t, udp, raddr, scfg, to-from) }
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	// Two stages: the warm clients, then the rest, each followed by
	// "ready"; the listener's process says "next" in between, and closes
	// our stdin when it is done.
	open(0, warm)
	fmt.Println("ready")
	_, err = stdin.ReadString('\n')
	require.NoError(t, err)
	open(warm, n)
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, stdin)
}

func writeHeapProfile(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) }

// memN is the number of clients of a measurement: FRESH_MEM_N, or def.
func memN(t testing.TB, def int) int {
	if s := os.Getenv("FRESH_MEM_N"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return def
}

// The numbers at scale, printed: per idle mutual-TLS connection and per
// half-open handshake. FRESH_MEM_PROFILE=prefix writes heap profiles
// (prefix-idle.pb.gz, prefix-halfopen.pb.gz).
func TestMeasureMemory(t *testing.T) {
	skipUnlessMeasuring(t)
	n := memN(t, 10_000)
	prof := os.Getenv("FRESH_MEM_PROFILE")
	if prof != "" {
		runtime.MemProfileRate = 1 // every allocation: the profile's bytes are exact, not sampled
	}
	modes := []string{"idle", "keepalive", "halfopen"}
	if m := os.Getenv("FRESH_MEM_MODE"); m != "" {
		modes = []string{m}
	}
	for _, mode := range modes {
		// One client process, one source: all of MaxHandshakes is its
		// but the places kept for sources with none under way.
		r := memRun{mode: mode, n: n, tr: &Transport{MaxHandshakes: n, MaxHandshakesPerSource: n}, cfg: Config{IdleTimeout: 10 * time.Minute, HandshakeTimeout: 5 * time.Minute}}
		if mode == "halfopen" {
			r.held = n - n/hsReserveShare
		}
		if w := os.Getenv("FRESH_MEM_WARM"); w != "" && mode != "halfopen" {
			var err error
			r.warm, err = strconv.Atoi(w)
			require.NoError(t, err)
			r.n += r.warm
		}
		if mode == "keepalive" {
			r.cfg.KeepAlive = time.Second
		}
		if prof != "" {
			r.profile = prof + "-" + mode + ".pb.gz"
		}
		_, _ = r.measure(t)
	}
}

// The goal a monitor was given: at most 8 KB of heap per idle mutual-TLS
// connection (17.4 KB before; 25.5 KB with this test's client
// certificate). 1,000 connections after 300 that grew the listener's own
// buffers; heap objects after two collections, which does not depend on
// timing. No goroutine per connection.
func TestIdleConnectionMemory(t *testing.T) {
	r := memRun{mode: "idle", warm: 300, n: 1300, tr: &Transport{}, cfg: Config{IdleTimeout: 10 * time.Minute, HandshakeTimeout: time.Minute}}
	per, _ := r.measure(t)
	require.LessOrEqual(t, per.heap, 8000.0, "heap per idle connection: %v", per)
	require.Less(t, per.goroutines, 0.01, "goroutines per idle connection: %v", per)
}

// Half-open handshakes (a ClientHello, then silence) are capped at
// MaxHandshakes: beyond it the listener keeps nothing and starts no
// goroutine, and counts the refusals. Below it each costs crypto/tls's
// handshake state and the goroutine its QUIC API runs the handshake on;
// none of ours. (The clients are one source, given all of MaxHandshakes
// here but its last tenth, which is kept for sources with no handshake
// under way.)
func TestHalfOpenHandshakesCapped(t *testing.T) {
	const limit, clients = 120, 200
	const held = limit - limit/hsReserveShare
	tr := &Transport{MaxHandshakes: limit, MaxHandshakesPerSource: limit}
	r := memRun{mode: "halfopen", n: clients, held: held, tr: tr, cfg: Config{HandshakeTimeout: time.Minute}}
	per, st := r.measure(t)
	require.LessOrEqual(t, per.goroutines, 1.0+2.0/held, "goroutines per half-open handshake (crypto/tls's one): %v", per)
	// Heap per handshake held: 24-28 KB measured (108 held: with 36 one
	// stray allocation left after the collections moved it past 31 KB), 13 of them crypto/tls's
	// (its Conn, transcript, ClientHello and key shares, record ciphers)
	// and our flight 2 kept for retransmission.
	require.LessOrEqual(t, per.heap, 30000.0, "heap per half-open handshake: %v", per)
	require.Equal(t, held, st.Connections)
	// A client's ClientHello takes two Initials (its post-quantum key
	// share): each refused one is counted.
	require.GreaterOrEqual(t, st.InitialsHandshakeLimit, int64(clients-held))
}

// halfOpen starts n handshakes from udp to raddr and abandons each once
// its ClientHello has gone with the Retry's token: the listener holds a
// handshake waiting for a Finished that never comes.
func halfOpen(t testing.TB, udp *net.UDPConn, raddr *net.UDPAddr, scfg session.Config, n int) {
	clk := clock.NewSystem()
	buf := make([]byte, 2048)
	sendAll := func(s *session.Session) {
		for {
			d, _, ok := s.Poll(clk.Now(), clk.Wall().UnixMicro(), buf)
			if !ok {
				return
			}
			_, err := udp.WriteTo(d, raddr)
			require.NoError(t, err)
		}
	}
	rb := make([]byte, 2048)
	for range n {
		s, err := session.New(scfg, randomID(), true, clk.Now())
		require.NoError(t, err)
		sendAll(s)
		// The Retry (the server's only answer to a token-less Initial).
		for {
			require.NoError(t, udp.SetReadDeadline(time.Now().Add(5*time.Second)))
			k, _, err := udp.ReadFrom(rb)
			require.NoError(t, err)
			if h, _, err := wire.ParseHeader(rb[:k]); err == nil && h.Type == wire.TypeRetry && h.ConnID == s.ConnID() {
				s.Handle(clk.Now(), clk.Wall().UnixMicro(), rb[:k])
				break
			}
		}
		sendAll(s)
		s.Abort(nil) // releases its TLS goroutine; nothing more is sent
	}
}
