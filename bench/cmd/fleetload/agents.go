package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/loadgen"
	"github.com/fresh-udp/fresh/bench/monitorproc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// pki is one run's CA, the monitors' certificate (written into dir) and
// every agent's client certificate (in memory).
type pki struct {
	files  monitorproc.Creds
	roots  *x509.CertPool
	agents []tls.Certificate
	names  []string // each agent's CommonName: its device name and KV key
}

// agentName is agent i's certificate CommonName, which the monitor stores
// it under (its KV key: the name has no byte monitor.Key escapes).
func agentName(i int) string { return fmt.Sprintf("agent-%05d", i+1) }

// newPKI makes the CA with transport/devcert (the code path
// examples/certgen's certificates have the shape of), the monitors'
// certificate for 127.0.0.1 and n agent certificates, signed on every
// CPU.
func newPKI(dir string, n int) (*pki, error) {
	ca, mon, err := loadgen.LocalCA("fleetload CA")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := devcert.PEM(mon)
	if err != nil {
		return nil, err
	}
	p := &pki{files: monitorproc.Creds{Cert: filepath.Join(dir, "monitor.pem"), Key: filepath.Join(dir, "monitor-key.pem"), CA: filepath.Join(dir, "ca.pem")},
		roots: ca.Pool(), agents: make([]tls.Certificate, n), names: make([]string, n)}
	for path, data := range map[string][]byte{p.files.Cert: certPEM, p.files.Key: keyPEM, p.files.CA: ca.CertPEM()} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for w := range errs {
		wg.Go(func() {
			for i := w; i < n; i += len(errs) {
				c, err := ca.Issue(agentName(i))
				if err != nil {
					errs[w] = err
					return
				}
				p.agents[i], p.names[i] = c, agentName(i)
			}
		})
	}
	wg.Wait()
	return p, errors.Join(errs...)
}

// loadPKI reads the first n agents of a directory examples/certgen wrote
// (certgen -dir DIR -agents N): DIR/ca.pem, the monitors' DIR/monitor.pem
// and monitor-key.pem, and DIR/agents/<name>/{agent.pem,agent-key.pem} in
// name order. The monitor's certificate must be valid for localhost (the
// name the agents verify; certgen's default -hosts).
func loadPKI(dir string, n int) (*pki, error) {
	p := &pki{files: monitorproc.Creds{Cert: filepath.Join(dir, "monitor.pem"), Key: filepath.Join(dir, "monitor-key.pem"), CA: filepath.Join(dir, "ca.pem")}}
	b, err := os.ReadFile(p.files.CA)
	if err != nil {
		return nil, fmt.Errorf("-certs: %w", err)
	}
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("-certs: no PEM certificate in %s", p.files.CA)
	}
	if _, err := tls.LoadX509KeyPair(p.files.Cert, p.files.Key); err != nil {
		return nil, fmt.Errorf("-certs: the monitor's certificate: %w", err)
	}
	dirs, err := os.ReadDir(filepath.Join(dir, "agents"))
	if err != nil {
		return nil, fmt.Errorf("-certs: %w (write agents with certgen -dir %s -agents N)", err, dir)
	}
	for _, d := range dirs {
		if len(p.agents) == n {
			break
		}
		if !d.IsDir() {
			continue
		}
		ad := filepath.Join(dir, "agents", d.Name())
		c, err := tls.LoadX509KeyPair(filepath.Join(ad, "agent.pem"), filepath.Join(ad, "agent-key.pem"))
		if err != nil {
			return nil, fmt.Errorf("-certs: agent %s: %w", d.Name(), err)
		}
		name := c.Leaf.Subject.CommonName
		if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			// Such a name is its own KV key (monitor.Key escapes
			// nothing in it), which the check reads the bucket by.
			return nil, fmt.Errorf("-certs: agent %s: CommonName %q: letters, digits, \"-\" and \"_\" only", d.Name(), name)
		}
		p.agents, p.names = append(p.agents, c), append(p.names, name)
	}
	if len(p.agents) < n {
		return nil, fmt.Errorf("-certs %s: %d agents in agents/, -agents asks for %d", dir, len(p.agents), n)
	}
	return p, nil
}

// agent is one simulated device: its connection and what it last handed
// to the regulator (written by its shard's goroutine only, read after).
type agent struct {
	name    string
	conn    *transport.Conn
	monitor int
	lastSeq uint64 // 0: none sent yet (sequence numbers start at 1)
	lastGen int64  // µs, Unix
}

