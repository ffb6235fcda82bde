package loopback

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fresh-udp/fresh/bench/internal/rusage"
	"github.com/fresh-udp/fresh/cc"
)

// iperf3Result is the part of iperf3 -J's client output loopbench reads.
type iperf3Result struct {
	End struct {
		SumReceived struct {
			Seconds       float64 `json:"seconds"`
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		SumSent struct {
			Retransmits int64 `json:"retransmits"`
		} `json:"sum_sent"`
		SenderCC   string `json:"sender_tcp_congestion"`
		ReceiverCC string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// parseIperf3 reads iperf3 -J client output. It fails on iperf3's own error
// report and on output without a receiver summary.
func parseIperf3(data []byte) (iperf3Result, error) {
	var r iperf3Result
	if err := json.Unmarshal(data, &r); err != nil {
		return iperf3Result{}, fmt.Errorf("iperf3 JSON: %w", err)
	}
	if r.Error != "" {
		return iperf3Result{}, fmt.Errorf("iperf3: %s", r.Error)
	}
	if s := r.End.SumReceived; s.BitsPerSecond <= 0 || s.Seconds <= 0 {
		return iperf3Result{}, errors.New("iperf3 JSON: no end.sum_received")
	}
	return r, nil
}

// IPerf3 moves n bytes over kernel TCP on loopback with two iperf3
// processes: "iperf3 -s -1" and "iperf3 -c 127.0.0.1 -n N -J". ccName, if
// set, is passed as -C. Goodput and time are iperf3's end.sum_received
// (receiver side); CPU is both children's user+system time (RUSAGE_CHILDREN
// delta, whole process lives). The received byte count is n: iperf3's
// receiver summary stops at the sender's end and may miss the tail, so its
// bytes field is not a delivery check (its rate is bytes/seconds over the
// same window).
func IPerf3(ctx context.Context, n cc.ByteCount, ccName string) (Transfer, error) {
	port, err := freeTCPPort()
	if err != nil {
		return Transfer{}, err
	}
	cpu0, err := rusage.Children()
	if err != nil {
		return Transfer{}, err
	}

	srv := exec.CommandContext(ctx, "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port, "--forceflush")
	srvOut, err := srv.StdoutPipe()
	if err != nil {
		return Transfer{}, err
	}
	var srvErr bytes.Buffer
	srv.Stderr = &srvErr
	if err := srv.Start(); err != nil {
		return Transfer{}, fmt.Errorf("iperf3 server: %w", err)
	}
	// Wait for "Server listening", then keep draining so it never blocks.
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(srvOut)
		ok := false
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Server listening") {
				ok = true
				break
			}
		}
		listening <- ok
		io.Copy(io.Discard, srvOut)
	}()
	select {
	case ok := <-listening:
		if !ok {
			srv.Wait()
			return Transfer{}, fmt.Errorf("iperf3 server did not start: %s", strings.TrimSpace(srvErr.String()))
		}
	case <-time.After(10 * time.Second):
		srv.Process.Kill()
		srv.Wait()
		return Transfer{}, errors.New("iperf3 server: not listening after 10 s")
	}

	args := []string{"-c", "127.0.0.1", "-p", port, "-n", strconv.FormatInt(int64(n), 10), "-J"}
	if ccName != "" {
		args = append(args, "-C", ccName)
	}
	out, cliErr := exec.CommandContext(ctx, "iperf3", args...).Output()
	srvWaitErr := srv.Wait()
	cpu1, err := rusage.Children()
	if err != nil {
		return Transfer{}, err
	}
	r, err := parseIperf3(out)
	if err != nil {
		if cliErr != nil {
			err = fmt.Errorf("%w (client: %v)", err, cliErr)
		}
		return Transfer{}, err
	}
	if srvWaitErr != nil {
		return Transfer{}, fmt.Errorf("iperf3 server: %w: %s", srvWaitErr, strings.TrimSpace(srvErr.String()))
	}
	sum := r.End.SumReceived
	return Transfer{
		Bytes:   n,
		Elapsed: time.Duration(sum.Seconds * float64(time.Second)),
		Goodput: cc.Bandwidth(sum.BitsPerSecond),
		CPU:     cpu1 - cpu0,
		Lost:    r.End.SumSent.Retransmits,
		Detail:  "cc " + r.End.SenderCC,
	}, nil
}

// freeTCPPort asks the kernel for a free loopback TCP port. Another process
// could take it before iperf3 binds it; the run then fails and says so.
func freeTCPPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
