package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/fresh-udp/fresh/transport"
)

// ExplainListen adds to an error opening the address addr, given with
// flag ("-listen", "-p"), what to change: another port, an address of this
// host, the form of the address.
func ExplainListen(flag, addr string, err error) error {
	var hint string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		hint = fmt.Sprintf("the port is in use (another server, or another program): stop it or give %s another port", flag)
	case errors.Is(err, syscall.EACCES):
		hint = fmt.Sprintf("not allowed to bind this port (below 1024 needs privileges): give %s a higher port", flag)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		hint = "no interface of this host has that address: give one it has, or :PORT for all"
	case missingPort(err):
		hint = "want HOST:PORT or :PORT, such as :4433"
	default:
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return fmt.Errorf("%s %s: %w\n  (%s)", flag, addr, err, hint)
}

// missingPort says whether err is net's complaint about an address
// without a port.
func missingPort(err error) bool {
	var ae *net.AddrError
	return errors.As(err, &ae) && strings.Contains(ae.Err, "missing port")
}

// explainAddr is ExplainDial's hint for a Dial that failed before TLS
// had a say: the address's form, its name, nobody answering. "" if none.
func explainAddr(err error, server string) string {
	var dnsErr *net.DNSError
	switch {
	case missingPort(err):
		return "want HOST:PORT, such as 127.0.0.1:4433"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("no such host: check the %s's name", server)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing listens there: is the %s running, on this address and port?", server)
	case errors.Is(err, transport.ErrHandshake) && errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer: is the %s running there, and does a firewall let UDP to that port through?", server)
	}
	return ""
}
