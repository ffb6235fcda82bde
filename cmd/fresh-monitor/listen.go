package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/steer"
	"github.com/fresh-udp/fresh/transport"
)

// listen opens -listen's socket for tr (shared with the other processes
// on the port with -reuseport or -steer) and sets tr's server ID; with
// -steer it joins the port's steering program, so that this process gets
// the datagrams of the connections whose IDs name -server-id. The
// returned function closes what it opened.
func listen(o *options, tr *transport.Transport) (*net.UDPConn, func(), error) {
	udp, err := transport.ListenUDP(o.listen, o.reusePort || o.steer != "")
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = ": another process has this UDP port: give -listen another port"
			if !o.reusePort && o.steer == "" {
				hint += ", or, if it is another fresh-monitor, share the port: all of them with -reuseport (or -steer)"
			}
		}
		return nil, nil, fmt.Errorf("-listen %s: %w%s", o.listen, err, hint)
	}
	if o.serverID >= 0 {
		tr.ServerID = []byte{byte(o.serverID)}
	}
	if o.steer == "" {
		return udp, func() { _ = udp.Close() }, nil
	}
	g, err := steer.Open(o.steer, tr.ConfigRotation)
	if err == nil {
		err = g.Join(udp, byte(o.serverID))
		if err != nil {
			_ = g.Close()
		}
	}
	if err != nil {
		_ = udp.Close()
		return nil, nil, fmt.Errorf("-steer %s: %w", o.steer, err)
	}
	return udp, func() { _ = udp.Close(); _ = g.Close() }, nil
}
