// Package monitorproc runs cmd/fresh-monitor as processes, as a load test
// needs them: it builds the binary from the workspace, starts M monitors
// that share one NATS JetStream (the first embeds the server), waits
// until each answers /readyz, reads their CPU time (/proc) and their
// Prometheus metrics and heap, and stops them as an operator would.
package monitorproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build builds cmd/fresh-monitor into dir with the go command
// (from the workspace this runs in: the monitor as the tree has it), with
// flags (the test's -race) before the package, and gives the build at most
// timeout: a first build compiles the embedded NATS server, minutes on a
// busy small machine. Its error names the command, how long it ran and
// what ended it.
func Build(ctx context.Context, dir string, timeout time.Duration, flags ...string) (string, error) {
	exe := filepath.Join(dir, "fresh-monitor")
	args := append(append([]string{"build", "-o", exe}, flags...), "github.com/fresh-udp/fresh/cmd/fresh-monitor")
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(bctx, "go", args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	line := "go " + strings.Join(args, " ")
	switch {
	case err == nil:
		return exe, nil
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: stopped after %v: %w", line, took, ctx.Err())
	case bctx.Err() != nil:
		return "", fmt.Errorf("%s: the build timed out: still compiling after %v (-build-timeout %v; a first build compiles the NATS server, minutes on a busy machine): "+
			"raise -build-timeout, or build it once and give -monitor-bin", line, took, timeout)
	}
	hint := ""
	if bytes.Contains(out, []byte("go.mod file not found")) || bytes.Contains(out, []byte("cannot find module")) ||
		bytes.Contains(out, []byte("is not in std")) {
		hint = " (run fleetload from the fresh workspace, or give -monitor-bin)"
	}
	return "", fmt.Errorf("%s: the build failed after %v%s: %w\n%s", line, took, hint, err, out)
}

// Proc is one fresh-monitor process.
type Proc struct {
	Index   int
	Cmd     *exec.Cmd
	Addr    string // UDP address agents dial
	Metrics string // host:port of /metrics
	NATSURL string // the embedded server's client URL (the first monitor's), else ""
	done    chan error
	log     *tailBuffer
}

// Creds are the monitor's credentials on disk, as its flags take them.
type Creds struct{ Cert, Key, CA string }

// FreePort is a port nothing listens on now, on loopback, for network
// ("udp" or "tcp"). The monitor binds it a moment later; another process
// taking it in between makes that monitor fail to start, which is
// reported.
func FreePort(network string) (int, error) {
	switch network {
	case "udp":
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port, nil
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
}

// Start starts m monitors: the first embeds NATS (JetStream in
// dir), the others connect to it; each on its own UDP port, metrics on
// its own loopback port, extra appended to its flags. It returns once every one answers /readyz.
func Start(ctx context.Context, exe, dir string, m int, creds Creds, extra ...string) ([]*Proc, error) {
	var procs []*Proc
	natsURL := ""
	for i := range m {
		udp, err := FreePort("udp")
		if err != nil {
			return procs, err
		}
		mport, err := FreePort("tcp")
		if err != nil {
			return procs, err
		}
		p := &Proc{Index: i, Addr: fmt.Sprintf("127.0.0.1:%d", udp), Metrics: fmt.Sprintf("127.0.0.1:%d", mport),
			done: make(chan error, 1), log: &tailBuffer{max: 8 << 10}}
		args := append([]string{"-listen", p.Addr, "-cert", creds.Cert, "-key", creds.Key, "-ca", creds.CA, "-metrics", p.Metrics}, extra...)
		if i == 0 {
			nport, err := FreePort("tcp")
			if err != nil {
				return procs, err
			}
			natsURL = fmt.Sprintf("nats://127.0.0.1:%d", nport)
			p.NATSURL = natsURL
			args = append(args, "-data", filepath.Join(dir, "jetstream"), "-nats-listen", fmt.Sprintf("127.0.0.1:%d", nport))
		} else {
			args = append(args, "-nats", natsURL)
		}
		p.Cmd = exec.Command(exe, args...)
		p.Cmd.Stdout, p.Cmd.Stderr = p.log, p.log
		if err := p.Cmd.Start(); err != nil {
			return procs, fmt.Errorf("monitor %d: %w", i, err)
		}
		go func() { p.done <- p.Cmd.Wait() }()
		procs = append(procs, p)
		// One at a time: the first must serve NATS before the others
		// connect, and creating the buckets is the first one's.
		if err := p.WaitReady(ctx, 60*time.Second); err != nil {
			return procs, err
		}
	}
	return procs, nil
}

// WaitReady returns once the monitor answers /readyz, or an error with
// the tail of its log if it exits first or limit passes.
func (p *Proc) WaitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("monitor %d exited before it was ready (%v):\n%s", p.Index, err, p.log.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get("http://" + p.Metrics + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("monitor %d not ready after %v:\n%s", p.Index, limit, p.log.String())
		}
	}
}

// Stop ends the monitor as an operator would (SIGTERM: it closes its
// connections and writes what is pending), killing it after 30 s.
func (p *Proc) Stop() error {
	if p.Cmd.Process == nil {
		return nil
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(30 * time.Second):
		_ = p.Cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return fmt.Errorf("monitor %d did not stop within 30 s of SIGTERM: killed", p.Index)
	}
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times:
// 100 on every architecture Go runs on (the kernel fixes it for the ABI,
// whatever HZ it was built with).
const clockTicks = 100

// CPUTime is the process's user+system CPU time from /proc/<pid>/stat
// (fields 14 and 15, proc(5)), every thread.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count the fields after its closing one.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("/proc/<pid>/stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc/<pid>/stat: too few fields")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errors.New("/proc/<pid>/stat: bad utime/stime")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// Scrape reads the named samples (unlabelled metrics) from a Prometheus
// text exposition at http://addr/metrics.
func Scrape(addr string, names ...string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// tailBuffer keeps the last max bytes written: a monitor's log, shown if
// it fails.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tailBuffer)(nil)

// HeapInuse forces a collection in the monitor (the pprof heap handler's
// gc=1; the monitor must run with -pprof) and reads its heap in use and
// goroutines.
func HeapInuse(addr string) (heap, goroutines float64, err error) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	v, err := Scrape(addr, "go_memstats_heap_inuse_bytes", "go_goroutines")
	return v["go_memstats_heap_inuse_bytes"], v["go_goroutines"], err
}

// SaveHeapProfile writes the monitor's heap profile (pprof format) to path.
func SaveHeapProfile(addr, path string) error {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// StoreErrors is fresh_store_errors_total{store="kv"}.
func StoreErrors(addr string) float64 {
	v, _ := Scrape(addr, `fresh_store_errors_total{store="kv"}`)
	return v[`fresh_store_errors_total{store="kv"}`]
}

// Log is the tail of the monitor's standard output and error.
func (p *Proc) Log() string { return p.log.String() }
