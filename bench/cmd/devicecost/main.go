// Command devicecost measures what a device pays in its own process to
// report a reading a second over each protocol fresh is compared with:
// its wake-ups (context switches of all its threads, voluntary and
// involuntary, from /proc/PID/task/*/status: each is a thread that went to
// sleep or was preempted, what keeps a battery-powered CPU out of its idle
// states) and its CPU time (the threads' run time, /proc/PID/task/*/schedstat).
//
//	go run ./bench/cmd/devicecost [-hz 1] [-duration 20s] [-warm 3s] [-runs 2] [-peers udp,fresh,...]
//
// The monitors run in this process on loopback: a UDP and a TCP sink, a
// mosquitto broker (Debian package mosquitto; its peers are skipped, and
// said so, without it) with a subscriber, go-coap servers (plain UDP and
// DTLS 1.2 with a pre-shared key), a quic-go listener with DATAGRAMs and
// fresh listeners (plaintext and TLS). Each device is this program run
// again as a child process that connects once and sends a 100-byte reading
// every 1/hz seconds, configured as its library recommends for devices
// (paho's 30-s keep-alive, go-coap's defaults, quic-go's and fresh's);
// only the child is measured. After -warm it samples the child, again
// -duration later, and prints the difference per second, with the
// readings the monitor received in that window: a device that stopped
// sending would look cheap, so a peer whose monitor heard less than 90 %
// of the readings it should have fails the run.
//
// Linux only (/proc). Run it on a quiet machine: other load adds
// involuntary switches to every peer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// childEnv names the peer a child process runs as a device.
const childEnv = "FRESH_DEVICECOST_PEER"

func main() {
	if p := os.Getenv(childEnv); p != "" {
		if err := runDevice(p); err != nil {
			fmt.Fprintf(os.Stderr, "devicecost device %s: %v\n", p, err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "devicecost:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devicecost:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	hz        float64
	duration  time.Duration
	warm      time.Duration
	runs      int
	peers     []string
	mosquitto string
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("devicecost", flag.ContinueOnError)
	var o options
	var peers string
	fs.Float64Var(&o.hz, "hz", 1, "readings a second")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long each device is measured")
	fs.DurationVar(&o.warm, "warm", 3*time.Second, "how long each device runs before it is measured (connecting, handshakes)")
	fs.IntVar(&o.runs, "runs", 2, "runs per peer, in turn")
	fs.StringVar(&peers, "peers", strings.Join(peerNames(), ","), "comma-separated peers to measure")
	fs.StringVar(&o.mosquitto, "mosquitto", "mosquitto", "the mosquitto broker's binary (mqtt peers)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	switch {
	case o.hz <= 0 || o.hz > 1000:
		return o, fmt.Errorf("-hz %v: want a rate in (0, 1000] readings a second", o.hz)
	case o.duration < time.Second:
		return o, fmt.Errorf("-duration %v: want at least 1s", o.duration)
	case o.warm < 0:
		return o, fmt.Errorf("-warm %v: must not be negative", o.warm)
	case o.runs < 1:
		return o, fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	for _, p := range strings.Split(peers, ",") {
		if !slices.Contains(peerNames(), p) {
			return o, fmt.Errorf("-peers: unknown peer %q (known: %s)", p, strings.Join(peerNames(), ", "))
		}
		o.peers = append(o.peers, p)
	}
	return o, nil
}

// result is one peer's measurement in one run.
type result struct {
	wakeups   float64 // context switches a second, all threads
	cpuMs     float64 // CPU milliseconds a second
	received  int64   // readings the monitor received in the window
	threads   int
	expectMin int64 // the fewest readings the window should have brought
}

func run(ctx context.Context, o options, out *os.File) error {
	m, err := startMonitors(ctx, o)
	if err != nil {
		return err
	}
	defer m.close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "device cost at %v reading(s)/s over %v (after %v), %d run(s) each; wake-ups are all threads' context switches\n\n",
		o.hz, o.duration, o.warm, o.runs)
	fmt.Fprintf(out, "| peer | wake-ups/s, median (runs) | CPU ms/s, median (runs) | readings received | threads |\n|---|---|---|---|---|\n")
	for _, p := range o.peers {
		if why := m.unavailable(p); why != "" {
			fmt.Fprintf(out, "| %s | not run: %s | | | |\n", p, why)
			continue
		}
		var rs []result
		for range o.runs {
			r, err := measure(ctx, self, m, p, o)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			rs = append(rs, r)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %d |\n", p,
			medianOf(rs, func(r result) float64 { return r.wakeups }),
			medianOf(rs, func(r result) float64 { return r.cpuMs }),
			receivedOf(rs), rs[len(rs)-1].threads)
	}
	return nil
}

// measure runs peer p's device once and measures it.
func measure(ctx context.Context, self string, m *monitors, p string, o options) (result, error) {
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), m.env(p, o.hz)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	pid := cmd.Process.Pid
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("the device exited early: %v: %s", waitErr, strings.TrimSpace(stderr.String()))
		case <-time.After(d):
			return nil
		}
	}
	if err := sleep(o.warm); err != nil {
		return result{}, err
	}
	s0, err := sampleProc(pid)
	if err != nil {
		return result{}, err
	}
	r0 := m.received(p)
	if err := sleep(o.duration); err != nil {
		return result{}, err
	}
	s1, err := sampleProc(pid)
	if err != nil {
		return result{}, err
	}
	r := result{
		wakeups:   float64(s1.switches-s0.switches) / o.duration.Seconds(),
		cpuMs:     float64(s1.cpuNs-s0.cpuNs) / 1e6 / o.duration.Seconds(),
		received:  m.received(p) - r0,
		threads:   s1.threads,
		expectMin: int64(0.9 * o.hz * o.duration.Seconds()),
	}
	if r.received < r.expectMin {
		return r, fmt.Errorf("the monitor received %d readings in %v, expected about %.0f: the device is not doing its job (its stderr: %q)",
			r.received, o.duration, o.hz*o.duration.Seconds(), strings.TrimSpace(stderr.String()))
	}
	return r, nil
}

