//go:build linux

package emu

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// tunSide is one namespace and the TUN device in it.
type tunSide struct {
	name        string         // "client" or "server", for errors
	local, peer netip.Addr     // the device's address and its point-to-point peer
	ns          netns.NsHandle // -1 until made; the namespace lives while this fd (or a socket or process in it) does
	file        *os.File       // the TUN device (non-persistent: it goes when the fd is closed)
}

// tunSys is the Linux part of a TUN: two anonymous namespaces, each held
// only by our handle, and a TUN device in each. Nothing is named in the
// file system, so a killed process leaks nothing: the devices go with
// their fds and the namespaces with the last fd, socket or process in them.
type tunSys struct {
	mu             sync.RWMutex // InClient/InServer hold it shared while they enter a namespace; teardown exclusively
	closed         bool         // under mu
	client, server tunSide
}

// NewTUN builds the two namespaces and their TUN devices, addresses them
// (ClientAddr peer ServerAddr), and starts the router. Without root or
// /dev/net/tun the error wraps ErrNoTUN and says what is missing. On any
// error everything it made is gone when it returns. Close the TUN to tear
// it down.
func NewTUN(cfg TUNConfig) (_ *TUN, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	t := &TUN{cfg: cfg}
	t.sys.client = tunSide{name: "client", local: tunClientIP, peer: tunServerIP, ns: -1}
	t.sys.server = tunSide{name: "server", local: tunServerIP, peer: tunClientIP, ns: -1}
	t.pool.largeSize = tunMaxPkt
	if err := t.initSched(cfg.Clock, cfg.Spin, cfg.Forward, cfg.Reverse, uint64(cfg.Seed)); err != nil {
		return nil, err
	}
	t.out = t.write
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return nil, fmt.Errorf("%w: no /dev/net/tun (load the tun module, or give the container the device): %w", ErrNoTUN, err)
	}
	defer func() {
		if err != nil {
			t.sys.teardown()
		}
	}()
	if err := t.sys.build(); err != nil {
		return nil, err
	}
	t.wg.Add(3)
	go t.schedule()
	go t.read(t.sys.client.file, forward)
	go t.read(t.sys.server.file, reverse)
	return t, nil
}

// tunBuildHook, if set (by tests), is called at each stage of build; an
// error fails NewTUN there, to check that every error path cleans up.
var tunBuildHook func(stage string) error

func buildStage(stage string) error {
	if tunBuildHook == nil {
		return nil
	}
	return tunBuildHook(stage)
}

// noTUN wraps permission and missing-device errors in ErrNoTUN.
func noTUN(what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %s: %w (needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN)", ErrNoTUN, what, err)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("%w: %s: %w (no TUN support in this kernel or container)", ErrNoTUN, what, err)
	}
	return fmt.Errorf("emu: %s: %w", what, err)
}

// build makes both namespaces and devices on a locked thread, returns
// that thread to the original namespace, then configures the devices
// through netlink sockets opened in each namespace.
func (s *tunSys) build() error {
	errc := make(chan error, 1)
	go func() {
		// Locked for good unless the thread gets back to its original
		// namespace: then it dies with this goroutine instead of
		// running other goroutines in ours.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("emu: current network namespace: %w", err)
			return
		}
		err = s.makeSide(&s.client)
		if err == nil {
			err = buildStage("client made")
		}
		if err == nil {
			err = s.makeSide(&s.server)
		}
		if err == nil {
			err = buildStage("server made")
		}
		if e := netns.Set(orig); e == nil {
			runtime.UnlockOSThread()
		} else if err == nil {
			err = fmt.Errorf("emu: back to the original namespace: %w", e)
		}
		_ = orig.Close()
		errc <- err
	}()
	if err := <-errc; err != nil {
		return err
	}
	for _, side := range []*tunSide{&s.client, &s.server} {
		if err := side.configure(); err != nil {
			return err
		}
		if err := buildStage(side.name + " configured"); err != nil {
			return err
		}
	}
	return nil
}

