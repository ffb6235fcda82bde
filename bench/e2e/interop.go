package e2e

// The interop-style fault suite: fresh's own protocol under the test cases
// of the QUIC interop runner (github.com/quic-interop/quic-interop-runner,
// testcases.py), by the runner's names, through the relay (Rig) on the
// runner's link (10 Mbit/s, 15 ms each way, a 25-packet drop-tail queue)
// or, for crosstraffic, through the TUN router beside kernel TCP. Every
// case checks that what arrived is byte for byte what was sent (SHA-256
// at both ends) and the protocol's own promise for that case: the 3×
// anti-amplification bound seen on the path, no certificate in a resumed
// handshake, 0-RTT data in 0-RTT packets delivered once, one connection
// across blackouts and rebinds, and so on (Case.Promise). The table is
// shared by TestInterop and `freshbench interop`.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/emu"
	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/internal/wire"
	"github.com/fresh-udp/fresh/transport"
)

// The runner's link: 10 Mbit/s each way, 15 ms one way (a 30 ms RTT), a
// drop-tail queue of 25 packets (its ns-3 simulator's defaults).
const (
	interopRate  = 10e6 // bit/s
	interopDelay = 15 * time.Millisecond
	interopQueue = 25 // packets
)

// interopPath is one direction of the runner's link.
func interopPath() scenario.Path {
	return scenario.Path{
		Rate: scenario.Rate(interopRate), Delay: scenario.Duration(interopDelay),
		Queue: scenario.Queue{Discipline: "fifo", Limit: interopQueue},
	}
}

// burst30 is the runner's handshake loss and corruption: 30 % of the
// datagrams, in bursts of 3. A Gilbert chain (bad state: every datagram
// hit; good state: none) whose bad spells are exactly 3 datagrams long,
// entered with P = 1/7 after a good datagram, so that 3P/(3P+1) = 30 %
// of the datagrams are hit. (Geometric spells of mean 3, R = 1/3, have a
// long tail: on a path that carries a handshake's few datagrams a spell
// of 7 or more lasts seconds, and lost every Accept a client's resent
// Finished drew for 8 s.)
var burst30 = scenario.GilbertElliott{P: 1.0 / 7, LossBad: 1, Length: 3}

// Options tune a run of the suite.
type Options struct {
	// Full runs each case at the runner's size (50 handshakes, 10 MB
	// transfers, rebinds and blackouts every 5 s); the default sizes fit
	// the CI's test run. Case.Default and Case.Full say what each moves.
	Full bool
	// Strict also enforces the bounds that depend on the machine's speed
	// (goodput against the link rate): on a quiet machine only, as the
	// long real-time suite (FRESH_REALTIME=1). Otherwise they are
	// measured and reported, not enforced.
	Strict bool
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
}

// Case is one case of the suite.
type Case struct {
	// Name is the QUIC interop runner's name of the case.
	Name string
	// Promise is what the case checks beyond the byte-exact transfer.
	Promise string
	// Default and Full describe what a default and a full run do.
	Default, Full string
	// KnownFailure, if set, is why the case fails today: a protocol
	// weakness it found that is not fixed yet. TestInterop skips the case
	// with this reason; `freshbench interop` runs it and shows it fail.
	KnownFailure string
	run          func(r *caseRun) (outcome, error)
}

// Status is a case's verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip" // cannot run here (the reason is in Err)
)

// Result is what running a case gave.
type Result struct {
	Case    string
	Status  Status
	Promise string
	// Known is the case's KnownFailure.
	Known string
	// Measured says what the promise's check saw, in one line.
	Measured string
	// Bytes is the application bytes that arrived byte-exact.
	Bytes int64
	Took  time.Duration
	// Err is why the case failed or was skipped.
	Err error
}

// ErrSkip wraps the reason a case cannot run here (no TUN device, not
// root, no iperf3).
var ErrSkip = errors.New("interop: cannot run here")

// outcome is a case's measurements.
type outcome struct {
	measured string
	bytes    int64
}

// caseRun is one run of one case.
type caseRun struct {
	ctx  context.Context
	opts Options
}

// size picks the default or the full size.
func pick[T any](r *caseRun, def, full T) T {
	if r.opts.Full {
		return full
	}
	return def
}

func (r *caseRun) logf(format string, args ...any) {
	if r.opts.Logf != nil {
		r.opts.Logf(format, args...)
	}
}

