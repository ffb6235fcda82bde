// Command quic is a quic-go client and server that use fresh's congestion
// controllers through the hook (transport/quichook): the client uploads a
// stream and sends status updates as QUIC DATAGRAM frames (RFC 9221)
// while it does; the server checks the upload's SHA-256 and reports the
// updates it got.
//
//	go run ./examples/quic                              # both ends in one process, on loopback
//	go run ./examples/quic -s -listen :4433 -cert certs/monitor.pem -key certs/monitor-key.pem
//	go run ./examples/quic -c host:4433 -ca certs/ca.pem -cc owd -bytes 50MB
//
// -cc picks the controller by its registry name (owd, cubic, reno, htcp,
// rttdelay, …); -plain runs plain quic-go without the hook, for
// comparison. Both ends need the hook for it to do anything: against a
// peer without it the hooked end falls back to plain QUIC (see the
// quichook package doc). Certificates: examples/certgen makes throwaway
// ones; the demo uses devcert.Loopback and needs none.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/examples/internal/cli"
	"github.com/fresh-udp/fresh/examples/internal/syncbuf"
	"github.com/fresh-udp/fresh/internal/units"
	"github.com/fresh-udp/fresh/transport/devcert"
	"github.com/fresh-udp/fresh/transport/quichook"
)

const alpn = "fresh-quic-example"

// main runs as the other examples do (cli.Main): Ctrl-C ends the server
// cleanly, a usage error exits 2.
func main() { cli.Main("quic", run) }

type options struct {
	server  bool
	connect string
	listen  string
	cc      string
	plain   bool
	bytes   int64
	every   time.Duration
	creds   cli.Credentials
}

func run(ctx context.Context, args []string, out io.Writer) error {
	out = syncbuf.NewWriter(out) // the server's connections and the demo's client print concurrently
	fs := flag.NewFlagSet("quic", flag.ContinueOnError)
	var o options
	size := units.Size(20e6)
	fs.BoolVar(&o.server, "s", false, "run the server")
	fs.StringVar(&o.connect, "c", "", "run the client, connecting to `host:port`")
	fs.StringVar(&o.listen, "listen", ":4433", "-s: the UDP `address` to listen on")
	fs.StringVar(&o.cc, "cc", "owd", "the hook's congestion controller (owd, cubic, reno, htcp, rttdelay, …)")
	fs.BoolVar(&o.plain, "plain", false, "plain quic-go, without the hook")
	fs.Var(&size, "bytes", "-c: the `size` to upload: 500kB, 20MB, 64MiB, 1e9 (K, M, G alone are binary)")
	fs.DurationVar(&o.every, "update-every", 50*time.Millisecond, "-c: status update interval")
	o.creds.Register(fs, "both", "-")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: quic                    (client and server in one process, on loopback)\n"+
			"       quic -s -cert FILE -key FILE [-ca FILE] [-listen :4433] [flags]\n"+
			"       quic -c HOST:PORT [-ca FILE] [-cert FILE -key FILE] [-bytes 20MB] [flags]\n"+
			"certificates: go run ./examples/certgen -dir certs\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return &cli.UsageError{Err: err}
	}
	o.bytes = int64(size)
	if o.creds.Insecure {
		return cli.Usagef("-insecure: QUIC always runs TLS 1.3")
	}
	switch {
	case fs.NArg() > 0:
		return cli.Usagef("unexpected argument %q (flags go before it; see -h)", fs.Arg(0))
	case o.every <= 0:
		return cli.Usagef("-update-every %v: must be positive, such as 50ms", o.every)
	case o.bytes <= 0:
		return cli.Usagef("-bytes %s: want a positive size such as 20MB", &size)
	}
	if !o.plain {
		if _, err := cc.New(o.cc, cc.DefaultMSS); err != nil {
			return cli.Usagef("-cc: %w", err)
		}
	}
	switch {
	case o.server && o.connect != "":
		return cli.Usagef("-s and -c exclude each other")
	case o.server:
		tc, err := o.creds.ServerTLS()
		if err != nil {
			return err
		}
		tc.NextProtos = []string{alpn}
		e, err := transportOn(o.listen, o.cc, o.plain)
		if err != nil {
			return cli.ExplainListen("-listen", o.listen, err)
		}
		defer e.close()
		fmt.Fprintf(out, "listening on %v (%s)\n", e.pc.LocalAddr(), stack(o))
		if err := serve(ctx, e, tc, out, false); err != nil && ctx.Err() == nil {
			return err
		}
		return nil // Ctrl-C
	case o.connect != "":
		tc, err := o.creds.ClientTLS()
		if err != nil {
			return err
		}
		tc.NextProtos = []string{alpn}
		to, err := resolve(ctx, o.connect)
		if err != nil {
			return err
		}
		e, err := transportOn(":0", o.cc, o.plain)
		if err != nil {
			return err
		}
		defer e.close()
		return upload(ctx, e, to, tc, o, out)
	default:
		return demo(ctx, o, out)
	}
}