// procSample is a process's context switches and CPU time so far, summed
// over its threads.
type procSample struct {
	switches int64
	cpuNs    int64
	threads  int
}

// sampleProc reads pid's threads' context switches (status) and run time
// (schedstat's first field, ns: finer than stat's clock ticks, which at
// a reading a second would be mostly zero).
func sampleProc(pid int) (procSample, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return procSample{}, fmt.Errorf("reading the device's threads: %w", err)
	}
	var s procSample
	for _, t := range tasks {
		status, err1 := os.ReadFile(dir + "/" + t.Name() + "/status")
		sched, err2 := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err1 != nil || err2 != nil {
			continue // the thread ended between the listing and the read
		}
		for _, line := range strings.Split(string(status), "\n") {
			var n int64
			if _, err := fmt.Sscanf(line, "voluntary_ctxt_switches: %d", &n); err == nil {
				s.switches += n
			} else if _, err := fmt.Sscanf(line, "nonvoluntary_ctxt_switches: %d", &n); err == nil {
				s.switches += n
			}
		}
		var ns int64
		if _, err := fmt.Sscanf(string(sched), "%d", &ns); err == nil {
			s.cpuNs += ns
		}
		s.threads++
	}
	if s.threads == 0 {
		return s, errors.New("the device has no threads left to read")
	}
	return s, nil
}

// medianOf formats the median of f over rs with each run's value.
func medianOf(rs []result, f func(result) float64) string {
	v := make([]float64, len(rs))
	runs := make([]string, len(rs))
	for i, r := range rs {
		v[i], runs[i] = f(r), fmt.Sprintf("%.1f", f(r))
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return fmt.Sprintf("**%.1f** (%s)", med, strings.Join(runs, ", "))
}

func receivedOf(rs []result) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r.received)
	}
	return strings.Join(s, ", ")
}