// Cases is the suite, in the runner's order.
func Cases() []Case {
	return []Case{
		{Name: "handshakeloss", run: runHandshakeLoss,
			Promise: "every handshake completes through 30 % loss each way in bursts of 3; median handshake time",
			Default: "20 handshakes, 4 at a time, 10 KB each", Full: "50 handshakes one after another, 10 KB each"},
		{Name: "handshakecorruption", run: runHandshakeCorruption,
			Promise: "every handshake completes through 30 % corruption each way in bursts of 3; corrupted datagrams dropped",
			Default: "20 handshakes, 4 at a time, 10 KB each", Full: "50 handshakes one after another, 10 KB each"},
		{Name: "transferloss", run: runTransferLoss,
			Promise: "one connection through 2 % loss each way; the losses repaired",
			Default: "3 MB", Full: "10 MB"},
		{Name: "transfercorruption", run: runTransferCorruption,
			Promise: "one connection through 2 % corruption each way; every corrupted datagram dropped, none taken as data",
			Default: "3 MB", Full: "10 MB"},
		{Name: "blackhole", run: runBlackhole,
			Promise: "one connection, one handshake, across every blackout",
			Default: "4 MB, link 1.5 s on / 1 s off", Full: "10 MB, link 5 s on / 2 s off"},
		{Name: "amplificationlimit", run: runAmplificationLimit,
			Promise: "before the client's address is validated the server sends at most 3× what it received (RFC 9000 §8.1), seen on the path; the handshake completes",
			Default: "a 12-certificate chain, no Retry, the server's datagrams dropped until the client's third Initial; 10 KB", Full: "the same"},
		{Name: "rebind-port", run: runRebindPort,
			Promise: "the client's NAT gives it a new port every interval: the server follows each rebinding (validated) on one connection",
			Default: "4 MB, a rebinding every 1 s", Full: "20 MB, a rebinding every 5 s"},
		{Name: "rebind-addr", run: runRebindAddr,
			Promise: "the client's NAT gives it a new address every interval: the server follows each rebinding (validated) on one connection",
			Default: "4 MB, a rebinding every 1 s", Full: "20 MB, a rebinding every 5 s"},
		{Name: "resumption", run: runResumption,
			Promise: "the second connection resumes the TLS session: no certificate crosses the path",
			Default: "2 connections, 10 KB each", Full: "the same"},
		{Name: "zerortt", run: runZeroRTT,
			Promise: "the resumed connection's first update goes in 0-RTT packets and is delivered once",
			Default: "2 connections, a 1000-byte update in 0-RTT, 10 KB each", Full: "the same"},
		{Name: "keyupdate", run: runKeyUpdate,
			Promise: "the keys update during the transfer, both ends follow every update, no packet is lost to it",
			Default: "3 MB, an update every 500 packets", Full: "10 MB, an update every 1000 packets"},
		{Name: "goodput", run: runGoodput,
			Promise: "goodput against the 10 Mbit/s link rate (with Strict: at least 70 % of it)",
			Default: "3 MB", Full: "10 MB"},
		{Name: "crosstraffic", run: runCrossTraffic,
			Promise: "the transfer completes beside a kernel CUBIC flow (iperf3) through the TUN router; both goodputs (with Strict: fresh gets at least 10 % of the link)",
			Default: "2 MB beside 10 s of CUBIC", Full: "10 MB beside 40 s of CUBIC"},
	}
}

// Lookup returns the cases named, in the suite's order (all for none),
// or an error naming an unknown one and the known ones.
func Lookup(names []string) ([]Case, error) {
	all := Cases()
	if len(names) == 0 {
		return all, nil
	}
	var out []Case
	for _, c := range all {
		if slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(c Case) bool { return c.Name == n }) {
			known := make([]string, len(all))
			for i, c := range all {
				known[i] = c.Name
			}
			return nil, fmt.Errorf("interop: no case %q (the cases: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// Run runs c and returns its verdict.
func Run(ctx context.Context, c Case, opts Options) Result {
	start := time.Now()
	out, err := c.run(&caseRun{ctx: ctx, opts: opts})
	res := Result{Case: c.Name, Promise: c.Promise, Known: c.KnownFailure, Measured: out.measured, Bytes: out.bytes, Took: time.Since(start), Err: err, Status: Pass}
	switch {
	case errors.Is(err, ErrSkip):
		res.Status = Skip
	case err != nil:
		res.Status = Fail
	}
	return res
}

// newInteropRig is a Rig on the runner's link with fwd and rev changed by
// mod (nil: as they are).
func newInteropRig(cfg RigConfig, mod func(fwd, rev *scenario.Path)) (*Rig, error) {
	fwd, rev := interopPath(), interopPath()
	if mod != nil {
		mod(&fwd, &rev)
	}
	cfg.Relay.Forward, cfg.Relay.Reverse = fwd, rev
	if cfg.Relay.Seed == 0 {
		cfg.Relay.Seed = 25
	}
	return NewRig(cfg)
}

// dialInterop opens a Rig on the runner's clean link and one connection
// through it; the caller closes all three.
func dialInterop(r *caseRun) (*Rig, *transport.Conn, *transport.Conn, error) {
	rig, err := newInteropRig(RigConfig{}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	cli, srv, err := rig.Dial(ctx, transport.Config{})
	if err != nil {
		_ = rig.Close()
		return nil, nil, nil, fmt.Errorf("dial: %w", err)
	}
	return rig, cli, srv, nil
}

// transfer dials through rig with cliCfg, moves size bytes from the client
// to the server and requires them byte-exact (within limit). The caller
// closes cli and srv.
func transfer(ctx context.Context, rig *Rig, cliCfg transport.Config, seed uint64, size int64, limit time.Duration) (cli, srv *transport.Conn, res StreamResult, err error) {
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if cli, srv, err = rig.Dial(dctx, cliCfg); err != nil {
		return nil, nil, res, fmt.Errorf("dial: %w", err)
	}
	res, err = StartStream(cli, srv, seed, size).Finish(limit)
	if err != nil {
		_ = cli.Abort()
		_ = srv.Abort()
		return nil, nil, res, err
	}
	return cli, srv, res, nil
}

// closeBoth closes a connection's two ends, the client first.
func closeBoth(cli, srv *transport.Conn) {
	_ = cli.Close()
	_ = srv.Close()
}

// smallFile is what each handshake case's connection moves.
const smallFile = 10_000

// handshakeBudget is the handshake cases' HandshakeTimeout at both ends.
// Through 30 % loss in bursts a handshake needs its Retry round, both
// datagrams of the ClientHello (X25519MLKEM768's key share makes it two),
// the server's three and the Finished and Accept, each flight resent on a
// timer of 250 ms to 2 s: a few in a hundred take longer than the default
// 10 s (the cases report how many), the slowest seen 20 s (six Accepts
// lost in a row, the server resending one per Finished that got
// through). The runner's cases give a handshake as long as it needs; a
// device on a link this lossy is configured so.
const handshakeBudget = 60 * time.Second

// defaultHandshakeTimeout is transport.Config.HandshakeTimeout's default,
// against which the handshake cases count the slow handshakes.
const defaultHandshakeTimeout = 10 * time.Second

// handshakes runs n handshakes, workers at a time, each moving smallFile
// bytes byte-exact, and returns the handshake times (Dial's) and the sum
// of both ends' Stats.
func handshakes(r *caseRun, rig *Rig, n, workers int) (times []time.Duration, cs, ss transport.Stats, err error) {
	var mu sync.Mutex
	var firstErr error
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if failed {
					return
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(r.ctx, handshakeBudget+5*time.Second)
				cli, srv, derr := rig.Dial(ctx, transport.Config{HandshakeTimeout: handshakeBudget})
				cancel()
				took := time.Since(start)
				if derr == nil {
					_, derr = StartStream(cli, srv, uint64(i)+1, smallFile).Finish(30 * time.Second)
				}
				mu.Lock()
				if derr != nil && firstErr == nil {
					firstErr = fmt.Errorf("handshake %d of %d: %w", i+1, n, derr)
				}
				if derr == nil {
					if took > defaultHandshakeTimeout {
						r.logf("handshake %d of %d took %v, over the default HandshakeTimeout", i+1, n, took.Round(time.Millisecond))
					}
					times = append(times, took)
					addStats(&cs, cli.Stats())
					addStats(&ss, srv.Stats())
				}
				mu.Unlock()
				if cli != nil {
					closeBoth(cli, srv)
				}
			}
		})
	}
	wg.Wait()
	return times, cs, ss, firstErr
}

// addStats adds the counters the handshake cases report.
func addStats(sum *transport.Stats, s transport.Stats) {
	sum.PacketsSent += s.PacketsSent
	sum.PacketsReceived += s.PacketsReceived
	sum.PacketsLost += s.PacketsLost
	sum.Unauthenticated += s.Unauthenticated
	sum.Malformed += s.Malformed
	sum.Replayed += s.Replayed
}

// quantile is the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func runHandshakeLoss(r *caseRun) (outcome, error) {
	return handshakeCase(r, func(fwd, rev *scenario.Path) {
		ge := burst30
		fwd.GE, rev.GE = &ge, &ge
	}, func(st emu.RelayStats, _, _ transport.Stats, _ transport.ListenerStats) (string, error) {
		f, v := st.Forward.Link, st.Reverse.Link
		if f.DroppedRandom == 0 || v.DroppedRandom == 0 {
			return "", fmt.Errorf("the path lost nothing (%d forward, %d reverse): the case tested nothing", f.DroppedRandom, v.DroppedRandom)
		}
		return fmt.Sprintf("lost %d/%d datagrams forward, %d/%d reverse",
			f.DroppedRandom, f.Enqueued, v.DroppedRandom, v.Enqueued), nil
	})
}