// makeSide runs on build's locked thread: it moves the thread into a new
// anonymous namespace, sets its sysctls and opens the TUN device there.
func (s *tunSys) makeSide(side *tunSide) error {
	ns, err := netns.New()
	if err != nil {
		return noTUN("create the "+side.name+" network namespace", err)
	}
	side.ns = ns
	// /proc/sys/net shows the namespace of the thread that opens it.
	for _, c := range []struct {
		key, val string
		optional bool // best effort: failing is fine
	}{
		// No IPv6 at all is fine too.
		{"net/ipv6/conf/all/disable_ipv6", "1", true},
		{"net/ipv6/conf/default/disable_ipv6", "1", true},
		{"net/ipv4/tcp_rmem", tunTCPMem, false},
		{"net/ipv4/tcp_wmem", tunTCPWMem, false},
		// Let UDP sockets ask for 16 MiB buffers too, where the kernel
		// allows it (these are read-only or absent outside the initial
		// namespace on some kernels, e.g. 6.18).
		{"net/core/rmem_max", tunSockMax, true},
		{"net/core/wmem_max", tunSockMax, true},
	} {
		err := os.WriteFile("/proc/sys/"+c.key, []byte(c.val), 0)
		if err != nil && !c.optional {
			return fmt.Errorf("emu: %s namespace: sysctl %s: %w", side.name, c.key, err)
		}
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return noTUN("open /dev/net/tun", err)
	}
	ifr, err := unix.NewIfreq(tunName)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		_ = unix.Close(fd)
		return noTUN("create the "+side.name+" TUN device (TUNSETIFF)", err)
	}
	// Non-blocking: os.NewFile puts it in the runtime poller, so Close
	// wakes a blocked Read.
	side.file = os.NewFile(uintptr(fd), "/dev/net/tun:"+side.name)
	return nil
}

// configure brings lo and the TUN device up, with a long transmit queue
// and the point-to-point address, through a netlink socket in the side's
// namespace (which routes the peer: no forwarding or extra route needed).
func (side *tunSide) configure() error {
	fail := func(what string, err error) error {
		return fmt.Errorf("emu: %s namespace: %s: %w", side.name, what, err)
	}
	h, err := netlink.NewHandleAt(side.ns)
	if err != nil {
		return fail("netlink", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fail("lo up", err)
	}
	l, err := h.LinkByName(tunName)
	if err != nil {
		return fail("find "+tunName, err)
	}
	if err := h.LinkSetTxQLen(l, tunTxQueue); err != nil {
		return fail("txqueuelen", err)
	}
	host := net.CIDRMask(32, 32)
	addr := &netlink.Addr{
		IPNet: &net.IPNet{IP: side.local.AsSlice(), Mask: host},
		Peer:  &net.IPNet{IP: side.peer.AsSlice(), Mask: host},
	}
	if err := h.AddrAdd(l, addr); err != nil {
		return fail("address "+side.local.String()+" peer "+side.peer.String(), err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fail(tunName+" up", err)
	}
	return nil
}

// teardown closes both devices and both namespace handles; idempotent.
// Once it returns, nothing of ours holds a namespace (sockets or processes
// the caller left in one still do, until they go).
func (s *tunSys) teardown() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var first error
	for _, side := range []*tunSide{&s.client, &s.server} {
		if side.file != nil {
			// Not set to nil: the scheduler may still be writing to it
			// (and gets os.ErrClosed).
			if err := side.file.Close(); err != nil && first == nil {
				first = err
			}
		}
		if side.ns.IsOpen() {
			if err := side.ns.Close(); err != nil && first == nil {
				first = err
			}
			side.ns = -1
		}
	}
	return first
}

// read reads one TUN device until it is closed and hands each packet, in
// a pooled buffer, to the scheduler: the client's device carries the
// forward direction, the server's the reverse.
func (t *TUN) read(f *os.File, dir direction) {
	defer t.wg.Done()
	ctr := &t.fwdC
	if dir == reverse {
		ctr = &t.revC
	}
	scratch := make([]byte, tunReadSize)
	for {
		n, err := f.Read(scratch)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			ctr.readErr.Add(1)
			select {
			case <-t.done:
				return
			case <-time.After(time.Millisecond): // never spin on a failing device
				continue
			}
		}
		if n > tunMaxPkt {
			ctr.oversize.Add(1)
			continue
		}
		it := t.pool.get(n)
		copy(it.buf, scratch[:n])
		// Wall first: the link releases the packet at at+delay, so a
		// preemption between the two readings makes Observe's Out−In
		// longer, never shorter than the emulated delay.
		it.wall = t.clk.Wall()
		it.at = t.clk.Now()
		if !t.accept(it, n, dir) {
			continue
		}
		if !t.submit(it) {
			return
		}
	}
}

