// Command certgen writes a throwaway set of TLS credentials for the agent
// and monitor examples: a CA, a certificate for the monitor and one for an
// agent, both signed by that CA.
//
//	go run ./examples/certgen -dir certs [-hosts localhost,127.0.0.1,::1] [-agent-name agent-1] [-force]
//
// It writes five PEM files into -dir (created if missing):
//
//	ca.pem            the CA's certificate: the agent verifies the monitor
//	                  against it (-ca), the monitor the agents (-ca)
//	monitor.pem       the monitor's certificate, valid for -hosts (the
//	monitor-key.pem   names and addresses agents dial), and its key
//	agent.pem         the agent's certificate, CommonName -agent-name (the
//	agent-key.pem     identity the monitor prints), and its key
//
// Key files are readable by their owner only (mode 0600). It refuses to
// overwrite any of them unless -force. The CA's own key is not kept: to
// add an agent, generate a new set (-force) and hand it out again.
//
// Then, in two terminals:
//
//	go run ./examples/monitor -listen 127.0.0.1:4433 -cert certs/monitor.pem -key certs/monitor-key.pem -ca certs/ca.pem
//	go run ./examples/agent -server 127.0.0.1:4433 -ca certs/ca.pem -cert certs/agent.pem -key certs/agent-key.pem
//
// These credentials are for trying fresh out and for tests (see
// transport/devcert): in production issue certificates from your own CA
// and keep its key offline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/transport/devcert"
)

func main() { cli.Main("certgen", run) }

// file is one output: its name in -dir, its content and mode.
type file struct {
	name string
	data []byte
	mode os.FileMode
}

func run(_ context.Context, args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("certgen", flag.ContinueOnError)
	dir := fset.String("dir", "certs", "`directory` to write the files into (created if missing)")
	hosts := fset.String("hosts", "localhost,127.0.0.1,::1", "comma-separated DNS names and IP addresses the monitor's certificate is valid for: the `hosts` agents dial")
	agentName := fset.String("agent-name", "agent-1", "the agent certificate's CommonName: the `name` the monitor prints as its identity")
	force := fset.Bool("force", false, "overwrite existing files")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &cli.UsageError{Err: err}
	}
	if fset.NArg() > 0 {
		return cli.Usagef("unexpected argument %q (flags go before it; see -h)", fset.Arg(0))
	}
	var hostList []string
	for h := range strings.SplitSeq(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			h = strings.Trim(h, "[]")
			if err := checkHost(h); err != nil {
				return cli.Usagef("-hosts: %v", err)
			}
			hostList = append(hostList, h)
		}
	}
	switch {
	case len(hostList) == 0:
		return cli.Usagef("-hosts: give at least one name or address agents dial the monitor by")
	case strings.TrimSpace(*agentName) == "":
		return cli.Usagef("-agent-name: must not be empty")
	}

	names := []string{"ca.pem", "monitor.pem", "monitor-key.pem", "agent.pem", "agent-key.pem"}
	if !*force {
		var exist []string
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(*dir, n)); err == nil {
				exist = append(exist, n)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("-dir: %w", err)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("-dir %s already holds %s: not overwriting (give -force to replace them, or another -dir)",
				*dir, strings.Join(exist, ", "))
		}
	}

	ca, err := devcert.NewCA("fresh certgen CA")
	if err != nil {
		return err
	}
	monitor, err := ca.Issue(hostList[0], hostList...)
	if err != nil {
		return fmt.Errorf("monitor certificate: %w", err)
	}
	agent, err := ca.Issue(*agentName)
	if err != nil {
		return fmt.Errorf("agent certificate: %w", err)
	}
	monCert, monKey, err := devcert.PEM(monitor)
	if err != nil {
		return err
	}
	agCert, agKey, err := devcert.PEM(agent)
	if err != nil {
		return err
	}
	files := []file{
		{"ca.pem", ca.CertPEM(), 0o644},
		{"monitor.pem", monCert, 0o644},
		{"monitor-key.pem", monKey, 0o600},
		{"agent.pem", agCert, 0o644},
		{"agent-key.pem", agKey, 0o600},
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("-dir: %w", err)
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(*dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "certgen: wrote %s/{%s}\n", *dir, strings.Join(names, ","))
	fmt.Fprintf(stdout, "  monitor: CommonName %s, valid for %s\n", hostList[0], strings.Join(hostList, ", "))
	fmt.Fprintf(stdout, "  agent:   CommonName %s\n", *agentName)
	d := *dir
	fmt.Fprintf(stdout, "Run:\n  go run ./examples/monitor -listen 127.0.0.1:4433 -cert %s -key %s -ca %s\n",
		filepath.Join(d, "monitor.pem"), filepath.Join(d, "monitor-key.pem"), filepath.Join(d, "ca.pem"))
	fmt.Fprintf(stdout, "  go run ./examples/agent -server 127.0.0.1:4433 -ca %s -cert %s -key %s\n",
		filepath.Join(d, "ca.pem"), filepath.Join(d, "agent.pem"), filepath.Join(d, "agent-key.pem"))
	return nil
}

// writeFile writes data to path with mode, also when path exists (-force)
// with a looser mode: a key must not stay world-readable.
func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkHost refuses what a certificate cannot be valid for, and says why:
// an address with a port (agents dial host:port, the certificate names
// the host), a URL, a name with characters DNS names do not have.
func checkHost(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	if strings.Contains(h, "://") {
		return fmt.Errorf("%q is a URL: give the host name alone", h)
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		return fmt.Errorf("%q has a port: give the host alone (%s), a certificate is valid for any port", h, host)
	}
	name := strings.TrimPrefix(h, "*.") // a wildcard covers one label
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") ||
			strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return fmt.Errorf("%q is neither an IP address nor a DNS name (letters, digits and hyphens, between dots)", h)
		}
	}
	return nil
}