func runHandshakeCorruption(r *caseRun) (outcome, error) {
	return handshakeCase(r, func(fwd, rev *scenario.Path) {
		ge := burst30
		fwd.CorruptGE, rev.CorruptGE = &ge, &ge
	}, func(st emu.RelayStats, cs, ss transport.Stats, ls transport.ListenerStats) (string, error) {
		f, v := st.Forward.Link, st.Reverse.Link
		if f.Corrupted == 0 || v.Corrupted == 0 {
			return "", fmt.Errorf("the path corrupted nothing (%d forward, %d reverse): the case tested nothing", f.Corrupted, v.Corrupted)
		}
		// The listener's Initials (sealed, version 3) and the Retries
		// the clients dropped count too: every corrupted datagram that
		// arrived must be dropped, none taken.
		dropped := cs.Unauthenticated + cs.Malformed + ss.Unauthenticated + ss.Malformed + ls.Malformed + ls.InitialsUnauthenticated
		if dropped == 0 {
			return "", fmt.Errorf("%d and %d datagrams corrupted, none dropped as unauthenticated or malformed", f.Corrupted, v.Corrupted)
		}
		return fmt.Sprintf("corrupted %d/%d datagrams forward, %d/%d reverse; the ends dropped %d as unauthenticated or malformed (the listener %d Initials that failed to open)",
			f.Corrupted, f.Enqueued, v.Corrupted, v.Enqueued, dropped, ls.InitialsUnauthenticated), nil
	})
}

// handshakeCase runs the handshake cases: n handshakes on the runner's
// link changed by mod, all of which must complete and move their file
// byte-exact; check reads the path's and the ends' counters.
func handshakeCase(r *caseRun, mod func(fwd, rev *scenario.Path),
	check func(emu.RelayStats, transport.Stats, transport.Stats, transport.ListenerStats) (string, error)) (outcome, error) {
	rig, err := newInteropRig(RigConfig{Relay: emu.RelayConfig{MaxClients: 256}, Server: transport.Config{HandshakeTimeout: handshakeBudget}}, mod)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	n, workers := pick(r, 20, 50), pick(r, 4, 1)
	times, cs, ss, err := handshakes(r, rig, n, workers)
	out := outcome{bytes: int64(len(times)) * smallFile}
	if err != nil {
		return out, err
	}
	what, err := check(rig.Relay.Stats(), cs, ss, rig.Listener.Stats())
	slow := 0
	for _, d := range times {
		if d > defaultHandshakeTimeout {
			slow++
		}
	}
	out.measured = fmt.Sprintf("%d/%d handshakes; handshake time median %v, p90 %v, max %v (%d over the default HandshakeTimeout, %v); %s", len(times), n,
		quantile(times, 0.5).Round(time.Millisecond), quantile(times, 0.9).Round(time.Millisecond),
		slices.Max(times).Round(time.Millisecond), slow, defaultHandshakeTimeout, what)
	return out, err
}

// transferCase moves size bytes over one connection on the runner's link
// changed by mod; check reads the path's and the ends' counters.
func transferCase(r *caseRun, size int64, mod func(fwd, rev *scenario.Path),
	check func(emu.RelayStats, transport.Stats, transport.Stats, transport.ListenerStats) (string, error)) (outcome, error) {
	rig, err := newInteropRig(RigConfig{}, mod)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	cli, srv, res, err := transfer(r.ctx, rig, transport.Config{}, 3, size, 120*time.Second)
	if err != nil {
		return outcome{}, err
	}
	defer closeBoth(cli, srv)
	out := outcome{bytes: res.Bytes}
	ls := rig.Listener.Stats()
	if ls.HandshakesStarted != 1 {
		return out, fmt.Errorf("%d handshakes: the transfer did not stay on one connection", ls.HandshakesStarted)
	}
	what, err := check(rig.Relay.Stats(), cli.Stats(), srv.Stats(), ls)
	out.measured = fmt.Sprintf("%.1f MB at %.2f Mbit/s; %s", float64(res.Bytes)/1e6, res.Goodput()/1e6, what)
	return out, err
}

