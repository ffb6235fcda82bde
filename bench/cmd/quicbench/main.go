// Command quicbench measures the quic-go congestion hook (package
// transport/quichook) against quic-go's default congestion control, in
// one run:
//
//   - through an emulated bottleneck (bench/emu's relay, real UDP sockets
//     on loopback, real time): 10 Mbit/s each way, 40 ms RTT (20 ms each
//     way), a FIFO of one bandwidth-delay product (50 000 bytes), with no
//     random loss and with 1 % on the forward path. One stream uploads for
//     -duration; goodput is the bytes the server read after the first
//     -warmup, over the rest of the time; queueing delay is the forward
//     queue's backlog (bytes × 8 / rate), sampled every 2 ms after the
//     warm-up, as percentiles;
//   - on plain loopback: -loop-bytes over one stream, plain and hooked
//     runs alternating (the machine's other load hits both alike), the
//     median goodput of -runs runs each, the median ratio to the plain run
//     of the same round, and the process's CPU time (getrusage, both
//     endpoints and on loopback most of the kernel's work) per GB. A third
//     stack, plain quic-go with a qlog recorder that receives every event
//     and does nothing else, prices the information source of the design
//     the hook did not take (see the quichook package doc).
//
// The plain quic-go runs use quic-go's default Config on a plain UDP
// socket; the hooked runs the same Config over quichook.ListenPacket with -cc.
// For the hooked runs it also reports which window bound: the share of
// samples in which quic-go's own congestion window (from its qlog
// MetricsUpdated events) was smaller than the hook's, and the hook's
// queue-occupancy split (HookBound: datagrams waited for the hook's window
// or pacer; QUICBound: the queue was empty with data in flight, quic-go
// sent less than the hook allowed).
//
// Usage:
//
//	quicbench [-cc owd] [-duration 20s] [-warmup 3s] [-loop-bytes 200MiB] [-runs 3] [-md FILE] [-png FILE] [-no-bottleneck] [-cpuprofile FILE]
//
// -loop-bytes takes a size as every fresh command does (internal/units:
// 200MiB, 200M, 1GB); -loop-mb N, its older spelling, is N MiB.
//
// -no-bottleneck runs the loopback part alone, -runs 0 the bottleneck part
// alone.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/fresh-udp/fresh/internal/units"
)

func main() {
	ccName := flag.String("cc", "owd", "the hook's controller")
	dur := flag.Duration("duration", 20*time.Second, "length of each bottleneck run")
	warm := flag.Duration("warmup", 3*time.Second, "start of each bottleneck run left out of the numbers")
	loop := units.Size(200 << 20)
	flag.Var(&loop, "loop-bytes", "`size` moved per loopback run: 200MiB, 200M (binary), 1GB (decimal)")
	flag.Func("loop-mb", "the same in `MiB` (the older spelling of -loop-bytes)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number of MiB, or -loop-bytes with a unit (200MiB, 1GB)")
		}
		loop = units.Size(n) << 20
		return nil
	})
	runs := flag.Int("runs", 3, "loopback runs per stack (the median is reported; 0: bottleneck runs only)")
	md := flag.String("md", "", "write the markdown table here too")
	png := flag.String("png", "", "write a CDF plot of the queueing delay here")
	noBottleneck := flag.Bool("no-bottleneck", false, "loopback runs only")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if loop <= 0 || loop > 1<<40 {
		fmt.Fprintf(os.Stderr, "quicbench: -loop-bytes %s: want a positive size up to 1TiB, such as 200MiB\n", &loop)
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "quicbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *noBottleneck {
		*dur = 0
	}
	if err := run(*ccName, *dur, *warm, int(loop), *runs, *md, *png, os.Stdout); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "quicbench:", err)
		os.Exit(1)
	}
}

func run(ccName string, dur, warm time.Duration, loopBytes, runs int, md, png string, out io.Writer) error {
	var bn []bottleneckResult
	for _, loss := range []float64{0, 0.01} {
		if dur == 0 {
			break
		}
		for _, hooked := range []bool{false, true} {
			r, err := runBottleneck(hooked, ccName, loss, dur, warm)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%s\n", r.line())
			bn = append(bn, r)
		}
	}
	var lb []loopResult
	if runs > 0 {
		r, err := runLoopback(ccName, loopBytes, runs)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "loopback: plain %v, traced %v, hooked %v\n", r[0].goodputs, r[1].goodputs, r[2].goodputs)
		lb = r[:]
	}
	table := report(ccName, dur, warm, loopBytes, runs, bn, lb)
	fmt.Fprint(out, table)
	if md != "" {
		if err := os.WriteFile(md, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if png != "" {
		if err := plotCDF(png, bn); err != nil {
			return err
		}
	}
	return nil
}
