// Command fleetload is a load test of the fleet monitor, cmd/fresh-monitor,
// as it runs: N simulated agents, each with a client certificate of its
// own (mutual TLS), send ACP-regulated status updates to M fresh-monitor
// processes storing into one NATS JetStream, and a KV watcher checks what
// arrives.
//
//	go run ./bench/cmd/fleetload [-agents 1000] [-monitors 1,2] [-rate 1] [-duration 30s]
//	                             [-per-socket 250] [-dial-parallel 64] [-settle 30s]
//	                             [-monitor-bin FILE | -build-timeout 10m] [-json FILE] [-heap-profiles DIR]
//
// For each entry of -monitors (a list: "2,1" runs two monitors, then one,
// with the same agents and rate, and reports them side by side) it
//
//  1. builds cmd/fresh-monitor (go build -o, into a temporary directory,
//     within -build-timeout, 10 min; -monitor-bin takes a built one) and
//     starts M of them: the first
//     embeds the NATS server (-data in the temporary directory,
//     -nats-listen on a free loopback port), the others connect to it
//     with -nats; each listens on a UDP port of its own (their addresses
//     are a list, agents spread round-robin over it) and serves -metrics
//     and -pprof on loopback;
//  2. makes a CA (transport/devcert, the shape examples/certgen issues),
//     the monitors' certificate and one client certificate per agent,
//     CommonName agent-00001…, which the monitors require (-ca); or,
//     with -certs DIR, reads those examples/certgen wrote (certgen -dir
//     DIR -agents N: the agents in DIR/agents/<name>/);
//  3. dials every agent (transport.Transport.Dial, -per-socket agents
//     sharing one socket: one Transport per socket, so 10,000 agents are
//     40 sockets and 80 goroutines here, not 10,000 of each), then has
//     each hand its regulator a sample -rate times a second for
//     -duration (Conn.SendUpdate: ACP decides which go out). A sample's
//     payload is the agent's index, a sequence number and its generation
//     time;
//  4. watches every key of the KV bucket from this process (a
//     jetstream KeyWatcher, as a dashboard would) and records, for each
//     update seen, the wall time seen less the generation time in it:
//     the end-to-end age, agent to store to watcher (one host, one
//     clock);
//  5. after -duration, stops sending, waits up to -settle for the
//     watcher to see every agent's last update, then reads every
//     device's key (KeyValue.Get) and checks it holds the last update
//     its agent sent: its sequence number and generation time.
//
// # What is reported
//
// Per configuration: the setup time (every agent dialled), the age
// (p50/p95/p99/max over every update the watcher saw from the first
// sample to the end of -settle), the check (devices missing from the
// bucket, devices whose record is not their last update, and the largest
// difference between a record's Generated, the transport's stamp
// corrected by the monitor's clock-offset estimate, and the agent's own
// stamp), and per monitor: its devices (fresh_connections), its CPU over
// the -duration window (utime+stime from /proc/<pid>/stat, every thread;
// the first monitor's includes the embedded NATS server's, which is
// every monitor's store) as cores busy and per 1,000 devices, and its Go
// heap in use (go_memstats_heap_inuse_bytes, scraped right after a
// collection forced through /debug/pprof/heap?gc=1) at the end of the
// window, less the same before the agents dialled, per device. The load
// average before and after says whether the CPU was shared.
//
// The file-descriptor limit is raised to its hard limit. The run fails
// (exit 1) if an agent cannot connect, a monitor fails, or any device is
// missing from the bucket at the end; a stale device is reported, not
// failed (an update the store had not confirmed when -settle ran out).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/loadgen"
	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/bench/monitorproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reps, err := run(ctx, os.Args[1:], os.Stdout)
	if err == nil {
		for _, r := range reps {
			if r.Check.Missing > 0 {
				err = errors.Join(err, fmt.Errorf("%d agents × %d monitors: %d of %d devices missing from the bucket",
					r.Agents, r.Monitors, r.Check.Missing, r.Check.Devices))
			}
		}
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		stop()
		os.Exit(1)
	}
}