func runTransferLoss(r *caseRun) (outcome, error) {
	return transferCase(r, pick[int64](r, 3e6, 10e6), func(fwd, rev *scenario.Path) { fwd.Loss, rev.Loss = 0.02, 0.02 },
		func(st emu.RelayStats, cs, ss transport.Stats, _ transport.ListenerStats) (string, error) {
			if st.Forward.Link.DroppedRandom == 0 || cs.Retransmitted == 0 {
				return "", fmt.Errorf("nothing lost and repaired (%d datagrams lost forward, %d retransmitted)", st.Forward.Link.DroppedRandom, cs.Retransmitted)
			}
			return fmt.Sprintf("lost %d datagrams forward, %d reverse; the sender declared %d lost, retransmitted %d",
				st.Forward.Link.DroppedRandom, st.Reverse.Link.DroppedRandom, cs.PacketsLost, cs.Retransmitted), nil
		})
}

func runTransferCorruption(r *caseRun) (outcome, error) {
	return transferCase(r, pick[int64](r, 3e6, 10e6), func(fwd, rev *scenario.Path) { fwd.Corrupt, rev.Corrupt = 0.02, 0.02 },
		func(st emu.RelayStats, cs, ss transport.Stats, _ transport.ListenerStats) (string, error) {
			f, v := st.Forward.Link.Corrupted, st.Reverse.Link.Corrupted
			if f == 0 || v == 0 {
				return "", fmt.Errorf("the path corrupted nothing (%d forward, %d reverse)", f, v)
			}
			srvDrop, cliDrop := ss.Unauthenticated+ss.Malformed, cs.Unauthenticated+cs.Malformed
			if srvDrop == 0 || cliDrop == 0 {
				return "", fmt.Errorf("%d corrupted datagrams forward and %d reverse, but the server dropped %d and the client %d as unauthenticated or malformed", f, v, srvDrop, cliDrop)
			}
			return fmt.Sprintf("corrupted %d datagrams forward, %d reverse; dropped as unauthenticated or malformed: %d by the server, %d by the client; %d retransmitted",
				f, v, srvDrop, cliDrop, cs.Retransmitted), nil
		})
}

func runBlackhole(r *caseRun) (outcome, error) {
	size := pick[int64](r, 4e6, 10e6)
	on, off := pick(r, 1500*time.Millisecond, 5*time.Second), pick(r, time.Second, 2*time.Second)
	rig, cli, srv, err := dialInterop(r)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	defer closeBoth(cli, srv)
	st := StartStream(cli, srv, 4, size)
	// The link goes off for `off` every `on`, from the stream's start,
	// until the stream has arrived.
	stop, offs := make(chan struct{}), 0
	var wg sync.WaitGroup
	wg.Go(func() {
		defer rig.Relay.SetBlackout(false)
		for {
			select {
			case <-stop:
				return
			case <-time.After(on):
			}
			rig.Relay.SetBlackout(true)
			offs++
			select {
			case <-stop:
				return
			case <-time.After(off):
			}
			rig.Relay.SetBlackout(false)
		}
	})
	res, err := st.Finish(120 * time.Second)
	close(stop)
	wg.Wait()
	out := outcome{bytes: res.Bytes}
	if err != nil {
		return out, err
	}
	rs, ls := rig.Relay.Stats(), rig.Listener.Stats()
	out.measured = fmt.Sprintf("%.1f MB across %d blackouts of %v (%d datagrams dropped forward, %d reverse) at %.2f Mbit/s; %d handshake",
		float64(res.Bytes)/1e6, offs, off, rs.Forward.Blackout, rs.Reverse.Blackout, res.Goodput()/1e6, ls.HandshakesStarted)
	switch {
	case offs == 0 || rs.Forward.Blackout == 0 || rs.Reverse.Blackout == 0:
		return out, fmt.Errorf("no blackout during the transfer (%d begun, %d and %d datagrams dropped): the case tested nothing", offs, rs.Forward.Blackout, rs.Reverse.Blackout)
	case ls.HandshakesStarted != 1:
		return out, fmt.Errorf("%d handshakes: the transfer did not stay on one connection", ls.HandshakesStarted)
	}
	select {
	case <-cli.Done():
		return out, fmt.Errorf("the connection ended: %w", cli.Err())
	default:
	}
	return out, nil
}

// chain is a certificate chain of n certificates, leaf first, for
// "localhost" and 127.0.0.1: a root (not sent) signs n−1 intermediates,
// the last of which signs the leaf; and the root's pool.
func chain(n int) (tls.Certificate, *x509.CertPool, error) {
	newKey := func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }
	now := time.Now()
	tmpl := func(name string, ca bool) *x509.Certificate {
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		c := &x509.Certificate{
			SerialNumber: serial, Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			BasicConstraintsValid: true, IsCA: ca,
			KeyUsage: x509.KeyUsageDigitalSignature,
		}
		if ca {
			c.KeyUsage |= x509.KeyUsageCertSign
		} else {
			c.DNSNames, c.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}
		return c
	}
	key, err := newKey()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	parent := tmpl("interop root", true)
	der, err := x509.CreateCertificate(rand.Reader, parent, parent, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	root, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(root)
	parent, parentKey := root, key
	var sent [][]byte // intermediates, root side first
	for i := 1; i <= n; i++ {
		k, err := newKey()
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		leaf := i == n
		t := tmpl(fmt.Sprintf("interop intermediate %d", i), !leaf)
		if leaf {
			t.Subject.CommonName = "localhost"
		}
		der, err := x509.CreateCertificate(rand.Reader, t, parent, &k.PublicKey, parentKey)
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		c, _ := x509.ParseCertificate(der)
		sent = append(sent, der)
		parent, parentKey = c, k
		if leaf {
			slices.Reverse(sent)
			return tls.Certificate{Certificate: sent, PrivateKey: k, Leaf: c}, pool, nil
		}
	}
	return tls.Certificate{}, nil, errors.New("chain: n < 1")
}