// resolve reads -c's host:port, saying what is wrong with it.
func resolve(ctx context.Context, hostport string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, cli.Usagef("-c %s: want host:port, such as 127.0.0.1:4433 or example.com:4433 (%v)", hostport, err)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("-c %s: cannot resolve %q: %w", hostport, host, err)
	}
	n, err := net.DefaultResolver.LookupPort(ctx, "udp", port)
	if err != nil {
		return nil, cli.Usagef("-c %s: port %q is not a number or a known service (%v)", hostport, port, err)
	}
	return &net.UDPAddr{IP: addrs[0].Unmap().AsSlice(), Port: n}, nil
}

func stack(o options) string {
	if o.plain {
		return "plain quic-go"
	}
	return "quic-go with the hook, " + o.cc
}

// endpoint is a quic-go Transport and the hook under it (nil: plain).
type endpoint struct {
	tr   *quic.Transport
	hook *quichook.PacketConn
	pc   net.PacketConn
}

func (e *endpoint) close() {
	e.tr.Close()
	e.pc.Close()
}

// transportOn opens a quic-go Transport on addr, over the hook unless plain.
func transportOn(addr, cc string, plain bool) (*endpoint, error) {
	var pc net.PacketConn
	var h *quichook.PacketConn
	var err error
	if plain {
		var ua *net.UDPAddr
		if ua, err = net.ResolveUDPAddr("udp", addr); err == nil {
			pc, err = net.ListenUDP("udp", ua)
		}
	} else {
		h, err = quichook.ListenPacket(addr, quichook.Config{CC: cc})
		pc = h
	}
	if err != nil {
		return nil, err
	}
	return &endpoint{tr: &quic.Transport{Conn: pc}, hook: h, pc: pc}, nil
}

// update is one status update, sent as a QUIC DATAGRAM frame.
type update struct {
	Seq  int   `json:"seq"`
	Sent int64 `json:"sent"` // bytes uploaded so far
}

// serve accepts connections; each uploads one stream, which it hashes,
// and sends updates. once returns after the first connection.
func serve(ctx context.Context, e *endpoint, tc *tls.Config, out io.Writer, once bool) error {
	ln, err := e.tr.Listen(tc, &quic.Config{EnableDatagrams: true})
	if err != nil {
		return err
	}
	defer ln.Close()
	for {
		conn, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		if once {
			return handle(ctx, conn, e.hook, out)
		}
		go func() {
			if err := handle(ctx, conn, e.hook, out); err != nil {
				fmt.Fprintf(out, "%v: %v\n", conn.RemoteAddr(), err)
			}
		}()
	}
}

func handle(ctx context.Context, conn *quic.Conn, hook *quichook.PacketConn, out io.Writer) error {
	defer conn.CloseWithError(0, "")
	var updates atomic.Int64
	var last atomic.Value
	go func() {
		for {
			d, err := conn.ReceiveDatagram(ctx)
			if err != nil {
				return
			}
			var u update
			if json.Unmarshal(d, &u) == nil {
				updates.Add(1)
				last.Store(u)
			}
		}
	}()
	s, err := conn.AcceptStream(ctx)
	if err != nil {
		return err
	}
	h := sha256.New()
	start := time.Now()
	n, err := io.Copy(h, s)
	if err != nil {
		return err
	}
	el := time.Since(start)
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := io.WriteString(s, sum); err != nil {
		return err
	}
	s.Close()
	fmt.Fprintf(out, "server: %d bytes from %v in %.2fs (%.1f Mbit/s), sha256 %s…, %d status updates, last %+v\n",
		n, conn.RemoteAddr(), el.Seconds(), float64(n)*8/el.Seconds()/1e6, sum[:16], updates.Load(), last.Load())
	if hook != nil {
		printHook(out, "server", hook)
	}
	<-conn.Context().Done() // the client closes once it has the sum
	return nil
}

