// Command fresh-monitor is the receiving side of a fleet of fresh agents
// (examples/agent, or your own on transport.Dial) as a service: it accepts
// the agents over fresh's transport and stores into NATS JetStream each
// device's freshest status update (a key-value bucket, one revision per
// key) and its uploads (an object store), publishes every update on
// fresh.update.<device> for live subscribers, and serves Prometheus
// metrics. The work is package monitor's, which a server of your own can
// embed instead.
//
//	go run ./cmd/fresh-monitor
//	go run ./cmd/fresh-monitor -cert certs/monitor.pem -key certs/monitor-key.pem -ca certs/ca.pem
//	go run ./cmd/fresh-monitor -nats nats://nats-1:4222,nats://nats-2:4222 -cert … -key … -ca …
//
// Without -nats it runs an embedded NATS server with JetStream, storing in
// -data (default $TMPDIR/fresh-monitor; give a directory of your own for
// data you keep) and listening for other NATS clients (the nats CLI, your
// services) on -nats-listen; with -nats it connects to that server or
// cluster instead and embeds nothing. A monitor that writes into -data
// (its embedded server's store, or the throwaway CA below) holds an
// exclusive lock on it (flock on -data/fresh-monitor.lock, released by the
// kernel however the process ends): a second monitor on the same -data
// exits 1 with the holder's PID and NATS address (give it its own -data,
// or -nats to the first one's NATS).
//
// Storage. The buckets get byte limits when the monitor creates them, so
// that an upload cannot take the space the devices' updates need: the KV
// bucket -max-kv-store (default an eighth of JetStream's storage, at most
// 1 GiB), the object store -max-upload-store (default the rest). JetStream's
// storage is the embedded server's -max-store (default nats-server's: 75%
// of the free space on -data's disk at start), or with -nats the account's
// limit; with -nats and an account without one the buckets get no limits
// unless the flags give them (a warning says so). A full object store fails
// the upload back to its agent with the reason ("the object store … is
// full, its limit …"), and updates are still stored; each failure line
// names what is full and the flag to raise, at most 10 lines a second of
// each kind. Buckets that exist keep their own limits (nats stream edit
// changes them; the monitor warns about an object store without one).
//
// Crash consistency. Each upload is staged (package monitor has the
// details): a monitor killed at any point leaves an upload either
// committed, byte-exact, or removed by the next sweep of the object store,
// which every monitor runs at start and every 10 minutes, counting what it
// purges (fresh_orphan_chunks_purged_total, fresh_orphan_bytes_purged_total).
// Live uploads of other monitors sharing the JetStream are left alone.
//
// The embedded server joins a NATS cluster with -nats-cluster (its route
// address) and -nats-routes (every member's, its own included: a server
// ignores the route to itself), so that three fresh-monitors, or a
// fresh-monitor and two nats-servers, are one JetStream cluster:
//
//	fresh-monitor -data /var/lib/fresh -nats-cluster 10.0.0.1:6222 \
//	    -nats-routes nats-route://10.0.0.1:6222,nats-route://10.0.0.2:6222,nats-route://10.0.0.3:6222 -replicas 3
//
// JetStream in a cluster needs a cluster name (-nats-cluster-name, the
// same on every member) and a server name unique in the cluster that stays
// the same across restarts (a node's identity in the cluster is derived
// from it): -nats-name, by default fresh-<host name>-<cluster port>. The
// monitor waits for the cluster to elect its JetStream leader before it
// creates the buckets. The buckets have -replicas replicas when the
// monitor creates them: 1 unless given, so give -replicas 3 on a cluster
// of three for them to survive the loss of a node.
//
// Agents are authenticated by mutual TLS: -cert and -key are the
// monitor's certificate, and with -ca every agent must present a
// certificate that CA signed, whose CommonName is the device's name (its
// KV key is monitor.Key of it). go run ./examples/certgen -dir certs makes
// a throwaway set. A name must fit NATS's subjects: at most 64 characters
// (RFC 5280's limit of a CommonName), valid UTF-8 without control
// characters (monitor.CheckName); a device with another is refused at
// its handshake (it hears TLS's bad_certificate alert), counted under
// fresh_handshakes_failed_total{reason="refused"} and logged, and the
// rest of the fleet never notices. Without -ca agents are not
// authenticated (no certificate is asked of them) and are named by their
// address.
// Without -cert and -key the monitor makes a throwaway certificate for
// localhost, 127.0.0.1 and ::1 from a new in-memory CA (transport/devcert)
// and writes that CA to -data/dev-ca.pem, so that an agent on this host can
// verify it (-ca that file): for a first try, not for a fleet, since every
// start makes a new CA. -insecure runs in plaintext, as examples/monitor's.
//
// Each update is stored as a monitor.Record (JSON: device, generation and
// arrival time, payload) under the device's key; the same times are in
// the message headers Fresh-Generated and Fresh-Arrived. A device's
// updates are written one at a time, only the newest pending, so the
// store is never written faster than it confirms and an older update
// never lands over a newer one. An upload becomes one object named
// <key>/<start time>; the agent's WaitCommitted returns only after the
// object is stored whole, and if the store fails the connection is closed
// with the reason (the agent reports "monitor could not store it").
//
// Flags:
//
//	-listen :4433             UDP address agents connect to
//	-cert FILE, -key FILE     the monitor's TLS certificate and key, PEM
//	-ca FILE                  require agents' certificates signed by this CA (mutual TLS)
//	-insecure                 plaintext, no TLS (UNSAFE; the agents need -insecure too)
//	-nats URL                 connect to this NATS server or cluster (comma-separated URLs) instead of embedding one
//	-data DIR                 the embedded server's JetStream store (default $TMPDIR/fresh-monitor)
//	-nats-listen ADDR         the embedded server's client address (default 127.0.0.1:4222; port 0 picks one)
//	-nats-cluster ADDR        the embedded server's cluster (route) address: it joins a cluster (with -nats-routes)
//	-nats-routes URLs         the cluster's route URLs, comma-separated nats-route://HOST:PORT (with -nats-cluster)
//	-nats-cluster-name NAME   the cluster's name, the same on every member (default fresh)
//	-nats-name NAME           the embedded server's name, unique in the cluster and stable across restarts
//	                          (default fresh-<host name>-<cluster port>; fresh-monitor without a cluster)
//	-kv-bucket NAME           KV bucket of the freshest update per device (default fresh-latest)
//	-object-bucket NAME       object store of uploads (default fresh-uploads)
//	-replicas N               replicas of both buckets when created (default 1; give 3 on a 3-node cluster)
//	-max-store SIZE           the embedded server's JetStream storage (default: 75% of -data's free disk)
//	-max-upload-store SIZE    byte limit of the object store when created (default: the storage minus -max-kv-store; 0: none)
//	-max-kv-store SIZE        byte limit of the KV bucket when created (default: an eighth of the storage, at most 1GiB; 0: none)
//	-metrics ADDR             HTTP address of /metrics, /healthz, /readyz (default 127.0.0.1:9464; "off": none)
//	-pprof                    also serve /debug/pprof there
//	-reuseport                share -listen's port with other fresh-monitor processes (SO_REUSEPORT)
//	-server-id N              this process's server ID (0-255) in its connection IDs
//	-steer DIR                route the shared port by connection ID (eBPF, pinned in bpffs DIR; Linux, root)
//	-v                        debug logs
//	-qlog DIR                 a qlog trace of every connection into DIR, one file each, for qvis (default $QLOGDIR; empty: off)
//
// Logs (log/slog, text, stderr) say each agent's connection and end with
// its device name, each upload stored, each store failure, each
// rejected handshake with its reason (as fresh_handshakes_failed_total
// counts it; at most 10 lines a second), and the NATS connection lost and
// restored. nats.go reconnects by itself, but closes the connection for
// good after some server errors (a protocol line too long, an
// authorization violation twice): the monitor then opens a new one
// (fresh_nats_connections_replaced_total). /healthz answers 200 while the
// process serves; /readyz 200 once NATS is connected and the listener
// accepts, 503 otherwise (while NATS is down, too).
//
// Several processes on one port. One process's protocol work runs on
// about two cores; to use more, run several on one -listen port, each
// with its own -server-id and the same -steer directory on a bpffs
// (mount -t bpf bpf /sys/fs/bpf; root):
//
//	fresh-monitor -listen :4433 -server-id 0 -steer /sys/fs/bpf/fresh-4433 -data /var/lib/fresh …
//	fresh-monitor -listen :4433 -server-id 1 -steer /sys/fs/bpf/fresh-4433 -nats nats://127.0.0.1:4222 …
//
// The kernel spreads new agents over the processes by address, and an
// eBPF program (package steer) sends every later datagram to the process
// whose server ID its connection ID names, so a connection stays with its
// process when the agent's address changes (a NAT rebinding) and when a
// process joins or leaves; only new agents go to a new process. A process
// that exits takes its agents' connections with it. Every process derives
// the same stateless reset key from the certificate, but answers only the
// connection IDs of its own -server-id (one that answered another's would
// hand anyone who saw a live connection's ID the token that ends it: RFC
// 9000 §21.11): the process restarted with the same -server-id resets
// its previous life's agents at their next datagram, and they dial again;
// those of a process that does not come back notice at their idle
// timeout. -reuseport alone shares the port with the
// kernel's hash and no program: connections then last only while their
// agent's address and the number of processes stay the same, and without
// -server-id each process keeps a reset key of its own (no resets across
// its restarts). Several
// hosts behind a UDP load balancer: a 5-tuple one keeps a connection
// while the agent's address stays; a QUIC-LB-style one that routes by the
// connection ID's server ID (plaintext layout, 1-byte ID: give each
// process on every host a distinct -server-id) also keeps it across
// rebinding. All of them write into the same JetStream (-nats).
//
// It runs until Ctrl-C or SIGTERM, then closes every connection, writes
// the updates still pending, shuts the embedded server down and exits 0.
// It exits 2 on a usage error, 1 if it cannot start: a port in use (the
// error names the flag: -listen, -nats-listen, -nats-cluster, -metrics),
// a -nats server that does not answer (its URLs and each dial's error).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/monitor"
	"github.com/fresh-udp/fresh/qlog"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "fresh-monitor:", err)
		stop()
		if errors.As(err, new(*usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake on the command line: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

type options struct {
	listen, cert, key, ca string
	insecure              bool
	natsURL, data         string
	natsListen            string
	natsCluster           string     // the embedded server's route address; "" without a cluster
	natsRoutes            []*url.URL // parsed -nats-routes
	natsClusterName       string
	natsName              string
	kvBucket, objBucket   string
	replicas              int
	limits                limitFlags
	storeMax              int64 // the embedded server's JetStream storage, once it runs
	metrics               string
	pprof                 bool
	verbose               bool
	reusePort             bool   // -reuseport
	serverID              int    // -server-id, -1 if none
	steer                 string // -steer
	qlog                  string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("fresh-monitor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.listen, "listen", ":4433", "UDP `address` agents connect to")
	fs.StringVar(&o.cert, "cert", "", "the monitor's certificate, PEM `file` (with -key; without both: a throwaway one for localhost)")
	fs.StringVar(&o.key, "key", "", "the private key of -cert, PEM `file`")
	fs.StringVar(&o.ca, "ca", "", "require agents' certificates signed by this CA, PEM `file` (mutual TLS; the device is the certificate's CommonName)")
	fs.BoolVar(&o.insecure, "insecure", false, "UNSAFE: plaintext, no TLS: anyone on the path can read, forge and close connections; the agents need -insecure too")
	fs.StringVar(&o.natsURL, "nats", "", "connect to this NATS server or cluster (`URLs`, comma-separated) instead of embedding one")
	fs.StringVar(&o.data, "data", filepath.Join(os.TempDir(), "fresh-monitor"), "the embedded NATS server's JetStream store `dir`ectory")
	fs.StringVar(&o.natsListen, "nats-listen", "127.0.0.1:4222", "the embedded NATS server's client `address` (port 0 picks one)")
	fs.StringVar(&o.natsCluster, "nats-cluster", "", "the embedded NATS server's cluster (route) `address`, HOST:PORT with a fixed port: it joins the cluster of -nats-routes")
	routes := fs.String("nats-routes", "", "the NATS cluster's route `URLs`, comma-separated nats-route://HOST:PORT, every member's (its own may be in the list); with -nats-cluster")
	fs.StringVar(&o.natsClusterName, "nats-cluster-name", "fresh", "the NATS cluster's `name`, the same on every member")
	fs.StringVar(&o.natsName, "nats-name", "", "the embedded NATS server's `name`: unique in the cluster and the same across restarts (default fresh-<host name>-<cluster port>; fresh-monitor without a cluster)")
	fs.StringVar(&o.kvBucket, "kv-bucket", monitor.DefaultKVBucket, "KV bucket of each device's freshest update")
	fs.StringVar(&o.objBucket, "object-bucket", monitor.DefaultObjectBucket, "object store of the uploads")
	fs.IntVar(&o.replicas, "replicas", 1, "replicas of the buckets when the monitor creates them (give 3 on a cluster of three, to survive a node's loss)")
	fs.Var(&o.limits.maxStore, "max-store", "the embedded NATS server's JetStream storage on -data, a `size` such as 20GB or 512MiB (default: nats-server's, 75% of the disk's free space at start)")
	fs.Var(&o.limits.maxUpload, "max-upload-store", "byte limit of the object store when the monitor creates it, a `size` (default: JetStream's storage minus -max-kv-store; 0: none)")
	fs.Var(&o.limits.maxKV, "max-kv-store", "byte limit of the KV bucket when the monitor creates it, a `size` (default: an eighth of JetStream's storage, at most 1GiB; 0: none)")
	fs.StringVar(&o.metrics, "metrics", "127.0.0.1:9464", "HTTP `address` of /metrics, /healthz and /readyz (\"off\": none)")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve /debug/pprof on -metrics (CPU and heap profiles; keep -metrics on loopback)")
	fs.BoolVar(&o.verbose, "v", false, "debug logs")
	fs.BoolVar(&o.reusePort, "reuseport", false, "share -listen's port with other fresh-monitor processes (SO_REUSEPORT; the kernel spreads agents by address: see -steer; give each a distinct -server-id to reset a previous life's agents)")
	fs.IntVar(&o.serverID, "server-id", -1, "this process's server `ID` (0-255) in the connection IDs it gives out, distinct per process or host (for -steer or a CID-routing load balancer; -1: none, IDs no load balancer routes)")
	fs.StringVar(&o.steer, "steer", "", "route the shared port's datagrams to the process whose -server-id their connection ID names, with an eBPF program pinned in this bpffs `dir`ectory (Linux, root; implies -reuseport)")
	fs.StringVar(&o.qlog, "qlog", os.Getenv(qlog.EnvDir), "write a qlog trace of every connection (for qvis) into `dir` (default $QLOGDIR; empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("unexpected argument %q (flags go before it; see -h)", fs.Arg(0))
	case o.insecure && (o.cert != "" || o.key != "" || o.ca != ""):
		return nil, usagef("-insecure and -cert/-key/-ca exclude each other: plaintext uses no credentials")
	case (o.cert == "") != (o.key == ""):
		return nil, usagef("-cert and -key go together: the certificate and its private key")
	case o.ca != "" && o.cert == "":
		return nil, usagef("-ca without -cert and -key: agents verify the monitor by its certificate, give it one (go run ./examples/certgen -dir certs)")
	case o.pprof && (o.metrics == "off" || o.metrics == ""):
		return nil, usagef("-pprof needs -metrics: it serves the profiles on the same address")
	case o.serverID < -1 || o.serverID > 255:
		return nil, usagef("-server-id %d: 0-255 (one byte of the connection ID)", o.serverID)
	case o.steer != "" && o.serverID < 0:
		return nil, usagef("-steer needs -server-id: the ID the program routes this process's connections by (distinct per process)")
	case o.replicas < 1:
		return nil, usagef("-replicas %d: at least 1", o.replicas)
	case o.natsURL != "" && o.natsListen != fs.Lookup("nats-listen").DefValue:
		return nil, usagef("-nats and -nats-listen exclude each other: -nats-listen is the embedded server's")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.limits.storeSet, o.limits.uploadSet, o.limits.kvSet = set["max-store"], set["max-upload-store"], set["max-kv-store"]
	if o.natsURL != "" {
		for _, name := range []string{"nats-cluster", "nats-routes", "nats-cluster-name", "nats-name", "max-store"} {
			if set[name] {
				return nil, usagef("-nats and -%s exclude each other: -%s is the embedded server's (with -nats the monitor embeds none)", name, name)
			}
		}
		return o, nil
	}
	if err := o.parseCluster(*routes, set); err != nil {
		return nil, err
	}
	if o.replicas > 1 && o.natsCluster == "" {
		return nil, usagef("-replicas %d without -nats-cluster and -nats-routes: the embedded server alone keeps one copy (join it to a cluster, or give -nats one)", o.replicas)
	}
	return o, nil
}

// parseCluster checks the embedded server's cluster flags, parses
// -nats-routes and names the server.
func (o *options) parseCluster(routes string, set map[string]bool) error {
	switch {
	case routes != "" && o.natsCluster == "":
		return usagef("-nats-routes needs -nats-cluster: the address this server listens on for the others' routes")
	case o.natsCluster != "" && routes == "":
		return usagef("-nats-cluster needs -nats-routes: JetStream in a cluster needs routes to the other servers (give every member the same list)")
	case o.natsCluster == "" && set["nats-cluster-name"]:
		return usagef("-nats-cluster-name without -nats-cluster and -nats-routes: there is no cluster to name")
	case strings.ContainsAny(o.natsClusterName, " \t\n") || o.natsClusterName == "":
		return usagef("-nats-cluster-name %q: a name without spaces", o.natsClusterName)
	case strings.ContainsAny(o.natsName, " \t\n"):
		return usagef("-nats-name %q: a name without spaces", o.natsName)
	}
	if o.natsCluster == "" {
		if o.natsName == "" {
			o.natsName = "fresh-monitor"
		}
		return nil
	}
	_, port, err := net.SplitHostPort(o.natsCluster)
	if err != nil {
		return usagef("-nats-cluster %s: %v (want HOST:PORT)", o.natsCluster, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return usagef("-nats-cluster %s: give a fixed port, 1 to 65535: the other servers' -nats-routes name it", o.natsCluster)
	}
	for r := range strings.SplitSeq(routes, ",") {
		r = strings.TrimSpace(r)
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Port() == "" || u.Hostname() == "" {
			return usagef("-nats-routes: %q is not a route URL (want nats-route://HOST:PORT)", r)
		}
		o.natsRoutes = append(o.natsRoutes, u)
	}
	if o.natsName == "" {
		// Unique: two members on one host have two cluster ports. Stable:
		// the same host and port next time.
		host, err := os.Hostname()
		if err != nil || host == "" {
			return usagef("-nats-cluster: the host has no name to derive the server's from (%v): give -nats-name", err)
		}
		o.natsName = "fresh-" + strings.ReplaceAll(host, " ", "_") + "-" + port
	}
	return nil
}

// run starts everything, serves until ctx ends and shuts down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// -data is this monitor's alone while it writes there (the embedded
	// server's store, the throwaway CA): locked before anything is written.
	var lock *dataLock
	if o.natsURL == "" || (o.cert == "" && !o.insecure) {
		if lock, err = lockData(o.data); err != nil {
			return err
		}
		defer lock.release()
	}

	// The transport logs at debug level (-v), but for a warning per
	// rejected handshake (an agent without a certificate, or with one of
	// another CA or expired...): remote, reason and error, rate-limited.
	// A device whose name the monitor cannot store (monitor.CheckName:
	// too long for NATS, control characters) is refused at the handshake.
	cfg := transport.Config{Insecure: o.insecure, Logger: log}
	if !o.insecure {
		cfg.VerifyPeer = monitor.VerifyPeerName
	}
	security, err := serverTLS(o, &cfg, stdout)
	if err != nil {
		return err
	}
	if o.qlog != "" {
		if err := os.MkdirAll(o.qlog, 0o755); err != nil {
			return usagef("-qlog: %v", err)
		}
		cfg.Tracer = qlog.DirTracer(o.qlog)
		log.Info("tracing every connection", "qlog", o.qlog)
	}

	// NATS first: an agent accepted before the store is there would have
	// nowhere to go.
	nc, reconnectNATS, shutdownNATS, err := connectNATS(o, log, stdout)
	if err != nil {
		return err
	}
	defer shutdownNATS()
	if lock != nil && o.natsURL == "" {
		_ = lock.write(nc.ConnectedUrl()) // for a second monitor's refusal: where to share this store
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if o.natsCluster != "" {
		if o.replicas == 1 {
			log.Warn("the buckets the monitor creates get 1 replica: give -replicas 3 (on a cluster of three) for them to survive a node's loss")
		}
		if err := waitJetStream(ctx, js, log); err != nil {
			return err
		}
	}

	resetKey, err := transport.ResetKeyFromTLS(cfg.TLS)
	if err != nil {
		return err
	}
	if o.reusePort && o.serverID < 0 && resetKey != nil {
		// The other processes of the port derive the same key, and
		// without server IDs none can tell its connections from the
		// others': a random key of its own keeps any of them from
		// handing out another's reset token (RFC 9000 §21.11).
		resetKey = nil
		log.Info("-reuseport without -server-id: stateless resets only for this process's own connections, not its previous life's; give each process a distinct -server-id for those")
	}
	tr := &transport.Transport{StatelessResetKey: resetKey}
	udp, closeUDP, err := listen(o, tr)
	if err != nil {
		return err
	}
	defer closeUDP()
	tr.Conn = udp
	defer tr.Close()
	ln, err := tr.Listen(cfg)
	if err != nil {
		return err
	}
	maxUpload, maxKV, hints, err := bucketLimits(ctx, o, js, o.storeMax, log, stdout)
	if err != nil {
		return err
	}
	mon, err := monitor.New(monitor.Config{
		Listener: ln, JetStream: js, KVBucket: o.kvBucket, ObjectBucket: o.objBucket,
		Replicas: o.replicas, MaxUploadBytes: maxUpload, MaxKVBytes: maxKV, StorageHints: hints, Reconnect: reconnectNATS, Logger: log,
	})
	if err != nil {
		return err
	}

	if o.metrics != "off" && o.metrics != "" {
		stopHTTP, err := serveMetrics(o.metrics, o.pprof, mon, stdout)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	fmt.Fprintf(stdout, "fresh-monitor: listening on %s (%s); updates into KV bucket %q, uploads into object store %q\n",
		ln.Addr(), security, o.kvBucket, o.objBucket)
	return mon.Run(ctx)
}

// serverTLS sets cfg's TLS from the flags and says in a few words how
// agents are authenticated.
func serverTLS(o *options, cfg *transport.Config, stdout io.Writer) (string, error) {
	if o.insecure {
		return "INSECURE: plaintext, agents are not authenticated", nil
	}
	if o.cert == "" {
		ca, err := devcert.NewCA("fresh-monitor throwaway CA")
		if err != nil {
			return "", err
		}
		c, err := ca.Issue("localhost", "localhost", "127.0.0.1", "::1")
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(o.data, 0o700); err != nil {
			return "", fmt.Errorf("-data %s: %w", o.data, err)
		}
		caFile := filepath.Join(o.data, "dev-ca.pem")
		if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
			return "", fmt.Errorf("-data %s: %w", o.data, err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{c}}
		fmt.Fprintf(stdout, "fresh-monitor: no -cert/-key: serving a throwaway certificate for localhost, 127.0.0.1 and ::1 "+
			"from a new CA written to %s (agents: -ca %s); a new one every start, for a first try only\n", caFile, caFile)
		return "TLS with a throwaway certificate, agents not authenticated: give -cert, -key and -ca", nil
	}
	cert, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return "", fmt.Errorf("-cert %s, -key %s: %w", o.cert, o.key, err)
	}
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if o.ca == "" {
		return "TLS, agents not authenticated: give -ca to require their certificates", nil
	}
	b, err := os.ReadFile(o.ca)
	if err != nil {
		return "", fmt.Errorf("-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return "", fmt.Errorf("-ca %s: no PEM certificate in it", o.ca)
	}
	cfg.TLS.ClientAuth, cfg.TLS.ClientCAs = tls.RequireAndVerifyClientCert, pool
	return "mutual TLS; agents must present a certificate signed by " + o.ca + ", named by its CommonName", nil
}

// connectNATS connects to -nats, or starts the embedded server and
// connects to it in-process. reconnect opens a new connection the same way
// (monitor.Config.Reconnect: the monitor's closed for good); shutdown
// closes every connection opened and shuts the server down.
func connectNATS(o *options, log *slog.Logger, stdout io.Writer) (nc *nats.Conn, reconnect func(context.Context) (jetstream.JetStream, error), shutdown func(), err error) {
	var closing atomic.Bool // our own shutdown: not a lost connection
	natsLog := func(nc *nats.Conn, what string) {
		if !closing.Load() {
			log.Warn("NATS connection "+what, "url", nc.ConnectedUrlRedacted(), "err", nc.LastError())
		}
	}
	opts := []nats.Option{
		nats.Name("fresh-monitor"),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, _ error) { natsLog(nc, "lost") }),
		nats.ReconnectHandler(func(nc *nats.Conn) { natsLog(nc, "restored") }),
		// The server's asynchronous errors (a permission refused, a slow
		// consumer) into the log, not onto stderr as nats.go's default.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS error", "err", err)
		}),
	}
	var (
		mu     sync.Mutex
		opened []*nats.Conn
		dial   func() (*nats.Conn, error)
		ns     *server.Server
	)
	closeAll := func() {
		closing.Store(true)
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range opened {
			_ = nc.Drain()
			nc.Close()
		}
		if ns != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	}
	if o.natsURL != "" {
		d := &recordingDialer{Dialer: net.Dialer{Timeout: nats.DefaultTimeout}}
		opts = append(opts, nats.SetCustomDialer(d))
		dial = func() (*nats.Conn, error) { return nats.Connect(o.natsURL, opts...) }
		nc, err = dial()
		if err != nil {
			return nil, nil, nil, d.explain(o.natsURL, err)
		}
		fmt.Fprintf(stdout, "fresh-monitor: storing into the NATS server at %s\n", nc.ConnectedUrlRedacted())
	} else {
		if ns, err = startNATSServer(o, log); err != nil {
			return nil, nil, nil, err
		}
		opts = append(opts, nats.InProcessServer(ns))
		dial = func() (*nats.Conn, error) { return nats.Connect(ns.ClientURL(), opts...) }
		if nc, err = dial(); err != nil {
			ns.Shutdown()
			return nil, nil, nil, fmt.Errorf("embedded NATS server: %w", err)
		}
		fmt.Fprintf(stdout, "fresh-monitor: embedded NATS server with JetStream in %s, clients at %s\n", o.data, ns.ClientURL())
		if o.natsCluster != "" {
			fmt.Fprintf(stdout, "fresh-monitor: NATS server %q in cluster %q, routes at %s to %d route URLs\n",
				o.natsName, o.natsClusterName, o.natsCluster, len(o.natsRoutes))
		}
	}
	opened = append(opened, nc)
	reconnect = func(context.Context) (jetstream.JetStream, error) {
		mu.Lock()
		defer mu.Unlock()
		if closing.Load() {
			return nil, errors.New("shutting down")
		}
		nc, err := dial()
		if err != nil {
			return nil, err
		}
		opened = append(opened, nc)
		return jetstream.New(nc)
	}
	return nc, reconnect, closeAll, nil
}

// startNATSServer starts the embedded NATS server and waits until it
// takes connections, or says why it does not: a port it cannot listen on
// names the flag that sets it (the server reports it to its logger, and
// would otherwise never become ready).
func startNATSServer(o *options, log *slog.Logger) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(o.natsListen)
	if err != nil {
		return nil, usagef("-nats-listen %s: %v (want HOST:PORT)", o.natsListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, usagef("-nats-listen %s: bad port", o.natsListen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	sopts := &server.Options{
		ServerName: o.natsName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.data,
		// 0: nats-server's default (75% of the disk's free space).
		JetStreamMaxStore: int64(o.limits.maxStore),
		NoSigs:            true, // the monitor handles SIGINT/SIGTERM
		NoLog:             true,
	}
	if o.natsCluster != "" {
		chost, cport, _ := net.SplitHostPort(o.natsCluster) // checked by parseFlags
		sopts.Cluster.Name, sopts.Cluster.Host = o.natsClusterName, chost
		sopts.Cluster.Port, _ = strconv.Atoi(cport)
		sopts.Routes = o.natsRoutes
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	sl := &natsServerLog{log: log, fatal: make(chan error, 1)}
	ns.SetLogger(sl, false, false)
	go ns.Start()
	const readyTimeout = 10 * time.Second
	deadline := time.Now().Add(readyTimeout)
	for !ns.ReadyForConnections(100 * time.Millisecond) {
		select {
		case err := <-sl.fatal:
			ns.Shutdown()
			return nil, o.natsServerError(err)
		default:
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			return nil, fmt.Errorf("embedded NATS server: not ready after %v (-v logs what it did)", readyTimeout)
		}
	}
	o.storeMax = ns.JetStreamConfig().MaxStore // the limit it settled on (-max-store, or 75% of the free disk)
	return ns, nil
}

// natsServerLog is the embedded server's logger: its lines at debug level
// (-v), and its fatal errors, which end its Start, on fatal as well.
type natsServerLog struct {
	log   *slog.Logger
	fatal chan error
}

// natsFatal is a fatal error of the embedded server: its message, the
// error in it if any, and its format, which says what failed.
type natsFatal struct {
	format, msg string
	err         error
}

func (e *natsFatal) Error() string { return e.msg }
func (e *natsFatal) Unwrap() error { return e.err }

func (l *natsServerLog) Fatalf(format string, v ...any) {
	f := &natsFatal{format: format, msg: fmt.Sprintf(format, v...)}
	for _, a := range v {
		if err, ok := a.(error); ok {
			f.err = err
		}
	}
	l.log.Error("embedded NATS server: " + f.msg)
	select {
	case l.fatal <- f:
	default:
	}
}

func (l *natsServerLog) Noticef(format string, v ...any) { l.debugf(format, v...) }
func (l *natsServerLog) Warnf(format string, v ...any)   { l.debugf(format, v...) }
func (l *natsServerLog) Errorf(format string, v ...any)  { l.debugf(format, v...) }
func (l *natsServerLog) Debugf(string, ...any)           {} // not asked for (SetLogger)
func (l *natsServerLog) Tracef(string, ...any)           {}

func (l *natsServerLog) debugf(format string, v ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("nats-server: " + fmt.Sprintf(format, v...))
	}
}

// natsServerError says which flag fixes a fatal error of the embedded
// server: a client or route port it cannot listen on, a store it cannot
// open.
func (o *options) natsServerError(err error) error {
	var f *natsFatal
	if !errors.As(err, &f) {
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	inUse := errors.Is(err, syscall.EADDRINUSE)
	switch {
	case strings.HasPrefix(f.format, "Error listening on port"): // the client port
		if inUse {
			return fmt.Errorf("-nats-listen %s: %w: another NATS server (or fresh-monitor) has this port: give -nats-listen another address (port 0 picks a free one), or -nats to store into that server", o.natsListen, f.err)
		}
		return fmt.Errorf("-nats-listen %s: %w", o.natsListen, f.err)
	case strings.HasPrefix(f.format, "Error listening on router port"):
		if inUse {
			return fmt.Errorf("-nats-cluster %s: %w: another NATS server (or fresh-monitor) has this port: give -nats-cluster another port (and the same in every member's -nats-routes)", o.natsCluster, f.err)
		}
		return fmt.Errorf("-nats-cluster %s: %w", o.natsCluster, f.err)
	case strings.HasPrefix(f.format, "Can't start JetStream"):
		return fmt.Errorf("-data %s: the embedded NATS server cannot start JetStream there: %w", o.data, err)
	}
	return fmt.Errorf("embedded NATS server: %w", err)
}

// recordingDialer dials the -nats servers for nats.go and keeps their
// errors: nats.go says only "no servers available for connection" when
// none answers.
type recordingDialer struct {
	net.Dialer
	mu   sync.Mutex
	errs []error
}

func (d *recordingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.Dialer.Dial(network, address)
	if err != nil {
		d.mu.Lock()
		if len(d.errs) < 16 {
			d.errs = append(d.errs, err)
		}
		d.mu.Unlock()
	}
	return c, err
}

// explain is the error of a failed first connection to -nats: the URLs
// (passwords hidden), why each dial failed, and what to do.
func (d *recordingDialer) explain(urls string, err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	redacted := redactURLs(urls)
	if !errors.Is(err, nats.ErrNoServers) || len(d.errs) == 0 {
		return fmt.Errorf("-nats %s: %w", redacted, err)
	}
	return fmt.Errorf("-nats %s: no NATS server answered: %w: start it, or give -nats the URL(s) of running ones (comma-separated; without -nats the monitor embeds a server)", redacted, errors.Join(d.errs...))
}

// redactURLs is a comma-separated list of URLs with their passwords
// replaced by "xxxxx".
func redactURLs(urls string) string {
	var out []string
	for u := range strings.SplitSeq(urls, ",") {
		u = strings.TrimSpace(u)
		if p, err := url.Parse(u); err == nil && p.User != nil {
			u = p.Redacted()
		}
		out = append(out, u)
	}
	return strings.Join(out, ",")
}

// waitJetStream returns once JetStream answers (a cluster's members have
// elected the leader of its meta group, which takes all of them starting
// within seconds of each other), or ctx ends.
func waitJetStream(ctx context.Context, js jetstream.JetStream, log *slog.Logger) error {
	var last time.Time
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the JetStream cluster: %w", ctx.Err())
		}
		if time.Since(last) >= 10*time.Second {
			log.Info("waiting for the JetStream cluster (its other members, a leader)", "err", err)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// serveMetrics serves /metrics (the monitor's collector and the Go
// runtime's and process's), /healthz and /readyz on addr.
func serveMetrics(addr string, withPprof bool, mon *monitor.Monitor, stdout io.Writer) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(mon.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !mon.Ready() {
			http.Error(w, "not ready: NATS not connected or the listener not accepting yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("-metrics %s: %w: another process (another fresh-monitor?) serves on this port: give -metrics another address (port 0 picks a free one), or -metrics off", addr, err)
		}
		return nil, fmt.Errorf("-metrics %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Fprintf(stdout, "fresh-monitor: metrics at http://%s/metrics (and /healthz, /readyz)\n", l.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