// write is the scheduler's out: it writes a packet that crossed its link
// into the other side's TUN device and shows it to Observe.
func (t *TUN) write(it *item) {
	ctr, f := &t.fwdC, t.sys.server.file
	if it.dir == reverse {
		ctr, f = &t.revC, t.sys.client.file
	}
	if _, err := f.Write(it.pkt.Data); err != nil {
		ctr.writeErr.Add(1)
		return
	}
	ctr.out.Add(1)
	ctr.outBytes.Add(uint64(len(it.pkt.Data)))
	if t.cfg.Observe != nil {
		t.cfg.Observe(TUNPacket{
			Forward: it.dir == forward,
			Data:    it.pkt.Data,
			In:      it.wall,
			Out:     t.clk.Wall(),
			Queue:   it.pkt.QueueDelay,
		})
	}
}

// InClient runs fn on a locked OS thread whose network namespace is the
// client's: sockets fn opens stay in that namespace after it returns
// (e.g. transport.Dial / transport.Listen / net.Listen), and a process fn
// starts with os/exec runs in it (set Pdeathsig). See InServer.
func (t *TUN) InClient(fn func() error) error { return t.sys.run(&t.sys.client, fn) }

// InServer runs fn on a locked OS thread whose network namespace is the
// server's: sockets fn opens stay in that namespace after it returns, and
// a process fn starts with os/exec runs in it.
//
// fn runs on its own goroutine, locked to a thread that enters the
// namespace and returns to the original one afterwards; goroutines fn
// starts run elsewhere, in the original namespace. InServer returns fn's
// error; a panic in fn is re-raised in the caller, and runtime.Goexit
// (t.FailNow in a test) is repeated in the caller. A child process
// started in fn must set SysProcAttr.Pdeathsig = syscall.SIGKILL so that
// it dies with this process (and with it the namespace it holds); note
// that Linux sends Pdeathsig when the starting thread exits, which here
// happens only if it could not get back to its namespace. After Close it
// returns ErrClosed without running fn.
func (t *TUN) InServer(fn func() error) error { return t.sys.run(&t.sys.server, fn) }

func (s *tunSys) run(side *tunSide, fn func() error) error {
	type result struct {
		err     error
		p       any
		aborted bool // fn panicked or called runtime.Goexit
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("emu: current network namespace: %w", err)}
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			_ = orig.Close()
			runtime.UnlockOSThread()
			res <- result{err: ErrClosed}
			return
		}
		err = netns.Set(side.ns)
		s.mu.RUnlock()
		if err != nil {
			// Set failed: still in orig.
			_ = orig.Close()
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("emu: enter the %s namespace: %w", side.name, err)}
			return
		}
		var r result
		returned := false
		defer func() {
			p := recover()
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			} // else: the thread stays locked and dies with this goroutine
			_ = orig.Close()
			if !returned {
				r.aborted, r.p = true, p
			}
			res <- r
		}()
		r.err = fn()
		returned = true
	}()
	r := <-res
	if r.aborted {
		if r.p != nil {
			panic(r.p)
		}
		runtime.Goexit()
	}
	return r.err
}

// Close stops the router: it closes both TUN devices (they disappear),
// waits for its goroutines, drops the packets still in the links, and
// closes its namespace handles (the namespaces disappear unless a socket
// or process the caller left in one still holds it). It is idempotent;
// later calls return the first call's result.
func (t *TUN) Close() error {
	t.closeOnce.Do(func() {
		close(t.done)
		t.closeErr = t.sys.teardown() // wakes the readers
		t.wg.Wait()
		t.mu.Lock()
		st := t.statsLocked()
		t.final = &st
		t.discard()
		t.mu.Unlock()
	})
	return t.closeErr
}