type options struct {
	agents    int
	monitors  []int
	rate      float64
	duration  time.Duration
	perSocket int
	parallel  int
	settle    time.Duration
	bin       string
	buildTime time.Duration
	json      string
	heapDir   string
	certs     string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("fleetload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var monitors string
	fs.IntVar(&o.agents, "agents", 1000, "simulated agents (devices), each with its own certificate and connection")
	fs.StringVar(&monitors, "monitors", "1", "fresh-monitor processes, a comma-separated `list`: one run per entry, side by side (\"2,1\")")
	fs.Float64Var(&o.rate, "rate", 1, "samples per second each agent hands its regulator (its sensing rate, Config.MaxUpdateRate)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long the agents send once all are connected: the measured window")
	fs.IntVar(&o.perSocket, "per-socket", 250, "agents sharing one client socket (transport.Transport)")
	fs.IntVar(&o.parallel, "dial-parallel", 64, "dials in progress at once")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "how long to wait after the window for every agent's last update to reach the watcher")
	fs.StringVar(&o.bin, "monitor-bin", "", "a built fresh-monitor `binary` (default: go build cmd/fresh-monitor into a temporary directory)")
	fs.DurationVar(&o.buildTime, "build-timeout", 10*time.Minute, "how long building cmd/fresh-monitor may take (without -monitor-bin; a first build compiles the NATS server)")
	fs.StringVar(&o.json, "json", "", "also write the reports as JSON to `FILE`")
	fs.StringVar(&o.certs, "certs", "", "use the CA, monitor and agent certificates examples/certgen wrote into `DIR` (certgen -dir DIR -agents N) instead of making them")
	fs.StringVar(&o.heapDir, "heap-profiles", "", "write each monitor's heap profile at the end of the window into `DIR` (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for m := range strings.SplitSeq(monitors, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(m))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-monitors %q: a list of positive numbers of monitor processes, as 2,1", monitors)
		}
		o.monitors = append(o.monitors, n)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.agents < 1:
		return nil, fmt.Errorf("-agents %d: at least 1", o.agents)
	case o.agents > 99_999:
		return nil, fmt.Errorf("-agents %d: at most 99,999 (five-digit names)", o.agents)
	case o.rate <= 0:
		return nil, fmt.Errorf("-rate %g: must be positive", o.rate)
	case o.duration <= 0:
		return nil, fmt.Errorf("-duration %v: must be positive", o.duration)
	case o.perSocket < 1:
		return nil, fmt.Errorf("-per-socket %d: at least 1", o.perSocket)
	case o.parallel < 1:
		return nil, fmt.Errorf("-dial-parallel %d: at least 1", o.parallel)
	case o.settle < 0:
		return nil, fmt.Errorf("-settle %v: must not be negative", o.settle)
	case o.buildTime <= 0:
		return nil, fmt.Errorf("-build-timeout %v: must be positive", o.buildTime)
	}
	return o, nil
}

// Report is one configuration's run.
type Report struct {
	Agents    int     `json:"agents"`
	Monitors  int     `json:"monitors"`
	Rate      float64 `json:"rate_per_agent"`
	DurationS float64 `json:"duration_s"`
	SetupS    float64 `json:"setup_s"`
	SettleS   float64 `json:"settle_s"` // until the watcher saw every agent's last update (or -settle ran out)
	// Age is the end-to-end age of every update the watcher saw, ms.
	Age Quantiles `json:"age_ms"`
	// Age in three parts: generation to the monitor's ReadUpdate (the
	// record's Arrived); from there to JetStream storing it (the
	// message's timestamp: the monitor's write queue and the publish);
	// from there to the watcher (delivery by the KV watcher's consumer).
	AgeMonitor Quantiles `json:"age_to_monitor_ms"`
	AgeStore   Quantiles `json:"age_monitor_to_store_ms"`
	AgeWatcher Quantiles `json:"age_store_to_watcher_ms"`
	Seen       int       `json:"updates_seen"`
	SeenPerS   float64   `json:"updates_seen_per_s"` // over the window and the settle time
	BadValues  int       `json:"bad_values"`
	Check      Check     `json:"check"`
	// Totals over the monitors.
	CPUCores      float64         `json:"monitors_cpu_cores"` // CPU s per s of the window
	CPUPer1000    float64         `json:"monitors_cpu_cores_per_1000_devices"`
	HeapPerDevice float64         `json:"monitors_heap_bytes_per_device"` // Σ (end − before) / agents
	Stored        float64         `json:"updates_stored"`                 // fresh_updates_stored_total, Σ
	Superseded    float64         `json:"updates_superseded"`             // fresh_updates_superseded_total, Σ
	StoreErrors   float64         `json:"store_errors"`                   // fresh_store_errors_total{store="kv"}, Σ
	PerMonitor    []MonitorReport `json:"per_monitor"`
	GeneratorCPU  float64         `json:"loadtest_cpu_cores"` // this process (agents and watcher) over the window
	LoadBefore    string          `json:"loadavg_before"`
	LoadAfter     string          `json:"loadavg_after"`
}

