//go:build linux

package emu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netState is what a TUN router could leak, seen from the root namespace.
type netState struct {
	tuns  map[string]bool   // TUN/TAP devices in this namespace
	named map[uint64]string // entries of /var/run/netns, by namespace inode
	nets  map[uint64][]int  // network namespaces held by a thread or an fd: the holders' pids
}

func snapshotNet(t *testing.T) netState {
	t.Helper()
	s := netState{tuns: map[string]bool{}, named: map[uint64]string{}, nets: map[uint64][]int{}}
	links, err := netlink.LinkList()
	require.NoError(t, err)
	for _, l := range links {
		if l.Type() == "tuntap" {
			s.tuns[l.Attrs().Name] = true
		}
	}
	if ents, err := os.ReadDir("/var/run/netns"); err == nil {
		for _, e := range ents {
			var st unix.Stat_t
			if unix.Stat(filepath.Join("/var/run/netns", e.Name()), &st) == nil {
				s.named[st.Ino] = e.Name()
			}
		}
	}
	// Every namespace in use is some thread's or held by an fd (ours by a
	// handle): collect the distinct "net:[inode]" links and who holds them.
	add := func(p, link string) {
		ino, ok := strings.CutPrefix(link, "net:[")
		if !ok {
			return
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(ino, "]"), 10, 64)
		if err != nil {
			return
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2]) // /proc/PID/…
		if !slices.Contains(s.nets[n], pid) {
			s.nets[n] = append(s.nets[n], pid)
		}
	}
	for _, glob := range []string{"/proc/[0-9]*/task/[0-9]*/ns/net", "/proc/[0-9]*/fd/*"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if l, err := os.Readlink(p); err == nil {
				add(p, l)
			}
		}
	}
	return s
}

// ourProcess reports whether pid is this process or a descendant of it.
func ourProcess(pid int) bool {
	self := os.Getpid()
	for range 64 {
		if pid == self {
			return true
		}
		if pid <= 1 {
			return false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1]) // the parent
	}
	return false
}

// nsInodes returns the inodes of the router's two namespaces.
func (t *TUN) nsInodes() (client, server uint64) {
	ino := func(fd int) uint64 {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return 0
		}
		return st.Ino
	}
	return ino(int(t.sys.client.ns)), ino(int(t.sys.server.ns))
}

