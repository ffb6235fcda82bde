// Command certgen writes a throwaway set of TLS credentials for the agent
// and monitor examples and cmd/fresh-monitor: a CA, a certificate for the
// monitor and one for an agent (or a fleet of them), all signed by that
// CA.
//
//	go run ./examples/certgen -dir certs [-hosts localhost,127.0.0.1,::1] [-agent-name agent-1] [-force]
//	go run ./examples/certgen -dir certs -agents 100 [-prefix agent-] [-first 1]
//	go run ./examples/certgen -ca-dir certs -agents 50 -first 101
//
// It writes into -dir (created if missing):
//
//	ca.pem            the CA's certificate: the agent verifies the monitor
//	                  against it (-ca), the monitor the agents (-ca)
//	ca-key.pem        the CA's private key: keep it to add agents later
//	                  (-ca-dir), or delete it to make the set closed
//	monitor.pem       the monitor's certificate, valid for -hosts (the
//	monitor-key.pem   names and addresses agents dial), and its key
//	agent.pem         the agent's certificate, CommonName -agent-name (the
//	agent-key.pem     identity the monitor prints), and its key
//
// With -agents N it writes N agents instead of the one, each in a
// directory of its own named by its CommonName, -prefix and a number
// from -first, four digits at least (agent-0001, agent-0002, …):
//
//	agents/agent-0001/ca.pem          the CA's certificate (a copy)
//	agents/agent-0001/agent.pem       the agent's certificate and key
//	agents/agent-0001/agent-key.pem
//
// so that one directory is what one device needs, under the same file
// names as the single agent's: copy agents/<name>/ to the device and run
// the agent with -ca <dir>/ca.pem -cert <dir>/agent.pem -key
// <dir>/agent-key.pem. The monitor stores each device under its
// CommonName (the directory's name). bench/cmd/fleetload -certs DIR runs
// a load test with such a fleet.
//
// With -ca-dir DIR it signs the agents with the CA already in DIR
// (ca.pem and ca-key.pem, as an earlier run wrote them) instead of making
// a new one, and writes only the agents (into -dir, default DIR itself):
// the monitor and the agents already out keep working, since the CA is
// the same. -first numbers the new agents on from the last batch.
//
// Key files are readable by their owner only (mode 0600). It refuses to
// overwrite any file unless -force, and then writes none of them.
//
// Then, in two terminals:
//
//	go run ./examples/monitor -listen 127.0.0.1:4433 -cert certs/monitor.pem -key certs/monitor-key.pem -ca certs/ca.pem
//	go run ./examples/agent -server 127.0.0.1:4433 -ca certs/ca.pem -cert certs/agent.pem -key certs/agent-key.pem
//
// These credentials are for trying fresh out and for tests: in production
// issue certificates from your own CA and keep its key offline (this one's
// is a file next to the certificates).
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
	"strconv"
	"strings"
	"syscall"

	"github.com/fresh-udp/fresh/examples/internal/cli"
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
	dir := fset.String("dir", "certs", "`directory` to write the files into (created if missing; with -ca-dir, default that directory)")
	hosts := fset.String("hosts", "localhost,127.0.0.1,::1", "comma-separated DNS names and IP addresses the monitor's certificate is valid for: the `hosts` agents dial")
	agentName := fset.String("agent-name", "agent-1", "the agent certificate's CommonName: the `name` the monitor prints as its identity (without -agents)")
	agents := fset.Int("agents", 0, "issue `N` agents, each in agents/<name>/ (instead of the one agent.pem)")
	first := fset.Int("first", 1, "the `number` of the first of -agents (to add agents after earlier ones)")
	prefix := fset.String("prefix", "agent-", "the agents' CommonNames are `prefix` and a number, agent-0001, …")
	caDir := fset.String("ca-dir", "", "sign -agents with the CA in this `directory` (ca.pem, ca-key.pem) instead of a new one; writes only the agents")
	force := fset.Bool("force", false, "overwrite existing files")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &cli.UsageError{Err: err}
	}
	set := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fset.NArg() > 0 {
		return cli.Usagef("unexpected argument %q (flags go before it; see -h)", fset.Arg(0))
	}
	fleet := set["agents"]
	switch {
	case fleet && *agents <= 0:
		return cli.Usagef("-agents %d: give a positive number of agents to issue", *agents)
	case *first < 1:
		return cli.Usagef("-first %d: agents are numbered from 1", *first)
	case fleet && *first+*agents-1 > maxAgentNumber:
		return cli.Usagef("-first %d -agents %d: numbers above %d", *first, *agents, maxAgentNumber)
	case (set["first"] || set["prefix"]) && !fleet:
		return cli.Usagef("-first and -prefix number the agents of -agents: give -agents N")
	case fleet && set["agent-name"]:
		return cli.Usagef("-agent-name names the one agent; with -agents the names are -prefix and a number")
	case *caDir != "" && !fleet:
		return cli.Usagef("-ca-dir signs new agents with an existing CA: give -agents N")
	case *caDir != "" && set["hosts"]:
		return cli.Usagef("-hosts is for the monitor's certificate, which -ca-dir does not make (the monitor keeps its own)")
	case strings.TrimSpace(*agentName) == "":
		return cli.Usagef("-agent-name: must not be empty")
	}
	if fleet {
		if err := checkPrefix(*prefix); err != nil {
			return cli.Usagef("-prefix: %v", err)
		}
	}
	if *caDir != "" && !set["dir"] {
		*dir = *caDir
	}
	var hostList []string
	if *caDir == "" {
		for h := range strings.SplitSeq(*hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				h = strings.Trim(h, "[]")
				if err := checkHost(h); err != nil {
					return cli.Usagef("-hosts: %v", err)
				}
				hostList = append(hostList, h)
			}
		}
		if len(hostList) == 0 {
			return cli.Usagef("-hosts: give at least one name or address agents dial the monitor by")
		}
	}

	// What is to be written, by name in -dir.
	var names []string
	if *caDir == "" {
		names = append(names, "ca.pem", "ca-key.pem", "monitor.pem", "monitor-key.pem")
		if !fleet {
			names = append(names, "agent.pem", "agent-key.pem")
		}
	}
	var fleetNames []string
	if fleet {
		fleetNames = agentNames(*prefix, *first, *agents)
		for _, n := range fleetNames {
			for _, f := range agentFiles {
				names = append(names, filepath.Join("agents", n, f))
			}
		}
	}
	if !*force {
		if err := refuseExisting(*dir, names); err != nil {
			return err
		}
	}

	var ca *authority
	var err error
	if *caDir != "" {
		ca, err = loadAuthority(*caDir)
	} else {
		ca, err = newAuthority("fresh certgen CA")
	}
	if err != nil {
		return err
	}
	var files []file
	if *caDir == "" {
		caKey, err := ca.keyPEM()
		if err != nil {
			return err
		}
		monCert, monKey, err := ca.issue(hostList[0], hostList...)
		if err != nil {
			return fmt.Errorf("monitor certificate: %w", err)
		}
		files = append(files, file{"ca.pem", ca.certPEM(), 0o644}, file{"ca-key.pem", caKey, 0o600},
			file{"monitor.pem", monCert, 0o644}, file{"monitor-key.pem", monKey, 0o600})
		if !fleet {
			agCert, agKey, err := ca.issue(*agentName)
			if err != nil {
				return fmt.Errorf("agent certificate: %w", err)
			}
			files = append(files, file{"agent.pem", agCert, 0o644}, file{"agent-key.pem", agKey, 0o600})
		}
	}
	for _, n := range fleetNames {
		c, k, err := ca.issue(n)
		if err != nil {
			return fmt.Errorf("agent %s: %w", n, err)
		}
		d := filepath.Join("agents", n)
		files = append(files, file{filepath.Join(d, "ca.pem"), ca.certPEM(), 0o644},
			file{filepath.Join(d, "agent.pem"), c, 0o644}, file{filepath.Join(d, "agent-key.pem"), k, 0o600})
	}
	for _, f := range files {
		path := filepath.Join(*dir, f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("-dir: %w", err)
		}
		if err := writeFile(path, f.data, f.mode); err != nil {
			return err
		}
	}

	d := *dir
	if *caDir == "" {
		fmt.Fprintf(stdout, "certgen: wrote %s/{ca.pem,ca-key.pem,monitor.pem,monitor-key.pem}\n", d)
		fmt.Fprintf(stdout, "  monitor: CommonName %s, valid for %s\n", hostList[0], strings.Join(hostList, ", "))
		fmt.Fprintf(stdout, "  ca-key.pem signs more agents later (-ca-dir %s -agents N -first …); keep it private, or delete it\n", d)
	} else {
		fmt.Fprintf(stdout, "certgen: signed with the CA in %s\n", *caDir)
	}
	agentDir := d
	if fleet {
		fmt.Fprintf(stdout, "  agents:  %s … %s (%d), each in %s/{%s}\n", fleetNames[0], fleetNames[len(fleetNames)-1], len(fleetNames),
			filepath.Join(d, "agents", "<name>"), strings.Join(agentFiles, ","))
		agentDir = filepath.Join(d, "agents", fleetNames[0])
	} else {
		fmt.Fprintf(stdout, "  agent:   CommonName %s in %s/{agent.pem,agent-key.pem}\n", *agentName, d)
	}
	fmt.Fprintf(stdout, "Run:\n")
	if *caDir == "" {
		fmt.Fprintf(stdout, "  go run ./cmd/fresh-monitor -listen 127.0.0.1:4433 -cert %s -key %s -ca %s\n",
			filepath.Join(d, "monitor.pem"), filepath.Join(d, "monitor-key.pem"), filepath.Join(d, "ca.pem"))
	}
	fmt.Fprintf(stdout, "  go run ./examples/agent -server 127.0.0.1:4433 -ca %s -cert %s -key %s\n",
		filepath.Join(agentDir, "ca.pem"), filepath.Join(agentDir, "agent.pem"), filepath.Join(agentDir, "agent-key.pem"))
	return nil
}