// MonitorReport is one monitor process over the window.
type MonitorReport struct {
	Index         int     `json:"index"`
	EmbedsNATS    bool    `json:"embeds_nats"`
	Devices       float64 `json:"devices"` // fresh_connections at the end of the window
	CPUCores      float64 `json:"cpu_cores"`
	CPUPer1000    float64 `json:"cpu_cores_per_1000_devices"`
	HeapBefore    float64 `json:"heap_inuse_before_bytes"`
	HeapEnd       float64 `json:"heap_inuse_end_bytes"`
	HeapPerDevice float64 `json:"heap_bytes_per_device"` // (end − before) / devices
	Goroutines    float64 `json:"goroutines"`
	Stored        float64 `json:"updates_stored"`
}

// Quantiles of a sample, ms.
type Quantiles struct {
	P50, P95, P99, Max float64
}

func quantiles(v []time.Duration) Quantiles {
	q := loadgen.QuantilesMs(v, 0.50, 0.95, 0.99, 1)
	return Quantiles{P50: q[0], P95: q[1], P99: q[2], Max: q[3]}
}

func run(ctx context.Context, args []string, stdout io.Writer) ([]*Report, error) {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return nil, err
	}
	if err := loadgen.RaiseFileLimit(); err != nil {
		return nil, fmt.Errorf("raising the open-file limit: %w", err)
	}
	tmp, err := os.MkdirTemp("", "fleetload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	exe := o.bin
	if exe == "" {
		fmt.Fprintf(stdout, "fleetload: building cmd/fresh-monitor\n")
		start := time.Now()
		if exe, err = monitorproc.Build(ctx, tmp, o.buildTime); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "fleetload: built in %.1f s\n", time.Since(start).Seconds())
	}
	t0 := time.Now()
	var p *pki
	if o.certs != "" {
		p, err = loadPKI(o.certs, o.agents)
	} else {
		p, err = newPKI(tmp, o.agents)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "fleetload: %d agent certificates in %.1f s\n", o.agents, time.Since(t0).Seconds())
	var reps []*Report
	for i, m := range o.monitors {
		dir, err := os.MkdirTemp(tmp, fmt.Sprintf("run%d-", i))
		if err != nil {
			return reps, err
		}
		rep, err := runOne(ctx, o, exe, dir, p, m, stdout)
		if err != nil {
			return reps, fmt.Errorf("%d agents × %d monitors: %w", o.agents, m, err)
		}
		reps = append(reps, rep)
		printReport(stdout, rep)
	}
	printTable(stdout, reps)
	printSplit(stdout, reps)
	if o.json != "" {
		if err := loadgen.WriteJSON(o.json, reps); err != nil {
			return reps, err
		}
	}
	return reps, nil
}