// header reads the fields of a fresh datagram's header an on-path
// observer sees (internal/wire: type, epoch, connection ID).
func header(d []byte) (typ wire.Type, epoch uint8, connID uint64, ok bool) {
	if len(d) < wire.HeaderLen || d[0] != wire.Version {
		return 0, 0, 0, false
	}
	return wire.Type(d[1]), d[3], binary.BigEndian.Uint64(d[4:12]), true
}

// ampMeter is the on-path check of the anti-amplification limit: the
// server's bytes (every datagram it sent, dropped ones too) against 3×
// the client's bytes delivered to it, until the first client datagram
// that validates its address (any but an Initial or a 0-RTT packet,
// RFC 9000 §8.1) has been delivered.
type ampMeter struct {
	mu                sync.Mutex
	fromCli, fromSrv  int64 // before validation
	cliInitials       int   // client Initials the relay read
	dropUntil         int   // drop the server's datagrams until this many client Initials
	dropped           int
	validated         bool
	worst             float64 // the largest fromSrv / fromCli seen
	violation         string
	srvAfter, srvUsed int64 // after validation: for the log
}

func (m *ampMeter) filter(d Datagram) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	typ, _, _, _ := header(d.Data)
	if d.Forward {
		if typ == wire.TypeInitial {
			m.cliInitials++
		}
		return true
	}
	if !m.validated {
		m.fromSrv += int64(len(d.Data))
		if ratio := float64(m.fromSrv) / float64(max(m.fromCli, 1)); ratio > m.worst {
			m.worst = ratio
		}
		if m.fromSrv > 3*m.fromCli && m.violation == "" {
			m.violation = fmt.Sprintf("the server had sent %d bytes to an unvalidated address that had delivered %d (%.2f×)", m.fromSrv, m.fromCli, float64(m.fromSrv)/float64(m.fromCli))
		}
	} else {
		m.srvAfter += int64(len(d.Data))
	}
	if m.cliInitials < m.dropUntil {
		m.dropped++
		return false
	}
	return true
}

func (m *ampMeter) observe(d Datagram) {
	if !d.Forward {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	typ, epoch, _, _ := header(d.Data)
	if m.validated {
		return
	}
	if typ != wire.TypeInitial && epoch != wire.EpochEarly {
		m.validated = true // delivered now: the server's next datagrams may exceed the bound
		return
	}
	m.fromCli += int64(len(d.Data))
}

// Datagram is the relay's datagram, as the interop cases' meters see it.
type Datagram = emu.Datagram

func runAmplificationLimit(r *caseRun) (outcome, error) {
	const certs = 12
	cert, roots, err := chain(certs)
	if err != nil {
		return outcome{}, fmt.Errorf("certificate chain: %w", err)
	}
	chainBytes := 0
	for _, c := range cert.Certificate {
		chainBytes += len(c)
	}
	if chainBytes <= 3*wire.MinInitialSize {
		return outcome{}, fmt.Errorf("the chain is %d bytes, not above 3× an Initial: the case would test nothing", chainBytes)
	}
	m := &ampMeter{dropUntil: 3}
	rig, err := newInteropRig(RigConfig{
		Server:       transport.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}},
		DisableRetry: true, // Retry validates the address: the limit would not apply
		Relay:        emu.RelayConfig{Filter: m.filter, Observe: m.observe},
	}, nil)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	cliCfg := transport.Config{TLS: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS13}}
	start := time.Now()
	cli, srv, res, err := transfer(r.ctx, rig, cliCfg, 5, smallFile, 30*time.Second)
	out := outcome{bytes: res.Bytes}
	if err != nil {
		return out, err
	}
	took := time.Since(start)
	defer closeBoth(cli, srv)
	m.mu.Lock()
	defer m.mu.Unlock()
	out.measured = fmt.Sprintf("chain %d certificates, %d bytes; before validation the server sent %d bytes for %d received (%.2f× at most), %d of its datagrams dropped; connected and moved the file in %v",
		certs, chainBytes, m.fromSrv, m.fromCli, m.worst, m.dropped, took.Round(time.Millisecond))
	switch {
	case m.violation != "":
		return out, errors.New(m.violation)
	case !m.validated:
		return out, errors.New("no validating datagram from the client was seen")
	case m.dropped == 0:
		return out, errors.New("no server datagram was dropped: the case tested nothing")
	}
	return out, nil
}

// rebindCase moves size bytes while the relay rebinds the client every
// interval with rebind, while at least a quarter MB is still to arrive
// (so that the client sends from each new binding); the server must
// follow every rebinding, validated, on the one connection.
func rebindCase(r *caseRun, rebind func(rig *Rig, k int) error) (outcome, error) {
	size := pick[int64](r, 4e6, 20e6)
	interval := pick(r, time.Second, 5*time.Second)
	rig, cli, srv, err := dialInterop(r)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	defer closeBoth(cli, srv)
	first := srv.RemoteAddr().String()
	st := StartStream(cli, srv, 6, size)
	stop := make(chan struct{})
	var rebinds int
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if st.Got() > size-250_000 {
				return
			}
			if rerr = rebind(rig, rebinds); rerr != nil {
				return
			}
			rebinds++
		}
	})
	res, err := st.Finish(120 * time.Second)
	close(stop)
	wg.Wait()
	out := outcome{bytes: res.Bytes}
	if err == nil {
		err = rerr
	}
	if err != nil {
		return out, err
	}
	ss, ls := srv.Stats(), rig.Listener.Stats()
	out.measured = fmt.Sprintf("%.1f MB at %.2f Mbit/s; %d rebindings, the server followed %d (%d reverted, %d path resets), from %s to %s; %d handshake",
		float64(res.Bytes)/1e6, res.Goodput()/1e6, rebinds, ss.Migrations, ss.MigrationsReverted, ss.PathResets, first, srv.RemoteAddr(), ls.HandshakesStarted)
	switch {
	case rebinds < 2:
		return out, fmt.Errorf("%d rebindings during the transfer: too few to test", rebinds)
	case ss.Migrations != int64(rebinds) || ss.MigrationsReverted != 0:
		return out, fmt.Errorf("%d rebindings, but the server counted %d migrations and %d reverted", rebinds, ss.Migrations, ss.MigrationsReverted)
	case ls.HandshakesStarted != 1:
		return out, fmt.Errorf("%d handshakes: the transfer did not stay on one connection", ls.HandshakesStarted)
	}
	return out, nil
}