// agentFiles are the files of one agent's directory, agents/<name>/.
var agentFiles = []string{"ca.pem", "agent.pem", "agent-key.pem"}

// maxAgentNumber bounds -first and -agents: a fleet of a million devices
// is past what a throwaway CA is for, and a typo (-agents 1000000000)
// should not fill the disk.
const maxAgentNumber = 999_999

// agentNames are the CommonNames of n agents from first: prefix and the
// number in four digits at least, so that names sort in number order
// across batches below 10,000.
func agentNames(prefix string, first, n int) []string {
	width := max(4, len(strconv.Itoa(first+n-1)))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%0*d", prefix, width, first+i)
	}
	return out
}

// checkPrefix keeps agent names usable as directory names and KV keys
// unescaped (cmd/fresh-monitor's monitor.Key): letters, digits, "-" and
// "_".
func checkPrefix(p string) error {
	if strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("%q: letters, digits, \"-\" and \"_\" only (it names directories and keys)", p)
	}
	return nil
}

// refuseExisting fails, naming the first few, if any of names exists in
// dir: nothing is written then.
func refuseExisting(dir string, names []string) error {
	var exist []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			exist = append(exist, n)
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("-dir: %w", err)
		}
	}
	if len(exist) == 0 {
		return nil
	}
	list := strings.Join(exist[:min(len(exist), 3)], ", ")
	if len(exist) > 3 {
		list += fmt.Sprintf(" and %d more", len(exist)-3)
	}
	return fmt.Errorf("-dir %s already holds %s: not overwriting (give -force to replace them, another -dir, or -first to number new agents after the existing ones)",
		dir, list)
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
