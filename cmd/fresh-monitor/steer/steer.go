//go:build linux

// Package steer routes the datagrams of one UDP port shared by several
// processes (SO_REUSEPORT) to the process that owns their connection, by
// the server ID in the connection ID each Listener chose (transport's
// Transport.ServerID, in the QUIC-LB draft's plaintext layout), with an
// eBPF program of type BPF_PROG_TYPE_SK_REUSEPORT attached to the socket
// group.
//
// Without it the kernel picks a socket of the group by a hash of the
// 4-tuple: a connection survives only while its client's address and
// port stay the same and the number of processes does not change. With
// it, a datagram whose connection ID names server ID i goes to the socket
// process i registered, whatever its source: a NAT rebinding keeps the
// connection (the owning process migrates it), and starting or stopping
// a process only moves new connections. What carries no routable ID (a
// client's first flight, under the client's own ID; another protocol
// version; a short datagram) or names a process that is gone is left to
// the kernel's hash; a process that receives a datagram for a
// connection it does not hold answers with a stateless reset only if the
// connection ID is its own server ID's (the connection of its previous
// life), as without the program.
//
// The program and the socket map are pinned in a bpffs directory that
// every process of the group opens (Open), so that a process started
// later joins the same map; each process registers its own socket under
// its server ID (Group.Join). The kernel removes a socket from the map
// when it closes, so a process that exits leaves its slot empty.
//
// Needs Linux ≥ 4.19 (SK_REUSEPORT programs and REUSEPORT_SOCKARRAY maps),
// CAP_BPF (or root), and a bpffs mounted at the directory's file system
// (mount -t bpf bpf /sys/fs/bpf).
package steer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// MaxServers is the number of server IDs a group routes: the ID is the
// first byte after the connection ID's first octet (a 1-byte
// Transport.ServerID), and the map has a slot for each value.
const MaxServers = 256

// Offsets in the datagram the program reads. The program sees the UDP
// header first (struct sk_reuseport_md's data starts at the UDP header
// for UDP sockets); fresh's header puts the 8-byte connection ID at bytes
// 4-11 of every version's header (the version invariants), so the ID's
// first octet is at 8+4 and the server ID right after it.
const (
	udpHeaderLen = 8
	connIDOffset = 4
	firstOctet   = udpHeaderLen + connIDOffset
)

// Pinned object names in the group's directory.
const (
	mapName  = "sockets"
	progName = "select"
)

// Group is one process's handle on a steered SO_REUSEPORT group.
type Group struct {
	sockets *ebpf.Map
	prog    *ebpf.Program
}

// Open loads the group pinned in dir, or creates and pins it if dir has
// none yet. configRotation is the Transport.ConfigRotation every process
// of the group uses (0-6): the program only routes connection IDs of that
// configuration and a 1-byte server ID. dir must be on a bpffs; it is
// created if missing.
func Open(dir string, configRotation uint8) (*Group, error) {
	if configRotation > 6 {
		return nil, fmt.Errorf("steer: config rotation %d: must be 0-6 (7 is unroutable)", configRotation)
	}
	if err := onBPFFS(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("steer: %w", err)
	}
	g := &Group{}
	var err error
	if g.sockets, err = openMap(filepath.Join(dir, mapName)); err != nil {
		return nil, err
	}
	// Each process loads its own copy of the program over the shared map
	// and attaches it to its socket: the group runs the last one attached,
	// and they are the same program, so which one it is does not matter.
	// The copy is pinned too, for an operator's bpftool.
	g.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "fresh_steer",
		Type:         ebpf.SkReuseport,
		AttachType:   ebpf.AttachSkReuseportSelect,
		Instructions: program(g.sockets.FD(), configRotation),
		License:      "Dual MIT/GPL",
	})
	if err != nil {
		g.sockets.Close()
		return nil, fmt.Errorf("steer: loading the SK_REUSEPORT program (needs CAP_BPF and Linux ≥ 4.19): %w", err)
	}
	pin := filepath.Join(dir, progName)
	_ = os.Remove(pin)
	_ = g.prog.Pin(pin) // best effort: routing does not depend on it
	return g, nil
}