func runRebindPort(r *caseRun) (outcome, error) {
	return rebindCase(r, func(rig *Rig, _ int) error {
		n, err := rig.Relay.Rebind()
		if err == nil && n != 1 {
			err = fmt.Errorf("rebind: %d clients", n)
		}
		return err
	})
}

func runRebindAddr(r *caseRun) (outcome, error) {
	return rebindCase(r, func(rig *Rig, k int) error {
		// 127.0.0.2, .3, …: an address the client never had.
		n, err := rig.Relay.RebindTo(netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + k)}))
		if err == nil && n != 1 {
			err = fmt.Errorf("rebind: %d clients", n)
		}
		return err
	})
}

// TicketCache is a client session cache that counts the session tickets
// stored in it.
type TicketCache struct {
	tls.ClientSessionCache
	n atomic.Int32
}

// Put stores cs and counts it.
func (c *TicketCache) Put(key string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.n.Add(1)
	}
	c.ClientSessionCache.Put(key, cs)
}

// Tickets is how many tickets were stored.
func (c *TicketCache) Tickets() int { return int(c.n.Load()) }

// hsMeter adds up, per connection (the client's connection ID, which the
// server's datagrams carry), the bytes of the server's Crypto datagrams
// under the handshake keys: its encrypted extensions, certificate,
// certificate verify and Finished (no more than the last two on a resumed
// handshake).
type hsMeter struct {
	mu    sync.Mutex
	bytes map[uint64]int
}

func (m *hsMeter) observe(d Datagram) {
	typ, epoch, id, ok := header(d.Data)
	if d.Forward || !ok || typ != wire.TypeCrypto || epoch != wire.EpochHandshake {
		return
	}
	m.mu.Lock()
	m.bytes[id] += len(d.Data)
	m.mu.Unlock()
}

func (m *hsMeter) of(c *transport.Conn) int {
	id, _ := c.ConnectionIDs()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes[id]
}

// resumingRig is a rig whose listener counts the certificates it chose
// (GetCertificate: crypto/tls asks only for a full handshake) and whose
// relay meters the server's handshake bytes, and a client config with a
// session cache.
func resumingRig(allow0RTT bool, observe func(Datagram)) (*Rig, transport.Config, *TicketCache, *atomic.Int32, *hsMeter, []byte, error) {
	base := WithTLS(transport.Config{}).TLS
	cert := base.Certificates[0]
	var certCalls atomic.Int32
	srvTLS := base.Clone()
	srvTLS.Certificates = nil
	srvTLS.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		certCalls.Add(1)
		return &cert, nil
	}
	hs := &hsMeter{bytes: map[uint64]int{}}
	rig, err := newInteropRig(RigConfig{
		Server: transport.Config{TLS: srvTLS, Allow0RTT: allow0RTT},
		Relay: emu.RelayConfig{Observe: func(d Datagram) {
			hs.observe(d)
			if observe != nil {
				observe(d)
			}
		}},
	}, nil)
	if err != nil {
		return nil, transport.Config{}, nil, nil, nil, nil, err
	}
	cache := &TicketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	cliTLS := base.Clone()
	cliTLS.ClientSessionCache = cache
	return rig, transport.Config{TLS: cliTLS, Allow0RTT: allow0RTT}, cache, &certCalls, hs, cert.Certificate[0], nil
}

