package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/loadgen"
	"github.com/fresh-udp/fresh/transport"
)

// runSources is the generator: it dials every source, reports "ready" on
// stdout, and has each hand a sample to its regulator -rate times a second
// (shards of sources at random phases, so they do not tick together) until
// stdin closes. Then it closes every source.
func runSources(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadtest-sources", flag.ContinueOnError)
	addr := fs.String("addr", "", "monitor address")
	n := fs.Int("sources", 0, "sources")
	rate := fs.Float64("rate", 10, "samples per second per source")
	parallel := fs.Int("dial-parallel", 200, "dials at once")
	insecure := fs.Bool("insecure", false, "plaintext")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loadgen.RaiseFileLimit(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the monitor closes our stdin to stop us
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	// The regulator may send at most the sensing rate (MaxUpdateRate);
	// ACP picks the rate below it that keeps the age lowest.
	cfg := transport.Config{MaxUpdateRate: *rate, IdleTimeout: 30 * time.Second, Linger: -1, Insecure: *insecure}
	if !*insecure {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(os.Getenv(caEnv))) {
			return errors.New("no CA certificate in " + caEnv)
		}
		cfg.TLS = &tls.Config{RootCAs: roots, ServerName: "localhost"}
	}
	conns := make([]*transport.Conn, *n)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	sem := make(chan struct{}, *parallel)
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := transport.Dial(ctx, *addr, cfg)
			if err != nil {
				errMu.Lock()
				first = errors.Join(first, fmt.Errorf("source %d: %w", i, err))
				errMu.Unlock()
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if first != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return first
	}
	fmt.Fprintln(stdout, "ready")

	// Sources tick in shards, each at its own random phase (loadgen.Tick).
	loadgen.Tick(ctx, len(conns), *rate, func(lo, hi int, seq uint64) {
		var sample [32]byte
		for i, c := range conns[lo:hi] {
			binary.BigEndian.PutUint64(sample[:], uint64(lo+i))
			binary.BigEndian.PutUint64(sample[8:], seq)
			_ = c.SendUpdate(sample[:]) // an error: the source is closed; the monitor counts it
		}
	})
	// What the regulators made of the path, for the monitor's report: ACP
	// lowers its rate when backlog and age grow together, which a CPU
	// shared by more than it can serve looks like.
	var regRate, srtt float64
	var sent, superseded int64
	for _, c := range conns {
		st := c.Stats()
		regRate += st.UpdateRate
		srtt += st.SRTT.Seconds() * 1e3
		sent += st.UpdatesSent
		superseded += st.UpdatesSuperseded
	}
	fmt.Fprintf(stdout, "sources: regulator rate %.2f /s, SRTT %.1f ms (means over sources); %d updates sent, %d superseded\n",
		regRate/float64(len(conns)), srtt/float64(len(conns)), sent, superseded)
	var closers sync.WaitGroup
	for _, c := range conns {
		closers.Add(1)
		go func() { defer closers.Done(); c.Close() }()
	}
	closers.Wait()
	conns = nil
	return nil
}
