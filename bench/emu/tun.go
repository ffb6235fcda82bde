package emu

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fresh-udp/fresh/bench/scenario"
	"github.com/fresh-udp/fresh/clock"
)

// ErrNoTUN is wrapped by NewTUN's error when the TUN router cannot run
// here: not Linux, not root, or no /dev/net/tun. The error says which.
var ErrNoTUN = errors.New("emu: TUN router unavailable")

// The TUN router's point-to-point addresses: the client namespace's TUN
// has clientIP with peer serverIP, the server's the reverse.
var (
	tunClientIP = netip.AddrFrom4([4]byte{10, 199, 0, 1})
	tunServerIP = netip.AddrFrom4([4]byte{10, 199, 0, 2})
)

// Settings of the namespaces the TUN router builds.
const (
	tunName     = "fresh0" // the device's name, in both namespaces
	tunTxQueue  = 10000    // packets; the kernel default (500) drops outside the emulated queue at high rates
	tunMaxPkt   = 65535    // bytes: the largest IPv4 packet
	tunTCPMem   = "4096 131072 16777216"
	tunTCPWMem  = "4096 16384 16777216"
	tunSockMax  = "16777216"    // net.core.rmem_max / wmem_max
	tunReadSize = tunMaxPkt + 1 // one more, so an oversize read shows
)

// TUNConfig configures a TUN router. Zero fields take the documented
// defaults; Forward and Reverse each need a capacity (a rate, a trace or
// a rate walk).
type TUNConfig struct {
	Forward, Reverse scenario.Path // client→server and server→client links
	Seed             int64         // link randomness (as Relay: forward seed*2+1, reverse seed*2+2)
	Clock            clock.Clock   // default clock.NewSystem()
	Spin             time.Duration // as RelayConfig.Spin
	// Observe, if set, is called on the router goroutine for every packet
	// that leaves a link (after it crossed the emulated bottleneck), with
	// the IP packet (valid only during the call), its direction, when the
	// router read it from the sending side's TUN (In) and when it wrote it
	// to the other side's TUN (Out), and its time in the bottleneck queue.
	// It must be quick. Dropped packets are not observed but counted in Stats.
	Observe func(p TUNPacket)
}

func (c *TUNConfig) fill() error {
	if c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	if c.Spin < 0 {
		return fmt.Errorf("%w: spin %v is negative", ErrInvalidConfig, c.Spin)
	}
	return nil
}

// TUNPacket is one packet that crossed the TUN router, as Observe sees it.
type TUNPacket struct {
	Forward bool          // client → server
	Data    []byte        // the IP packet
	In, Out time.Time     // router read / router write (wall time, the same clock for both)
	Queue   time.Duration // time in the bottleneck queue
}

// ClientAddr is the client namespace's address (10.199.0.1).
func (t *TUN) ClientAddr() netip.Addr { return tunClientIP }

// ServerAddr is the server namespace's address (10.199.0.2).
func (t *TUN) ServerAddr() netip.Addr { return tunServerIP }

// TUN is the TUN router: two network namespaces joined through the
// emulated bottleneck; see the package doc, "TUN router". Its methods are
// safe for concurrent use.
type TUN struct {
	cfg TUNConfig
	sched

	fwdC, revC dirCounters
	final      *RelayStats // under mu: set by Close

	closeOnce sync.Once
	closeErr  error

	sys tunSys // the platform's part: namespaces, devices
}

// Stats returns both directions' counters (Clients and
// DroppedNoClientSlot are unused). Datagrams are IP packets here and
// bytes their whole length. After Close they stay at their final values.
func (t *TUN) Stats() RelayStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.final != nil {
		return *t.final
	}
	return t.statsLocked()
}

func (t *TUN) statsLocked() RelayStats {
	if t.fwd == nil { // NewTUN failed before the links existed
		return RelayStats{}
	}
	return RelayStats{
		Forward: t.fwdC.snapshot(t.fwd.Stats()),
		Reverse: t.revC.snapshot(t.rev.Stats()),
	}
}

// SetPath applies path changes now (nil: leave that direction alone), as
// Relay.SetPath.
func (t *TUN) SetPath(forward, reverse *scenario.PathChange) error {
	return t.applyChange(forward, reverse, func() bool { return t.final != nil })
}

// accept checks the packet in it (read from the sending side's TUN),
// fills in the link fields and counts it; false means it was dropped
// (not IPv4) and recycled.
func (t *TUN) accept(it *item, n int, dir direction) bool {
	ctr := &t.fwdC
	if dir == reverse {
		ctr = &t.revC
	}
	p := it.buf[:n]
	total, tos, flow, ok := ipv4Info(p)
	if !ok {
		ctr.notIPv4.Add(1)
		t.pool.put(it)
		return false
	}
	ctr.in.Add(1)
	ctr.inBytes.Add(uint64(total))
	it.pkt.Data = p[:total]
	it.pkt.Size = total
	it.tos = tos
	it.pkt.DSCP = tos >> 2
	it.pkt.FlowKey = flow | uint64(dir)
	it.dir = dir
	return true
}

// CloseOnSignal closes t when the process gets SIGINT or SIGTERM, then
// raises the signal again so that it has its usual effect: a program
// that does not handle it itself terminates (with the namespaces and
// devices already gone); one that does (signal.Notify) gets it twice.
// stop cancels this; call it once t is closed by other means.
//
// Even without this, a killed process leaks nothing: the namespaces are
// anonymous and the devices non-persistent, so both die with the process's
// file descriptors (and with the processes it started in them, if those
// set Pdeathsig).
func CloseOnSignal(t *TUN) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			_ = t.Close()
			signal.Stop(ch)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(sig)
			}
		case <-quit:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}

// ipv4Info checks that p is a well-formed IPv4 packet (version 4, header
// length and total length consistent with len(p)) and returns its TOS
// byte, its length (the header's total length) and a flow key: a hash of the 5-tuple (protocol, addresses and, for
// TCP, UDP, UDP-Lite, SCTP and DCCP first fragments, ports; addresses and
// protocol otherwise), low bit cleared for the caller's direction.
func ipv4Info(p []byte) (total int, tos uint8, flow uint64, ok bool) {
	if len(p) < 20 || p[0]>>4 != 4 {
		return 0, 0, 0, false
	}
	ihl := int(p[0]&0x0f) * 4
	total = int(p[2])<<8 | int(p[3])
	if ihl < 20 || total < ihl || total > len(p) {
		return 0, 0, 0, false
	}
	proto := p[9]
	h := uint64(14695981039346656037)
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	mix(proto)
	for _, b := range p[12:20] { // source and destination addresses
		mix(b)
	}
	fragOff := (int(p[6])&0x1f)<<8 | int(p[7])
	switch proto {
	case 6, 17, 33, 132, 136: // TCP, UDP, DCCP, SCTP, UDP-Lite: ports first
		if fragOff == 0 && total >= ihl+4 {
			for _, b := range p[ihl : ihl+4] {
				mix(b)
			}
		}
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return total, p[1], h &^ 1, true
}

// TCPListening reports whether a TCP socket listens on port in pid's
// network namespace (/proc/PID/net/tcp, state 0A; false where there is no
// such file): how to wait for a server a process started in a namespace
// (InServer) listens, without a probing connection that would use up a
// one-shot server such as iperf3 -s -1.
func TCPListening(pid int, port uint16) bool {
	fh, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	defer fh.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
			return true
		}
	}
	return false
}