// waitTicket waits for the first connection's session ticket.
func waitTicket(ctx context.Context, cache *TicketCache) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for cache.Tickets() == 0 {
		select {
		case <-ctx.Done():
			return errors.New("no session ticket within 10 s of the first handshake")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func runResumption(r *caseRun) (outcome, error) {
	rig, cliCfg, cache, certCalls, hs, leaf, err := resumingRig(false, nil)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	var out outcome
	var full, resumed int
	for i := range 2 {
		cli, srv, res, err := transfer(r.ctx, rig, cliCfg, uint64(7+i), smallFile, 30*time.Second)
		if err != nil {
			return out, fmt.Errorf("connection %d: %w", i+1, err)
		}
		out.bytes += res.Bytes
		cstate, _ := cli.ConnectionState()
		sstate, _ := srv.ConnectionState()
		n := hs.of(cli)
		closeBoth(cli, srv)
		switch i {
		case 0:
			full = n
			if cstate.DidResume {
				return out, errors.New("the first connection resumed a session it cannot have")
			}
			if err := waitTicket(r.ctx, cache); err != nil {
				return out, err
			}
		case 1:
			resumed = n
			if !cstate.DidResume || !sstate.DidResume {
				return out, fmt.Errorf("the second connection did not resume (client %v, server %v)", cstate.DidResume, sstate.DidResume)
			}
		}
	}
	out.measured = fmt.Sprintf("server handshake bytes on the path: %d in the full handshake, %d resumed (the leaf certificate alone is %d); certificates chosen %d",
		full, resumed, len(leaf), certCalls.Load())
	switch {
	case certCalls.Load() != 1:
		return out, fmt.Errorf("the server chose a certificate %d times in 2 connections: the second did not skip it", certCalls.Load())
	case full <= len(leaf):
		return out, fmt.Errorf("the full handshake's %d server bytes did not hold the %d-byte certificate: the meter is wrong", full, len(leaf))
	case resumed >= len(leaf):
		return out, fmt.Errorf("the resumed handshake's server sent %d bytes, room for the %d-byte certificate", resumed, len(leaf))
	}
	return out, nil
}

func runZeroRTT(r *caseRun) (outcome, error) {
	// The client's 0-RTT datagrams carrying an update, seen on the path.
	var early atomic.Int64
	rig, cliCfg, cache, _, _, _, err := resumingRig(true, func(d Datagram) {
		if typ, epoch, _, ok := header(d.Data); ok && d.Forward && epoch == wire.EpochEarly && typ == wire.TypeUpdate {
			early.Add(1)
		}
	})
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	cli, srv, res, err := transfer(r.ctx, rig, cliCfg, 9, smallFile, 30*time.Second)
	if err != nil {
		return outcome{}, fmt.Errorf("connection 1: %w", err)
	}
	out := outcome{bytes: res.Bytes}
	closeBoth(cli, srv)
	if err := waitTicket(r.ctx, cache); err != nil {
		return out, err
	}
	if n := early.Load(); n != 0 {
		return out, fmt.Errorf("%d 0-RTT datagrams on the first connection, which has no ticket", n)
	}

	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	cli, err = transport.DialEarly(ctx, rig.Relay.Addr().String(), cliCfg)
	if err != nil {
		return out, fmt.Errorf("connection 2: DialEarly: %w", err)
	}
	defer cli.Close()
	update := make([]byte, 1000)
	fill(mrand.New(mrand.NewPCG(10, 10)), update)
	if err := cli.SendUpdate(update); err != nil {
		return out, fmt.Errorf("connection 2: SendUpdate: %w", err)
	}
	if srv, err = rig.Accept(ctx, cli); err != nil {
		return out, fmt.Errorf("connection 2: %w", err)
	}
	defer srv.Close()
	u, err := srv.ReadUpdate(ctx)
	if err != nil {
		return out, fmt.Errorf("connection 2: ReadUpdate: %w", err)
	}
	if sha256.Sum256(u.Payload) != sha256.Sum256(update) {
		return out, errors.New("connection 2: the update arrived altered")
	}
	out.bytes += int64(len(u.Payload))
	res, err = StartStream(cli, srv, 11, smallFile).Finish(30 * time.Second)
	if err != nil {
		return out, fmt.Errorf("connection 2: %w", err)
	}
	out.bytes += res.Bytes
	// Nothing more: a second delivery would be waiting by now.
	wctx, wcancel := context.WithTimeout(r.ctx, 200*time.Millisecond)
	_, again := srv.ReadUpdate(wctx)
	wcancel()
	cs, ss := cli.Stats(), srv.Stats()
	cstate, _ := cli.ConnectionState()
	out.measured = fmt.Sprintf("update in %d 0-RTT datagrams on the path (sent under the early keys %d times: the Retry drops the first), delivered %d time(s), early %v; resumed %v",
		early.Load(), cs.EarlyUpdatesSent, ss.UpdatesReceived, u.Early, cstate.DidResume)
	switch {
	case !u.Early || early.Load() == 0:
		return out, fmt.Errorf("the update did not come in 0-RTT (Early %v, %d 0-RTT datagrams seen)", u.Early, early.Load())
	case ss.UpdatesReceived != 1 || ss.EarlyUpdatesReceived != 1 || again == nil:
		return out, fmt.Errorf("the update was delivered %d times (%d early)", ss.UpdatesReceived, ss.EarlyUpdatesReceived)
	case cs.EarlyRejected:
		return out, errors.New("the server rejected the early data")
	}
	return out, nil
}

func runKeyUpdate(r *caseRun) (outcome, error) {
	size, every := pick[int64](r, 3e6, 10e6), pick[int64](r, 500, 1000)
	// The key phases seen on the path, each way (wire.EpochApp0, App1).
	var mu sync.Mutex
	phases := [2]map[uint8]int{{}, {}}
	rig, err := newInteropRig(RigConfig{Relay: emu.RelayConfig{Observe: func(d Datagram) {
		_, epoch, _, ok := header(d.Data)
		if ok && (epoch == wire.EpochApp0 || epoch == wire.EpochApp1) {
			i := 0
			if !d.Forward {
				i = 1
			}
			mu.Lock()
			phases[i][epoch]++
			mu.Unlock()
		}
	}}}, nil)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	cli, srv, res, err := transfer(r.ctx, rig, transport.Config{KeyUpdateInterval: every}, 12, size, 120*time.Second)
	if err != nil {
		return outcome{}, err
	}
	defer closeBoth(cli, srv)
	out := outcome{bytes: res.Bytes}
	cs, ss := cli.Stats(), srv.Stats()
	mu.Lock()
	defer mu.Unlock()
	out.measured = fmt.Sprintf("%.1f MB; the client updated its keys %d times, the server followed %d; datagrams per phase on the path: forward %d/%d, reverse %d/%d; unauthenticated %d",
		float64(res.Bytes)/1e6, cs.KeyUpdates, ss.KeyUpdates, phases[0][wire.EpochApp0], phases[0][wire.EpochApp1],
		phases[1][wire.EpochApp0], phases[1][wire.EpochApp1], cs.Unauthenticated+ss.Unauthenticated)
	switch {
	case cs.KeyUpdates < 2:
		return out, fmt.Errorf("%d key updates during the transfer", cs.KeyUpdates)
	case ss.KeyUpdates < cs.KeyUpdates-1:
		return out, fmt.Errorf("the client updated its keys %d times, the server followed %d", cs.KeyUpdates, ss.KeyUpdates)
	case phases[0][wire.EpochApp1] == 0 || phases[1][wire.EpochApp1] == 0:
		return out, errors.New("no datagram under the second key phase on the path in both directions")
	case cs.Unauthenticated+ss.Unauthenticated != 0:
		return out, fmt.Errorf("%d datagrams could not be opened: lost to the key update", cs.Unauthenticated+ss.Unauthenticated)
	}
	return out, nil
}

func runGoodput(r *caseRun) (outcome, error) {
	size := pick[int64](r, 3e6, 10e6)
	rig, err := newInteropRig(RigConfig{}, nil)
	if err != nil {
		return outcome{}, err
	}
	defer rig.Close()
	cli, srv, res, err := transfer(r.ctx, rig, transport.Config{}, 13, size, 120*time.Second)
	if err != nil {
		return outcome{}, err
	}
	defer closeBoth(cli, srv)
	out := outcome{bytes: res.Bytes}
	share := res.Goodput() / interopRate
	out.measured = fmt.Sprintf("%.1f MB in %v: %.2f Mbit/s, %.0f %% of the %.0f Mbit/s link (payload at most ~94 %% of it: 82 bytes of headers per 1452-byte datagram)",
		float64(res.Bytes)/1e6, res.Took.Round(time.Millisecond), res.Goodput()/1e6, 100*share, interopRate/1e6)
	if r.opts.Strict && share < 0.7 {
		return out, fmt.Errorf("goodput %.0f %% of the link rate, below 70 %%", 100*share)
	}
	return out, nil
}

// iperf3Received is what the crosstraffic case reads of iperf3's JSON
// report: the receiver's bytes and rate, and iperf3's own error.
type iperf3Received struct {
	Error string `json:"error"`
	End   struct {
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

func runCrossTraffic(r *caseRun) (outcome, error) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		return outcome{}, fmt.Errorf("%w: no iperf3 (%v)", ErrSkip, err)
	}
	size := pick[int64](r, 2e6, 10e6)
	secs := pick(r, 10, 40)
	tn, err := emu.NewTUN(emu.TUNConfig{Forward: interopPath(), Reverse: interopPath(), Seed: 25})
	if errors.Is(err, emu.ErrNoTUN) {
		return outcome{}, fmt.Errorf("%w: %w", ErrSkip, err)
	}
	if err != nil {
		return outcome{}, err
	}
	defer tn.Close()
	var l *transport.Listener
	if err := tn.InServer(func() (err error) {
		l, err = transport.Listen(netip.AddrPortFrom(tn.ServerAddr(), 0).String(), WithTLS(transport.Config{}))
		return err
	}); err != nil {
		return outcome{}, fmt.Errorf("listen in the server namespace: %w", err)
	}
	defer l.Close()

	// iperf3: one test, kernel CUBIC from the client namespace to the
	// server's, for secs seconds.
	const port = 5201
	start := func(inNS func(func() error) error, args ...string) (*exec.Cmd, *strings.Builder, error) {
		cmd := exec.Command("iperf3", args...)
		var outb strings.Builder
		cmd.Stdout, cmd.Stderr = &outb, &outb
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd, &outb, inNS(cmd.Start)
	}
	server, _, err := start(tn.InServer, "-s", "-1", "-B", tn.ServerAddr().String(), "-p", strconv.Itoa(port))
	if err != nil {
		return outcome{}, fmt.Errorf("iperf3 server: %w", err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); !emu.TCPListening(server.Process.Pid, port); {
		if time.Now().After(deadline) {
			return outcome{}, errors.New("iperf3 server: not listening after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	client, report, err := start(tn.InClient, "-c", tn.ServerAddr().String(), "-p", strconv.Itoa(port), "-J", "-t", strconv.Itoa(secs), "-C", "cubic")
	if err != nil {
		return outcome{}, fmt.Errorf("iperf3 client: %w", err)
	}
	iperfDone := make(chan error, 1)
	var iperfEnd atomic.Int64 // Unix ns
	go func() {
		err := client.Wait()
		iperfEnd.Store(time.Now().UnixNano())
		iperfDone <- err
	}()
	defer func() { _ = client.Process.Kill() }()
	time.Sleep(time.Second) // CUBIC has the link first

	var cli *transport.Conn
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	if err := tn.InClient(func() (err error) {
		cli, err = transport.Dial(ctx, netip.AddrPortFrom(tn.ServerAddr(), l.Addr().(*net.UDPAddr).AddrPort().Port()).String(), WithTLS(transport.Config{}))
		return err
	}); err != nil {
		return outcome{}, fmt.Errorf("dial beside CUBIC: %w", err)
	}
	defer cli.Close()
	srv, err := l.Accept(ctx)
	if err != nil {
		return outcome{}, fmt.Errorf("accept beside CUBIC: %w", err)
	}
	defer srv.Close()
	st := StartStream(cli, srv, 14, size)
	// The goodput beside CUBIC is over the time both ran: read it from
	// the stream's samples before Finish stops them.
	for st.Got() < size && iperfEnd.Load() == 0 {
		time.Sleep(SampleInterval)
	}
	besideTo := time.Now()
	if ns := iperfEnd.Load(); ns != 0 {
		besideTo = time.Unix(0, ns)
	}
	beside := st.Goodput(st.Start(), besideTo)
	res, err := st.Finish(time.Duration(secs+60) * time.Second)
	out := outcome{bytes: res.Bytes}
	if err != nil {
		return out, err
	}
	select {
	case err = <-iperfDone:
	case <-time.After(time.Duration(secs+10) * time.Second):
		err = errors.New("iperf3 did not end")
	}
	var rep iperf3Received
	if jerr := json.Unmarshal([]byte(report.String()[max(strings.IndexByte(report.String(), '{'), 0):]), &rep); jerr != nil || rep.Error != "" || err != nil {
		return out, fmt.Errorf("iperf3: %v %v %s", err, jerr, rep.Error)
	}
	tcp := rep.End.SumReceived.BitsPerSecond
	share := beside / interopRate
	out.measured = fmt.Sprintf("fresh %.1f MB, %.2f Mbit/s (%.0f %% of the link) over the %v both ran; CUBIC %.2f Mbit/s over its %d s",
		float64(res.Bytes)/1e6, beside/1e6, 100*share, besideTo.Sub(st.Start()).Round(100*time.Millisecond), tcp/1e6, secs)
	if r.opts.Strict && share < 0.1 {
		return out, fmt.Errorf("fresh got %.0f %% of the link beside CUBIC, below 10 %%: starved", 100*share)
	}
	return out, nil
}