// requireNoLeak waits (briefly: a killed process's fds close as it is
// reaped) until neither of our namespaces is held by anything or named in
// /var/run/netns, no TUN device appeared here, and the number of
// namespaces is back to what it was. Other programs on the host may make
// namespaces meanwhile: a new one held only by processes outside this
// process tree is logged, not counted.
func requireNoLeak(t *testing.T, before netState, ours ...uint64) {
	t.Helper()
	var foreign []string
	leaked := func() string {
		now := snapshotNet(t)
		foreign = foreign[:0]
		for _, ino := range ours {
			if pids, ok := now.nets[ino]; ok {
				return fmt.Sprintf("namespace net:[%d] still held by pids %v", ino, pids)
			}
			if name, ok := now.named[ino]; ok {
				return fmt.Sprintf("namespace net:[%d] named /var/run/netns/%s", ino, name)
			}
		}
		for name := range now.tuns {
			if !before.tuns[name] {
				return "new TUN device " + name
			}
		}
		n := len(before.nets)
		for ino, pids := range now.nets {
			if _, old := before.nets[ino]; old {
				continue
			}
			if !slices.ContainsFunc(pids, ourProcess) {
				foreign = append(foreign, fmt.Sprintf("net:[%d] held by pids %v", ino, pids))
				continue
			}
			n++
		}
		if n > len(before.nets) {
			return fmt.Sprintf("%d network namespaces, was %d", n, len(before.nets))
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		msg := leaked()
		if msg == "" {
			if len(foreign) > 0 {
				t.Logf("namespaces made meanwhile by other programs (not counted): %v", foreign)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leak: %s", msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTUNNoLeakAfterClose(t *testing.T) {
	before := snapshotNet(t)
	tn, err := NewTUN(TUNConfig{Forward: path(100*mbps, time.Millisecond), Reverse: path(100*mbps, time.Millisecond)})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	cli, srv := tn.nsInodes()
	during := snapshotNet(t)
	require.True(t, during.nets[cli] != nil && during.nets[srv] != nil, "the snapshot sees our namespaces")
	pingRTTs(t, tn, 1)
	require.NoError(t, tn.Close())
	require.NoError(t, tn.Close(), "Close is idempotent")
	require.ErrorIs(t, tn.InClient(func() error { return nil }), ErrClosed)
	requireNoLeak(t, before, cli, srv)
}

// TestTUNNoLeakOnError fails NewTUN at each stage of its set-up: each
// time it returns the error and leaves nothing behind.
func TestTUNNoLeakOnError(t *testing.T) {
	cfg := TUNConfig{Forward: path(100*mbps, time.Millisecond), Reverse: path(100*mbps, time.Millisecond)}
	tn, err := NewTUN(cfg)
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.NoError(t, tn.Close())
	defer func() { tunBuildHook = nil }()
	for _, stage := range []string{"client made", "server made", "client configured", "server configured"} {
		before := snapshotNet(t)
		injected := errors.New("injected at " + stage)
		tunBuildHook = func(s string) error {
			if s == stage {
				return injected
			}
			return nil
		}
		tn, err := NewTUN(cfg)
		require.ErrorIs(t, err, injected)
		require.Nil(t, tn)
		requireNoLeak(t, before)
	}
	tunBuildHook = nil
	_, err = NewTUN(TUNConfig{Forward: cfg.Forward}) // no reverse rate
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestTUNPanicInClient(t *testing.T) {
	before := snapshotNet(t)
	self, err := os.Readlink("/proc/thread-self/ns/net")
	require.NoError(t, err)
	tn, err := NewTUN(TUNConfig{Forward: path(100*mbps, time.Millisecond), Reverse: path(100*mbps, time.Millisecond)})
	if errors.Is(err, ErrNoTUN) {
		t.Skip(err)
	}
	require.NoError(t, err)
	cli, srv := tn.nsInodes()
	var inside string
	require.PanicsWithValue(t, "boom", func() {
		_ = tn.InClient(func() error {
			inside, _ = os.Readlink("/proc/thread-self/ns/net")
			panic("boom")
		})
	})
	require.Equal(t, fmt.Sprintf("net:[%d]", cli), inside, "fn ran in the client namespace")
	after, err := os.Readlink("/proc/thread-self/ns/net")
	require.NoError(t, err)
	require.Equal(t, self, after, "the caller's namespace is untouched")
	pingRTTs(t, tn, 1) // still works
	require.NoError(t, tn.Close())
	requireNoLeak(t, before, cli, srv)
}

const tunHelperEnv = "FRESH_TUN_HELPER"

// TestTUNNoLeakAfterKill runs a helper process (this test binary) that
// builds a TUN router, pings across and starts a child in the client
// namespace, then SIGKILLs it: the namespaces, devices and child go with
// it.
func TestTUNNoLeakAfterKill(t *testing.T) {
	if os.Getenv(tunHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	before := snapshotNet(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTUNHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), tunHelperEnv+"=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var cli, srv uint64
	var child int
	timeout := time.After(10 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "helper exited before it was ready")
			if reason, ok := strings.CutPrefix(l, "SKIP "); ok {
				t.Skip(reason)
			}
			if _, err := fmt.Sscanf(l, "READY %d %d %d", &cli, &srv, &child); err == nil {
				break wait
			}
		case <-timeout:
			t.Fatal("helper not ready in 10 s")
		}
	}
	during := snapshotNet(t)
	require.True(t, during.nets[cli] != nil && during.nets[srv] != nil, "the helper's namespaces are visible")
	childNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", child))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("net:[%d]", cli), childNS, "the child runs in the client namespace")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireNoLeak(t, before, cli, srv)
	// The child in the namespace had Pdeathsig: gone (or a zombie).
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(child) {
		require.True(t, time.Now().Before(deadline), "child %d survived its parent", child)
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestTUNHelperProcess is TestTUNNoLeakAfterKill's helper, run in a
// subprocess: it builds a router, pings across, starts a sleeping child
// (this binary again) in the client namespace, prints READY and waits to
// be killed.
func TestTUNHelperProcess(t *testing.T) {
	switch os.Getenv(tunHelperEnv) {
	case "":
		t.Skip("helper for TestTUNNoLeakAfterKill")
	case "sleep": // the child in the namespace
		time.Sleep(time.Minute)
		return
	}
	tn, err := NewTUN(TUNConfig{Forward: path(100*mbps, time.Millisecond), Reverse: path(100*mbps, time.Millisecond)})
	if errors.Is(err, ErrNoTUN) {
		fmt.Println("SKIP", err)
		return
	}
	require.NoError(t, err)
	pingRTTs(t, tn, 1)
	sleeper := exec.Command(os.Args[0], "-test.run=^TestTUNHelperProcess$", "-test.count=1")
	sleeper.Env = append(os.Environ(), tunHelperEnv+"=sleep")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, tn.InClient(sleeper.Start))
	cli, srv := tn.nsInodes()
	fmt.Printf("READY %d %d %d\n", cli, srv, sleeper.Process.Pid)
	time.Sleep(time.Minute)
}