// upload dials to, uploads o.bytes on a stream while sending updates, and
// checks the server's SHA-256 against its own.
func upload(ctx context.Context, e *endpoint, to net.Addr, tc *tls.Config, o options, out io.Writer) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := e.tr.Dial(dctx, to, tc, &quic.Config{EnableDatagrams: true})
	cancel()
	if o.connect == "" {
		o.connect = to.String() // the demo's own server
	}
	if err != nil {
		return explain(fmt.Errorf("dial %s: %w", o.connect, err), o)
	}
	defer conn.CloseWithError(0, "done")
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return explain(err, o)
	}
	var sent atomic.Int64
	stop := make(chan struct{})
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	updatesDone := make(chan int)
	go func() {
		seq := 0
		for {
			select {
			case <-stop:
				updatesDone <- seq
				return
			case <-tick.C:
			}
			seq++
			b, _ := json.Marshal(update{Seq: seq, Sent: sent.Load()})
			_ = conn.SendDatagram(b) // unreliable by design: a lost update is replaced by the next
		}
	}()
	h := sha256.New()
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 64<<10)
	start := time.Now()
	for left := o.bytes; left > 0 && err == nil; {
		b := buf[:min(int64(len(buf)), left)]
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		h.Write(b)
		_, err = s.Write(b)
		left -= int64(len(b))
		sent.Add(int64(len(b)))
	}
	if err == nil {
		err = s.Close()
	}
	var reply []byte
	if err == nil {
		reply, err = io.ReadAll(s)
	}
	el := time.Since(start)
	close(stop)
	nUpd := <-updatesDone
	if err != nil {
		return explain(fmt.Errorf("uploading to %s: %w", o.connect, err), o)
	}
	want := hex.EncodeToString(h.Sum(nil))
	if string(reply) != want {
		return fmt.Errorf("the server's sha256 %q is not ours %q", reply, want)
	}
	fmt.Fprintf(out, "client: uploaded %d bytes in %.2fs (%.1f Mbit/s), sha256 matches; %d status updates sent (%s)\n",
		o.bytes, el.Seconds(), float64(o.bytes)*8/el.Seconds()/1e6, nUpd, stack(o))
	if e.hook != nil {
		printHook(out, "client", e.hook)
	}
	return nil
}

func printHook(out io.Writer, who string, h *quichook.PacketConn) {
	st := h.Stats()
	for _, p := range st.Peers {
		fmt.Fprintf(out, "%s hook: peer %v hooked=%v cc=%s window %d B, srtt %v, signal %v, lost %d, hook-bound %v, quic-go-bound %v\n",
			who, p.Addr, p.Hooked, p.CC, p.Metrics.Window, p.SRTT.Round(time.Microsecond), p.Metrics.Signal, p.Lost,
			p.HookBound.Round(time.Millisecond), p.QUICBound.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "%s hook: %d shimmed / %d plain datagrams sent, %d feedback received, %d queue drops, %d malformed\n",
		who, st.ShimSent, st.PlainSent, st.FeedbackReceived, st.QueueDrops, st.Malformed)
}

// demo runs a server and a client in this process on loopback.
func demo(ctx context.Context, o options, out io.Writer) error {
	tc, err := devcert.Loopback()
	if err != nil {
		return err
	}
	tc.NextProtos = []string{alpn}
	srv, err := transportOn("127.0.0.1:0", o.cc, o.plain)
	if err != nil {
		return err
	}
	defer srv.close()
	cli, err := transportOn("127.0.0.1:0", o.cc, o.plain)
	if err != nil {
		return err
	}
	defer cli.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, srv, tc, out, true) }()
	if err := upload(ctx, cli, srv.pc.LocalAddr(), tc.Clone(), o, out); err != nil {
		return err
	}
	return <-served
}