func runOne(ctx context.Context, o *options, exe, dir string, p *pki, m int, stdout io.Writer) (rep *Report, err error) {
	rep = &Report{Agents: o.agents, Monitors: m, Rate: o.rate, LoadBefore: loadgen.LoadAverage(3)}
	procs, err := startMonitorsPprof(ctx, exe, dir, m, p.files)
	defer func() {
		for _, pr := range procs {
			if serr := pr.Stop(); serr != nil && err == nil && !isSignalExit(serr) {
				err = fmt.Errorf("monitor %d: %w\n%s", pr.Index, serr, pr.Log())
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	addrs := make([]string, m)
	for i, pr := range procs {
		addrs[i] = pr.Addr
	}
	fmt.Fprintf(stdout, "fleetload: %d monitors at %s; NATS at %s\n", m, strings.Join(addrs, ", "), procs[0].NATSURL)
	nc, kv, err := openKV(ctx, procs[0].NATSURL)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	w, err := watch(ctx, kv, o.agents)
	if err != nil {
		return nil, err
	}
	defer w.stop()

	before := make([]MonitorReport, m)
	for i, pr := range procs {
		if before[i].HeapBefore, _, err = monitorproc.HeapInuse(pr.Metrics); err != nil {
			return nil, fmt.Errorf("monitor %d metrics: %w", i, err)
		}
	}

	start := time.Now()
	f, err := dial(ctx, p, addrs, o.agents, o.perSocket, o.parallel, o.rate)
	if err != nil {
		return nil, err
	}
	defer f.close()
	rep.SetupS = time.Since(start).Seconds()
	fmt.Fprintf(stdout, "fleetload: %d agents connected in %.1f s; sending %g/s each for %v\n", o.agents, rep.SetupS, o.rate, o.duration)

	cpu0 := make([]time.Duration, m)
	for i, pr := range procs {
		if cpu0[i], err = monitorproc.CPUTime(pr.Cmd.Process.Pid); err != nil {
			return nil, err
		}
	}
	gen0, _ := rusage.Process()
	w.measured.Store(true)
	sendCtx, stopSend := context.WithTimeout(ctx, o.duration)
	t0 := time.Now()
	f.send(sendCtx, o.rate)
	stopSend()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	window := time.Since(t0)
	rep.DurationS = window.Seconds()
	gen1, _ := rusage.Process()
	rep.GeneratorCPU = (gen1 - gen0).Seconds() / window.Seconds()
	for i, pr := range procs {
		cpu1, err := monitorproc.CPUTime(pr.Cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		mr := &before[i]
		mr.Index, mr.EmbedsNATS = i, i == 0
		mr.CPUCores = (cpu1 - cpu0[i]).Seconds() / window.Seconds()
		rep.CPUCores += mr.CPUCores
	}
	// Memory at the end of the window, while every agent is connected.
	for i, pr := range procs {
		mr := &before[i]
		if mr.HeapEnd, mr.Goroutines, err = monitorproc.HeapInuse(pr.Metrics); err != nil {
			return nil, fmt.Errorf("monitor %d metrics: %w", i, err)
		}
		if o.heapDir != "" {
			name := fmt.Sprintf("heap-%dagents-%dmonitors-monitor%d.pb.gz", o.agents, m, i)
			if err := monitorproc.SaveHeapProfile(pr.Metrics, filepath.Join(o.heapDir, name)); err != nil {
				return nil, err
			}
		}
		v, err := monitorproc.Scrape(pr.Metrics, "fresh_connections")
		if err != nil {
			return nil, err
		}
		mr.Devices = v["fresh_connections"]
		if mr.Devices > 0 {
			mr.CPUPer1000 = mr.CPUCores / mr.Devices * 1000
			mr.HeapPerDevice = (mr.HeapEnd - mr.HeapBefore) / mr.Devices
		}
		rep.HeapPerDevice += (mr.HeapEnd - mr.HeapBefore) / float64(o.agents)
	}
	rep.CPUPer1000 = rep.CPUCores / float64(o.agents) * 1000

	// The last updates: the regulators send what is pending, the monitors
	// store it, the watcher sees it.
	settle := time.Now()
	for w.behind(f) > 0 && time.Since(settle) < o.settle && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	rep.SettleS = time.Since(settle).Seconds()
	w.measured.Store(false)
	rep.Check = check(ctx, kv, f)
	for i, pr := range procs {
		v, err := monitorproc.Scrape(pr.Metrics, "fresh_updates_stored_total", "fresh_updates_superseded_total")
		if err != nil {
			return nil, err
		}
		before[i].Stored = v["fresh_updates_stored_total"]
		rep.Stored += v["fresh_updates_stored_total"]
		rep.Superseded += v["fresh_updates_superseded_total"]
		rep.StoreErrors += monitorproc.StoreErrors(pr.Metrics)
	}
	rep.PerMonitor = before
	w.mu.Lock()
	rep.Seen, rep.BadValues = len(w.ages), w.bad
	rep.Age = quantiles(w.ages)
	rep.AgeMonitor, rep.AgeStore, rep.AgeWatcher = quantiles(w.toMonitor), quantiles(w.toStore), quantiles(w.toWatcher)
	w.mu.Unlock()
	rep.SeenPerS = float64(rep.Seen) / (window.Seconds() + rep.SettleS)
	rep.LoadAfter = loadgen.LoadAverage(3)
	return rep, nil
}

// startMonitorsPprof is monitorproc.Start with -pprof, which
// monitorproc.HeapInuse needs.
func startMonitorsPprof(ctx context.Context, exe, dir string, m int, creds monitorproc.Creds) ([]*monitorproc.Proc, error) {
	return monitorproc.Start(ctx, exe, dir, m, creds, "-pprof")
}

// isSignalExit says a monitor ended by our SIGTERM without exiting 0
// itself (it exits 0 after a clean shutdown; this is its being killed).
func isSignalExit(err error) bool {
	var ee interface{ ExitCode() int }
	return errors.As(err, &ee) && ee.ExitCode() == -1
}

func printReport(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\n== %d agents × %d monitors, %g updates/s each, %.0f s window ==\n", r.Agents, r.Monitors, r.Rate, r.DurationS)
	fmt.Fprintf(w, "setup             %.1f s (every agent dialled, mutual TLS)\n", r.SetupS)
	fmt.Fprintf(w, "age (ms)          p50 %.1f  p95 %.1f  p99 %.1f  max %.1f  (generation at the agent → seen by a KV watcher; %d updates, %.0f/s)\n",
		r.Age.P50, r.Age.P95, r.Age.P99, r.Age.Max, r.Seen, r.SeenPerS)
	for _, part := range []struct {
		name string
		q    Quantiles
	}{{"agent → monitor", r.AgeMonitor}, {"monitor → stored", r.AgeStore}, {"stored → watcher", r.AgeWatcher}} {
		fmt.Fprintf(w, "  %-16s  p50 %.1f  p95 %.1f  p99 %.1f  max %.1f\n", part.name, part.q.P50, part.q.P95, part.q.P99, part.q.Max)
	}
	fmt.Fprintf(w, "bucket check      %d devices: %d missing, %d stale; Generated within %d µs of the agent's stamp; settled in %.1f s\n",
		r.Check.Devices, r.Check.Missing, r.Check.Stale, r.Check.GeneratedSkewMaxUS, r.SettleS)
	for _, e := range r.Check.Examples {
		fmt.Fprintf(w, "                  %s\n", e)
	}
	fmt.Fprintf(w, "store             %.0f updates stored, %.0f superseded before the store took them, %.0f KV errors\n", r.Stored, r.Superseded, r.StoreErrors)
	fmt.Fprintf(w, "monitors CPU      %.2f cores, %.3f cores per 1,000 devices; loadtest process %.2f cores\n", r.CPUCores, r.CPUPer1000, r.GeneratorCPU)
	fmt.Fprintf(w, "monitors heap     %.0f B per device (Σ heap in use, end − before, / agents)\n", r.HeapPerDevice)
	for _, m := range r.PerMonitor {
		nats := ""
		if m.EmbedsNATS {
			nats = " (embeds NATS)"
		}
		fmt.Fprintf(w, "  monitor %d%s: %.0f devices, %.2f cores (%.3f per 1,000), heap %.1f → %.1f MB (%.0f B/device), %.0f goroutines, %.0f stored\n",
			m.Index, nats, m.Devices, m.CPUCores, m.CPUPer1000, m.HeapBefore/1e6, m.HeapEnd/1e6, m.HeapPerDevice, m.Goroutines, m.Stored)
	}
	fmt.Fprintf(w, "load average      before %s; after %s\n", r.LoadBefore, r.LoadAfter)
}

// printTable is the configurations side by side, as Markdown.
func printTable(w io.Writer, reps []*Report) {
	fmt.Fprintf(w, "\n| agents | monitors | rate/s | setup s | age p50 ms | p95 | p99 | missing | stale | CPU cores | per 1,000 devices | heap B/device | load before → after |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range reps {
		fmt.Fprintf(w, "| %d | %d | %g | %.1f | %.1f | %.1f | %.1f | %d | %d | %.2f | %.3f | %.0f | %s → %s |\n",
			r.Agents, r.Monitors, r.Rate, r.SetupS, r.Age.P50, r.Age.P95, r.Age.P99, r.Check.Missing, r.Check.Stale,
			r.CPUCores, r.CPUPer1000, r.HeapPerDevice, firstField(r.LoadBefore), firstField(r.LoadAfter))
	}
}

// printSplit is where the age went, per configuration, as Markdown.
func printSplit(w io.Writer, reps []*Report) {
	fmt.Fprintf(w, "\n| agents | monitors | agent → monitor p50 / p99 ms | monitor → stored p50 / p99 | stored → watcher p50 / p99 | updates stored | superseded in the monitor | Generated off by (max) ms |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range reps {
		fmt.Fprintf(w, "| %d | %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.0f | %.0f | %.1f |\n", r.Agents, r.Monitors,
			r.AgeMonitor.P50, r.AgeMonitor.P99, r.AgeStore.P50, r.AgeStore.P99, r.AgeWatcher.P50, r.AgeWatcher.P99,
			r.Stored, r.Superseded, float64(r.Check.GeneratedSkewMaxUS)/1e3)
	}
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