// openMap loads the pinned socket map, or creates and pins it. Two
// processes starting at once may both create one: the loser of the pin
// loads the winner's.
func openMap(path string) (*ebpf.Map, error) {
	for range 3 {
		m, err := ebpf.LoadPinnedMap(path, nil)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("steer: %s: %w", path, err)
		}
		m, err = ebpf.NewMap(&ebpf.MapSpec{
			Name:       "fresh_sockets",
			Type:       ebpf.ReusePortSockArray,
			KeySize:    4,
			ValueSize:  8,
			MaxEntries: MaxServers,
		})
		if err != nil {
			return nil, fmt.Errorf("steer: creating the REUSEPORT_SOCKARRAY map (needs CAP_BPF and Linux ≥ 4.19): %w", err)
		}
		if err := m.Pin(path); err == nil {
			return m, nil
		} else if !errors.Is(err, os.ErrExist) {
			m.Close()
			return nil, fmt.Errorf("steer: pinning %s: %w", path, err)
		}
		m.Close()
	}
	return nil, fmt.Errorf("steer: %s: could not load or create the socket map", path)
}

// onBPFFS fails with the command to fix it if dir (or, if it does not
// exist yet, the directory it would be made in) is not on a bpffs:
// pinning elsewhere fails with a bare EPERM.
func onBPFFS(dir string) error {
	at := filepath.Clean(dir)
	var st unix.Statfs_t
	for {
		err := unix.Statfs(at, &st)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.ENOENT) || filepath.Dir(at) == at {
			return fmt.Errorf("steer: %s: %w", at, err)
		}
		at = filepath.Dir(at)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("steer: %s is not on a bpffs; mount one with: mount -t bpf bpf %s", dir, at)
	}
	return nil
}

// Join attaches the program to conn's SO_REUSEPORT group and registers
// conn under serverID, the byte its Transport's ServerID holds. conn must
// be bound with SO_REUSEPORT (transport.ListenUDP(addr, true)). Another
// process's socket registered under the same ID is replaced: give each
// process of the group its own.
func (g *Group) Join(conn *net.UDPConn, serverID byte) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("steer: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		// Attaching to one socket attaches to its whole group.
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_EBPF, g.prog.FD())
		if serr != nil {
			serr = fmt.Errorf("steer: attaching the program (SO_ATTACH_REUSEPORT_EBPF; is the socket bound with SO_REUSEPORT?): %w", serr)
			return
		}
		if serr = g.sockets.Update(uint32(serverID), uint64(fd), ebpf.UpdateAny); serr != nil {
			serr = fmt.Errorf("steer: registering server ID %d (the group's sockets must all be bound to one address with SO_REUSEPORT): %w", serverID, serr)
		}
	})
	if err != nil {
		return fmt.Errorf("steer: %w", err)
	}
	return serr
}

// Close releases this process's handles. The pinned map and program stay
// for the other processes; the kernel drops a closed socket from the map.
func (g *Group) Close() error {
	return errors.Join(g.prog.Close(), g.sockets.Close())
}

// program returns the SK_REUSEPORT program: read the connection ID's
// first octet and the byte after it; if the octet is this configuration's
// (configuration rotation in the top 3 bits, the ID's length less one, 7,
// in the low 5: the QUIC-LB plaintext layout), select the socket
// registered under that server ID. Anything else (a datagram too short,
// another configuration, an empty slot) returns SK_PASS with nothing
// selected, which the kernel takes as "use the hash" (reuseport_select_sock).
func program(sockets int, configRotation uint8) asm.Instructions {
	const skPass = 1
	octet := int64(configRotation)<<5 | 7
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // the context, for both helpers
		// bpf_skb_load_bytes(ctx, firstOctet, fp-8, 2): works whether or
		// not the bytes are in the skb's linear part.
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, firstOctet),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 2),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.Byte),
		asm.JNE.Imm(asm.R1, int32(octet), "pass"),
		// key = server ID, a u32 on the stack.
		asm.LoadMem(asm.R1, asm.RFP, -7, asm.Byte),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.Word),
		// bpf_sk_select_reuseport(ctx, sockets, &key, 0); its error (an
		// empty slot) is ignored: nothing is selected then.
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, sockets),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnSkSelectReuseport.Call(),
		asm.Mov.Imm(asm.R0, skPass).WithSymbol("pass"),
		asm.Return(),
	}
}
