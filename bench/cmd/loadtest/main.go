// Command loadtest measures what one monitor pays per source: many ACP
// status sources (transport client Conns, each handing samples to the ACP
// regulator at a fixed rate) against one transport.Listener, on loopback.
//
//	go run ./bench/cmd/loadtest [-sources 10000] [-rate 10] [-duration 30s]
//	                            [-read] [-insecure] [-dial-parallel 200] [-json FILE]
//	                            [-cpuprofile FILE] [-memprofile FILE]
//
// It runs as two processes: this one is the monitor, and it starts itself
// again as the load generator holding every source. The monitor's memory
// then is the monitor's alone, which one process holding both ends could
// not say. A separate command rather than a freshbench subcommand: it has
// nothing to do with scenarios or emulated links, and its second process
// must be a plain copy of itself.
//
// # What is measured
//
// Connections are TLS 1.3 (a throwaway CA made for the run; -insecure: the
// plaintext mode) with the Listener's defaults (address validation by
// Retry, limits). Setup: from starting the generator to the last source
// accepted (the generator dials -dial-parallel at a time, each a Retry
// round trip and a handshake).
//
// Memory per source: the monitor's Go heap in use plus goroutine stacks
// (runtime.MemStats HeapInuse + StackInuse, after two collections) once
// every source is connected and has sent for -duration, minus the same
// just after Listen, divided by the number of sources. Fragmentation counts
// (HeapInuse, not live bytes); the live-heap figure (HeapAlloc) is shown
// beside it. With -read the monitor runs a goroutine per source reading its
// updates (ReadUpdate), as examples/monitor does; without it the monitor
// reads nothing and the transport's own per-source cost is what is left:
// the age of every source is measured by the transport on arrival either
// way (Stats().Age).
//
// Age: each source's time-average age of information at the monitor
// (Stats().Age.Mean, since its first update) and its 95th percentile
// (Age.P95); the report gives their mean, median, 95th percentile and
// maximum across sources, and how many sources had at least one update
// delivered (it must be all of them).
//
// CPU: the monitor's user+system seconds (getrusage) over the -duration
// window, per second of it; the generator's over its whole life.
//
// The file-descriptor limit is raised to its hard limit in both processes:
// every source has its own socket. Exit status 1 when a source got no
// update through, the generator failed, or the run could not be set up.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/loadgen"
	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/transport"
)

