//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/monitor"
	"github.com/fresh-udp/fresh/transport"
)

// The test binary runs as fresh-monitor itself when this is set: the
// scale-out test starts real processes without building another binary.
const asMonitorEnv = "FRESH_MONITOR_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMonitorEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is a fresh-monitor process the test started.
type proc struct {
	cmd             *exec.Cmd
	mu              sync.Mutex
	out             []string
	metrics, natsTo string
}

var metricsLineRE = regexp.MustCompile(`metrics at (http://\S+)/metrics`)

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMonitorEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			if m := metricsLineRE.FindStringSubmatch(sc.Text()); m != nil {
				p.metrics = m[1]
			}
			if m := natsLineRE.FindStringSubmatch(sc.Text()); m != nil {
				p.natsTo = m[1]
			}
			if regexp.MustCompile(`listening on `).MatchString(sc.Text()) {
				close(ready)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("fresh-monitor %v did not start:\n%s", args, p.out)
	}
	return p
}

// stop ends the process as an operator would (SIGTERM) and requires a
// clean exit.
func (p *proc) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err := p.cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NoError(t, err, "fresh-monitor exited with an error:\n%s", p.out)
}

// Two fresh-monitor processes share one UDP port, steered by connection
// ID (-steer, -server-id): 1,000 agents spread over both; a tenth of them
// then move to a new port (a NAT rebinding: a new 4-tuple, which the
// kernel's hash alone may hand to the other process); a third process
// joins mid-run (which reshuffles the hash of every 4-tuple). Every
// connection survives: each agent's last update is in the KV bucket,
// no process answers a datagram with a stateless reset or drops one for
// a connection it does not hold (each serves only its own), and the new
// process takes only new agents.
func TestTwoProcessesOnePortSteered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three monitor processes and 1,100 agents")
	}
	bpf := t.TempDir()
	if err := unix.Mount("bpf", bpf, "bpf", 0, ""); err != nil {
		t.Skipf("cannot mount a bpffs for -steer (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(bpf, unix.MNT_DETACH) })
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim), "an agent's socket each")

	f := newFleet(t, t.TempDir())
	ca, certFlags := f.ca, f.args
	port := freeUDPPort(t)
	listen := "127.0.0.1:" + strconv.Itoa(port)
	common := append([]string{"-listen", listen, "-steer", bpf, "-metrics", "127.0.0.1:0"}, certFlags...)
	a := startProc(t, append(common, "-server-id", "0", "-data", t.TempDir(), "-nats-listen", "127.0.0.1:0")...)
	b := startProc(t, append(common, "-server-id", "1", "-nats", a.natsTo)...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const agents, movers, late = 1000, 100, 100
	conns := make([]*transport.Conn, 0, agents+late)
	dial := func(i int) {
		name := fmt.Sprintf("agent-%04d", i)
		cert, err := ca.Issue(name)
		require.NoError(t, err)
		c, err := transport.Dial(ctx, listen, transport.Config{TLS: &tls.Config{
			RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert},
		}})
		require.NoError(t, err, name)
		t.Cleanup(func() { _ = c.Abort() })
		conns = append(conns, c)
	}
	send := func(round int) {
		for i, c := range conns {
			require.NoError(t, c.SendUpdate([]byte(fmt.Sprintf("agent-%04d round %d", i, round))))
		}
	}
	for i := range agents {
		dial(i)
	}
	send(0)
	for _, c := range conns[:movers] {
		mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
		require.NoError(t, c.Migrate(mctx), "a moved agent's datagrams reach its process")
		mcancel()
	}
	send(1)
	c3 := startProc(t, append(common, "-server-id", "2", "-nats", a.natsTo)...)
	time.Sleep(200 * time.Millisecond) // the old agents' next datagrams meet the new group
	send(2)
	for i := agents; i < agents+late; i++ {
		dial(i)
	}
	send(3)

	// Every agent's last update reaches the KV bucket through its process.
	nc, err := nats.Connect(a.natsTo)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, monitor.DefaultKVBucket)
	require.NoError(t, err)
	missing := func() []string {
		var out []string
		for i := range conns {
			name := fmt.Sprintf("agent-%04d", i)
			want := name + " round 3"
			e, err := kv.Get(ctx, monitor.Key(name))
			if err != nil {
				out = append(out, name+": "+err.Error())
				continue
			}
			var r monitor.Record
			if json.Unmarshal(e.Value(), &r) != nil || string(r.Payload) != want {
				out = append(out, name+": "+string(r.Payload))
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(missing()) == 0 }, 60*time.Second, 500*time.Millisecond,
		"agents whose last update is not stored: %v", missing)
	for i, c := range conns {
		require.NoError(t, c.Err(), "agent-%04d's connection survived", i)
	}

	procs := []*proc{a, b, c3}
	accepted := make([]float64, 3)
	for i, p := range procs {
		m := scrape(t, p.metrics)
		accepted[i] = m["fresh_connections_accepted_total"]
		require.Equal(t, accepted[i], m["fresh_connections"], "process %d: every connection it accepted is still up", i)
		require.Zero(t, m["fresh_stateless_resets_sent_total"], "process %d answered another's datagram", i)
		require.Zero(t, m[`fresh_datagrams_dropped_total{reason="no_connection"}`], "process %d got another's datagram", i)
		require.Zero(t, m[`fresh_datagrams_dropped_total{reason="wrong_address"}`], "process %d", i)
	}
	t.Logf("connections per process (server IDs 0, 1, 2): %v", accepted)
	require.Equal(t, float64(agents+late), accepted[0]+accepted[1]+accepted[2])
	require.Positive(t, accepted[0])
	require.Positive(t, accepted[1])
	require.Positive(t, accepted[2], "the process that joined takes new agents")
	require.LessOrEqual(t, accepted[2], float64(late), "and only new ones")

	for _, c := range conns {
		_ = c.Close()
	}
	c3.stop(t)
	b.stop(t)
	a.stop(t)
}

// freeUDPPort is a loopback UDP port nothing is bound to now.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