// payloadSize is an update's payload: the agent's index, its sequence
// number and its generation time (µs), so that the KV record can be
// checked against what the agent last sent, whatever the monitor's clock
// correction made of the transport's own stamp.
const payloadSize = 4 + 8 + 8

func encodePayload(b []byte, idx int, seq uint64, genUS int64) {
	binary.BigEndian.PutUint32(b, uint32(idx))
	binary.BigEndian.PutUint64(b[4:], seq)
	binary.BigEndian.PutUint64(b[12:], uint64(genUS))
}

func decodePayload(b []byte) (idx int, seq uint64, genUS int64, ok bool) {
	if len(b) != payloadSize {
		return 0, 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint64(b[4:]), int64(binary.BigEndian.Uint64(b[12:])), true
}

// fleet is the simulated agents, sharing sockets: perSocket agents to one
// client Transport (one socket, one reader and one driver goroutine),
// which keeps 10,000 agents to a few dozen sockets and goroutines.
type fleet struct {
	agents     []*agent
	transports []*transport.Transport
	sockets    []*net.UDPConn
}

// dial connects n agents, agent i to monitor i mod len(addrs), parallel
// at a time; a failed dial fails the run.
func dial(ctx context.Context, p *pki, addrs []string, n, perSocket, parallel int, rate float64) (*fleet, error) {
	f := &fleet{agents: make([]*agent, n)}
	// One clock for every connection, not a clock.System per Config:
	// one object instead of one per agent. (Before the Transport's driver
	// converted each connection's deadlines to its own clock, a clock per
	// Dial also stalled every handshake on a shared Transport once enough
	// agents shared it; this program found that.)
	clk := clock.NewSystem()
	for lo := 0; lo < n; lo += perSocket {
		udp, err := transport.ListenUDP("127.0.0.1:0", false)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("agent socket: %w", err)
		}
		f.sockets = append(f.sockets, udp)
		f.transports = append(f.transports, &transport.Transport{Conn: udp})
	}
	raddrs := make([]*net.UDPAddr, len(addrs))
	for i, a := range addrs {
		var err error
		if raddrs[i], err = net.ResolveUDPAddr("udp", a); err != nil {
			f.close()
			return nil, err
		}
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error
		nerr   atomic.Int32
	)
	sem := make(chan struct{}, parallel)
	for i := range n {
		sem <- struct{}{}
		if nerr.Load() > 0 {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			m := i % len(addrs)
			cfg := transport.Config{
				TLS: &tls.Config{Certificates: []tls.Certificate{p.agents[i]}, RootCAs: p.roots, ServerName: "localhost"},
				// The sensing rate: the regulator sends at most this
				// often, less when the path (here a shared CPU) queues.
				MaxUpdateRate: rate,
				IdleTimeout:   60 * time.Second,
				Clock:         clk,
				Linger:        -1,
			}
			c, err := f.transports[i/perSocket].Dial(ctx, raddrs[m], cfg)
			if err != nil {
				nerr.Add(1)
				mu.Lock()
				failed = errors.Join(failed, fmt.Errorf("%s to monitor %d: %w", p.names[i], m, err))
				mu.Unlock()
				return
			}
			f.agents[i] = &agent{name: p.names[i], conn: c, monitor: m}
		})
	}
	wg.Wait()
	if failed != nil {
		f.close()
		return nil, failed
	}
	return f, nil
}

// send has every agent hand the regulator a sample rate times a second
// (in shards, each at a random phase: loadgen.Tick) until ctx ends. ACP
// (Config.UpdatePolicy's default) decides which of them go out: only the
// freshest waiting one is ever sent.
func (f *fleet) send(ctx context.Context, rate float64) {
	loadgen.Tick(ctx, len(f.agents), rate, func(lo, hi int, _ uint64) {
		var b [payloadSize]byte
		for i, a := range f.agents[lo:hi] {
			seq, gen := a.lastSeq+1, time.Now().UnixMicro()
			encodePayload(b[:], lo+i, seq, gen)
			if a.conn.SendUpdate(b[:]) == nil {
				a.lastSeq, a.lastGen = seq, gen
			}
		}
	})
}

func (f *fleet) close() {
	var wg sync.WaitGroup
	for _, a := range f.agents {
		if a != nil {
			wg.Go(func() { a.conn.Close() })
		}
	}
	wg.Wait()
	for _, t := range f.transports {
		t.Close()
	}
	for _, s := range f.sockets {
		s.Close()
	}
}