// childEnv marks the generator process: it holds the flags the monitor
// passes on. caEnv holds the CA certificate (PEM) the generator verifies
// the monitor with.
const (
	childEnv = "FRESH_LOADTEST_SOURCES"
	caEnv    = "FRESH_LOADTEST_CA"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if args, ok := os.LookupEnv(childEnv); ok {
		err = runSources(ctx, strings.Fields(args), os.Stdin, os.Stdout)
	} else {
		var rep *Report
		rep, err = runMonitor(ctx, os.Args[1:], os.Stdout)
		if err == nil && rep.Delivered < rep.Sources {
			err = fmt.Errorf("%d of %d sources had no update delivered", rep.Sources-rep.Delivered, rep.Sources)
		}
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// options are the monitor's flags; the generator gets the ones it needs.
type options struct {
	sources  int
	rate     float64
	duration time.Duration
	read     bool
	insecure bool
	parallel int
	json     string
	memprof  string
	cpuprof  string
	// exe and env start the generator: this program, or a test binary.
	exe string
	env []string
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	o := &options{}
	fs.IntVar(&o.sources, "sources", 10000, "number of ACP sources")
	fs.Float64Var(&o.rate, "rate", 10, "samples per second each source hands to the regulator")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long every source sends, once all are connected")
	fs.BoolVar(&o.read, "read", false, "read every update in the monitor (a goroutine per source)")
	fs.IntVar(&o.parallel, "dial-parallel", 200, "dials in progress at once")
	fs.BoolVar(&o.insecure, "insecure", false, "plaintext (Config.Insecure) instead of TLS on both ends")
	fs.StringVar(&o.json, "json", "", "also write the report as JSON to `FILE`")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write the monitor's CPU profile over the -duration window to `FILE`")
	fs.StringVar(&o.memprof, "memprofile", "", "write the monitor's heap profile, taken when memory is measured, to `FILE`")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.sources < 1 || o.rate <= 0 || o.duration <= 0 || o.parallel < 1:
		return nil, errors.New("-sources, -rate, -duration and -dial-parallel must be positive")
	}
	return o, nil
}

// Report is what a run measured.
type Report struct {
	Sources      int     `json:"sources"`
	Rate         float64 `json:"rate_per_source"`
	DurationS    float64 `json:"duration_s"`
	Read         bool    `json:"read_updates"`
	TLS          bool    `json:"tls"`
	SetupS       float64 `json:"setup_s"`
	BytesPerSrc  float64 `json:"bytes_per_source"`      // (HeapInuse+StackInuse) delta / sources
	LivePerSrc   float64 `json:"live_bytes_per_source"` // HeapAlloc delta / sources
	StackPerSrc  float64 `json:"stack_bytes_per_source"`
	Goroutines   int     `json:"monitor_goroutines"`
	CPUPerSecond float64 `json:"monitor_cpu_s_per_s"`
	GenCPUS      float64 `json:"generator_cpu_s"`
	Delivered    int     `json:"sources_with_updates"`
	UpdatesPerS  float64 `json:"updates_per_s_per_source"` // received by the monitor during the window
	Stale        int64   `json:"updates_stale"`
	// Across sources: each source's time-average age and its own p95.
	AgeMean AgeSpread `json:"age_mean"`
	AgeP95  AgeSpread `json:"age_p95"`
	// Generator is what the sources' regulators reported at the end.
	Generator string `json:"generator"`
	// LoadAvg is the machine's 1-minute load average at the end (Linux):
	// above the number of cores, the run shared the CPU with others.
	LoadAvg string `json:"loadavg_1m"`
}

// AgeSpread is one age figure across sources, milliseconds.
type AgeSpread struct {
	Mean, Median, P95, Max float64
}

func spread(v []time.Duration) AgeSpread {
	q := loadgen.QuantilesMs(v, 0.5, 0.95, 1)
	if len(v) == 0 {
		return AgeSpread{}
	}
	var sum time.Duration
	for _, d := range v {
		sum += d
	}
	return AgeSpread{Mean: float64(sum/time.Duration(len(v))) / 1e6, Median: q[0], P95: q[1], Max: q[2]}
}

// memory is the monitor's heap and stacks after collecting twice.
func memory() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// runMonitor runs the monitor, starts the generator and reports.
func runMonitor(ctx context.Context, args []string, stdout io.Writer) (*Report, error) {
	o, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	if o.exe == "" {
		if o.exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return monitor(ctx, o, stdout)
}

func monitor(ctx context.Context, o *options, stdout io.Writer) (*Report, error) {
	if err := loadgen.RaiseFileLimit(); err != nil {
		return nil, err
	}
	cfg := transport.Config{IdleTimeout: 30 * time.Second, Insecure: o.insecure}
	var caPEM []byte
	if !o.insecure {
		// A throwaway CA: the monitor's certificate, and the root the
		// generator verifies it with (passed in its environment).
		ca, cert, err := loadgen.LocalCA("loadtest CA")
		if err != nil {
			return nil, err
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		caPEM = ca.CertPEM()
	}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	base := memory()
	baseG := runtime.NumGoroutine()

	var (
		mu      sync.Mutex
		conns   []*transport.Conn
		all     = make(chan struct{})
		readers sync.WaitGroup
	)
	acceptCtx, stopAccept := context.WithCancel(ctx)
	defer stopAccept()
	go func() {
		for {
			c, err := l.Accept(acceptCtx)
			if err != nil {
				return
			}
			if o.read {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for {
						if _, err := c.ReadUpdate(acceptCtx); err != nil {
							return
						}
					}
				}()
			}
			mu.Lock()
			conns = append(conns, c)
			if len(conns) == o.sources {
				close(all)
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	gen := exec.Command(o.exe)
	gen.Env = append(append(os.Environ(), o.env...), fmt.Sprintf("%s=-addr %s -sources %d -rate %g -dial-parallel %d -insecure=%v",
		childEnv, l.Addr(), o.sources, o.rate, o.parallel, o.insecure), caEnv+"="+string(caPEM))
	gen.Stderr = os.Stderr
	stop, err := gen.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := gen.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := gen.Start(); err != nil {
		return nil, err
	}
	genDone := make(chan error, 1)
	var genSummary string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "sources:") {
				genSummary = line
			}
		}
		genDone <- gen.Wait() // after the last line: genSummary is set
	}()
	defer func() {
		stop.Close()
		<-genDone
	}()
	fmt.Fprintf(stdout, "loadtest: %d sources at %g samples/s, monitor %s\n", o.sources, o.rate, l.Addr())
	select {
	case <-all:
	case err := <-genDone:
		genDone <- err
		return nil, fmt.Errorf("generator ended before every source connected: %v", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	setup := time.Since(start)
	fmt.Fprintf(stdout, "loadtest: %d sources connected in %.1f s; running %v\n", o.sources, setup.Seconds(), o.duration)

	mu.Lock()
	cs := slices.Clone(conns)
	mu.Unlock()
	received := func() (n int64) {
		for _, c := range cs {
			n += c.Stats().UpdatesReceived
		}
		return n
	}
	recv0 := received()
	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile() // stopped earlier, at the window's end; a second stop is a no-op
	}
	cpu0, _ := rusage.Process()
	t0 := time.Now()
	select {
	case <-time.After(o.duration):
	case err := <-genDone:
		genDone <- err
		return nil, fmt.Errorf("generator ended early: %v", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	cpu1, _ := rusage.Process()
	window := time.Since(t0)
	pprof.StopCPUProfile()
	recv1 := received()
	m := memory()
	if o.memprof != "" {
		if err := writeHeapProfile(o.memprof); err != nil {
			return nil, err
		}
	}

	rep := &Report{
		Sources: o.sources, Rate: o.rate, DurationS: window.Seconds(), Read: o.read, TLS: !o.insecure,
		SetupS:       setup.Seconds(),
		BytesPerSrc:  (float64(m.HeapInuse+m.StackInuse) - float64(base.HeapInuse+base.StackInuse)) / float64(o.sources),
		LivePerSrc:   (float64(m.HeapAlloc) - float64(base.HeapAlloc)) / float64(o.sources),
		StackPerSrc:  (float64(m.StackInuse) - float64(base.StackInuse)) / float64(o.sources),
		Goroutines:   runtime.NumGoroutine() - baseG,
		CPUPerSecond: (cpu1 - cpu0).Seconds() / window.Seconds(),
		UpdatesPerS:  float64(recv1-recv0) / window.Seconds() / float64(o.sources),
	}
	var means, p95s []time.Duration
	for _, c := range cs {
		st := c.Stats()
		if st.UpdatesReceived > 0 {
			rep.Delivered++
			means = append(means, st.Age.Mean)
			p95s = append(p95s, st.Age.P95)
		}
		rep.Stale += st.UpdatesStale
	}
	rep.AgeMean, rep.AgeP95 = spread(means), spread(p95s)

	stop.Close()
	if err := <-genDone; err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	genDone <- nil
	if cpu, err := rusage.Children(); err == nil {
		rep.GenCPUS = cpu.Seconds()
	}
	rep.Generator = strings.TrimPrefix(genSummary, "sources: ")
	rep.LoadAvg = loadgen.LoadAverage(1)
	stopAccept()
	readers.Wait()
	printReport(stdout, rep)
	if o.json != "" {
		if err := loadgen.WriteJSON(o.json, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func printReport(w io.Writer, r *Report) {
	fmt.Fprintf(w, "sources             %d (%d with updates delivered), %g samples/s each, read=%v, tls=%v\n", r.Sources, r.Delivered, r.Rate, r.Read, r.TLS)
	fmt.Fprintf(w, "setup               %.2f s\n", r.SetupS)
	fmt.Fprintf(w, "monitor memory      %.0f B/source heap+stacks in use (%.0f live heap, %.0f stacks); %d goroutines over idle\n",
		r.BytesPerSrc, r.LivePerSrc, r.StackPerSrc, r.Goroutines)
	fmt.Fprintf(w, "monitor CPU         %.3f s/s (user+sys over %.0f s)\n", r.CPUPerSecond, r.DurationS)
	fmt.Fprintf(w, "generator CPU       %.1f s over its life\n", r.GenCPUS)
	fmt.Fprintf(w, "updates             %.2f /s per source received, %d stale\n", r.UpdatesPerS, r.Stale)
	fmt.Fprintf(w, "sources' regulators %s\n", r.Generator)
	fmt.Fprintf(w, "load average        %s\n", r.LoadAvg)
	fmt.Fprintf(w, "age mean (ms)       mean %.1f  median %.1f  p95 %.1f  max %.1f  (each source's time-average, across sources)\n",
		r.AgeMean.Mean, r.AgeMean.Median, r.AgeMean.P95, r.AgeMean.Max)
	fmt.Fprintf(w, "age p95 (ms)        mean %.1f  median %.1f  p95 %.1f  max %.1f  (each source's own p95, across sources)\n",
		r.AgeP95.Mean, r.AgeP95.Median, r.AgeP95.P95, r.AgeP95.Max)
}
