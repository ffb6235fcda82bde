package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// The -J result. Field names and units follow iperf3's JSON where iperf3
// has the concept; see the package doc.
type (
	result struct {
		Start     start       `json:"start"`
		Intervals []intervalJ `json:"intervals"`
		End       endJ        `json:"end"`
		Error     string      `json:"error,omitempty"`
	}
	start struct {
		Connected    []connected  `json:"connected"`
		Version      string       `json:"version"`
		Timestamp    timestamp    `json:"timestamp"`
		ConnectingTo connectingTo `json:"connecting_to"`
		TestStart    testStart    `json:"test_start"`
	}
	connected struct {
		Socket     int    `json:"socket"`
		LocalHost  string `json:"local_host"`
		LocalPort  int    `json:"local_port"`
		RemoteHost string `json:"remote_host"`
		RemotePort int    `json:"remote_port"`
	}
	timestamp struct {
		Time     string `json:"time"`
		Timesecs int64  `json:"timesecs"`
	}
	connectingTo struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	testStart struct {
		Protocol   string  `json:"protocol"`
		NumStreams int     `json:"num_streams"`
		Blksize    int     `json:"blksize"`
		Duration   float64 `json:"duration"` // seconds
		Reverse    int     `json:"reverse"`
	}
	intervalJ struct {
		Streams []streamInterval `json:"streams"`
		Sum     sum              `json:"sum"`
	}
	streamInterval struct {
		Socket int `json:"socket"`
		sum
		SndCwnd int64 `json:"snd_cwnd"` // bytes
		RTT     int64 `json:"rtt"`      // µs, SRTT
	}
	sum struct {
		Start         float64 `json:"start"`   // s since the test began
		End           float64 `json:"end"`     // s
		Seconds       float64 `json:"seconds"` // End − Start
		Bytes         int64   `json:"bytes"`
		BitsPerSecond float64 `json:"bits_per_second"`
		Retransmits   *int64  `json:"retransmits,omitempty"` // sender side only
		Sender        *bool   `json:"sender,omitempty"`
	}
	endJ struct {
		Streams               []endStream `json:"streams"`
		SumSent               sum         `json:"sum_sent"`
		SumReceived           sum         `json:"sum_received"`
		SenderTCPCongestion   string      `json:"sender_tcp_congestion"`
		ReceiverTCPCongestion string      `json:"receiver_tcp_congestion"`
		Fresh                 freshEnd    `json:"fresh"`
	}
	endStream struct {
		Sender   senderEnd `json:"sender"`
		Receiver sum       `json:"receiver"`
	}
	senderEnd struct {
		Socket int `json:"socket"`
		sum
		MaxSndCwnd int64 `json:"max_snd_cwnd"` // bytes
		MaxRTT     int64 `json:"max_rtt"`      // µs
		MinRTT     int64 `json:"min_rtt"`      // µs
		MeanRTT    int64 `json:"mean_rtt"`     // µs
	}
	freshEnd struct {
		CC            string  `json:"cc"`
		SRTT          int64   `json:"srtt_us"`
		MinRTT        int64   `json:"min_rtt_us"`
		MinOWD        int64   `json:"min_owd_us"`
		CurOWD        int64   `json:"cur_owd_us"`
		DelaySignal   string  `json:"delay_signal"`
		PacketsSent   int64   `json:"packets_sent"`
		PacketsLost   int64   `json:"packets_lost"`
		Retransmitted int64   `json:"retransmitted"`
		DrainSeconds  float64 `json:"drain_seconds"`
	}
)

func ptr[T any](v T) *T { return &v }

// client sends for o.duration and reports.
func client(ctx context.Context, o *options, stdout io.Writer) error {
	res := &result{}
	err := runClient(ctx, o, stdout, res)
	if err != nil {
		res.Error = err.Error()
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "\t")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

func runClient(ctx context.Context, o *options, stdout io.Writer, res *result) error {
	text := io.Writer(stdout)
	if o.json {
		text = io.Discard
	}
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	now := time.Now()
	res.Start.Version = "fresh bulk"
	res.Start.Timestamp = timestamp{Time: now.UTC().Format(time.RFC1123), Timesecs: now.Unix()}
	res.Start.ConnectingTo = connectingTo{Host: o.host, Port: o.port}
	res.Start.TestStart = testStart{Protocol: "fresh", NumStreams: 1, Blksize: o.blksize, Duration: o.duration.Seconds()}
	res.End.SenderTCPCongestion, res.End.ReceiverTCPCongestion = o.cc, "-"
	res.End.Fresh.CC = o.cc
	res.Intervals = []intervalJ{}

	fmt.Fprintf(text, "Connecting to host %s, port %d\n", o.host, o.port)
	cfg := transport.Config{CC: o.cc, SendBuffer: o.window, ReceiveWindow: o.window, Logger: o.logger}
	conn, err := transport.Dial(ctx, addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	la, ra := conn.LocalAddr().(*net.UDPAddr), conn.RemoteAddr().(*net.UDPAddr)
	res.Start.Connected = []connected{{Socket: 1, LocalHost: la.IP.String(), LocalPort: la.Port, RemoteHost: ra.IP.String(), RemotePort: ra.Port}}
	fmt.Fprintf(text, "[  1] local %s port %d connected to %s port %d (cc %s)\n", la.IP, la.Port, ra.IP, ra.Port, o.cc)
	fmt.Fprintln(text, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd")

	// The writer sends random bytes until told to stop; the Write in
	// progress then finishes (at most one -l block more).
	block := make([]byte, o.blksize)
	_, _ = rand.Read(block)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		for !stop.Load() {
			if _, err := conn.Write(block); err != nil {
				writeErr = err
				return
			}
		}
	})

	begin := time.Now()
	deadline := time.NewTimer(o.duration)
	defer deadline.Stop()
	var tick <-chan time.Time
	if o.interval > 0 {
		t := time.NewTicker(o.interval)
		defer t.Stop()
		tick = t.C
	}
	var prev transport.Stats
	prevT := begin
	var maxCwnd, maxRTT, minRTT, sumRTT, nRTT int64
	report := func(now time.Time, s transport.Stats) {
		dt := now.Sub(prevT).Seconds()
		if dt <= 0 {
			return
		}
		b := s.StreamBytesAcked - prev.StreamBytesAcked
		retr := s.Retransmitted - prev.Retransmitted
		su := sum{Start: prevT.Sub(begin).Seconds(), End: now.Sub(begin).Seconds(), Seconds: dt,
			Bytes: b, BitsPerSecond: float64(b) * 8 / dt, Retransmits: ptr(retr), Sender: ptr(true)}
		rtt := s.SRTT.Microseconds()
		res.Intervals = append(res.Intervals, intervalJ{
			Streams: []streamInterval{{Socket: 1, sum: su, SndCwnd: int64(s.Window), RTT: rtt}},
			Sum:     su,
		})
		fmt.Fprintf(text, "[  1] %s sec  %12s  %15s  %3d  %s\n", interval(su.Start, su.End),
			formatBytes(float64(b)), formatBits(su.BitsPerSecond), retr, formatBytes(float64(s.Window)))
		maxCwnd = max(maxCwnd, int64(s.Window))
		if rtt > 0 {
			maxRTT = max(maxRTT, rtt)
			if minRTT == 0 || rtt < minRTT {
				minRTT = rtt
			}
			sumRTT += rtt
			nRTT++
		}
		prev, prevT = s, now
	}
	interrupted := false
	var end time.Time        // when -t ended
	var sent transport.Stats // at end
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-conn.Done():
			return fmt.Errorf("connection ended: %w", conn.Err())
		case end = <-deadline.C:
			sent = conn.Stats()
			if o.interval > 0 {
				report(end, sent) // the last interval ends where the test does
			}
			break loop
		case now := <-tick:
			report(now, conn.Stats())
		}
	}
	stop.Store(true)
	if interrupted {
		conn.Close()
		wg.Wait()
		return ctx.Err()
	}
	wg.Wait()
	if writeErr != nil {
		return fmt.Errorf("write: %w", writeErr)
	}

	// Half-close and wait for the receiver's report: it comes once the
	// server has read everything, including what was still buffered here.
	if err := conn.CloseWrite(); err != nil {
		return err
	}
	closed := time.Now()
	rep, err := readReport(ctx, conn, max(10*time.Second, 2*o.duration))
	if err != nil {
		return err
	}
	final := conn.Stats()
	secs := end.Sub(begin).Seconds()
	res.End.SumSent = sum{Start: 0, End: secs, Seconds: secs, Bytes: sent.StreamBytesAcked,
		BitsPerSecond: float64(sent.StreamBytesAcked) * 8 / secs, Retransmits: ptr(final.Retransmitted), Sender: ptr(true)}
	res.End.SumReceived = sum{Start: 0, End: rep.Seconds, Seconds: rep.Seconds, Bytes: rep.Bytes,
		BitsPerSecond: rep.BitsPerSecond, Sender: ptr(false)}
	meanRTT := int64(0)
	if nRTT > 0 {
		meanRTT = sumRTT / nRTT
	}
	res.End.Streams = []endStream{{
		Sender:   senderEnd{Socket: 1, sum: res.End.SumSent, MaxSndCwnd: maxCwnd, MaxRTT: maxRTT, MinRTT: minRTT, MeanRTT: meanRTT},
		Receiver: res.End.SumReceived,
	}}
	res.End.Fresh = freshEnd{
		CC: o.cc, SRTT: final.SRTT.Microseconds(), MinRTT: final.MinRTT.Microseconds(),
		MinOWD: final.MinOWD.Microseconds(), CurOWD: final.CurOWD.Microseconds(), DelaySignal: final.Signal.String(),
		PacketsSent: final.PacketsSent, PacketsLost: final.PacketsLost, Retransmitted: final.Retransmitted,
		DrainSeconds: time.Since(closed).Seconds(),
	}
	fmt.Fprintln(text, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	fmt.Fprintln(text, "[ ID] Interval           Transfer     Bitrate         Retr")
	fmt.Fprintf(text, "[  1] %s sec  %12s  %15s  %3d             sender\n", interval(0, secs),
		formatBytes(float64(res.End.SumSent.Bytes)), formatBits(res.End.SumSent.BitsPerSecond), final.Retransmitted)
	fmt.Fprintf(text, "[  1] %s sec  %12s  %15s                  receiver\n", interval(0, rep.Seconds),
		formatBytes(float64(rep.Bytes)), formatBits(rep.BitsPerSecond))
	fmt.Fprintf(text, "cc %s: srtt %v, min rtt %v, %d packets lost; drained %v after -t\n", o.cc,
		final.SRTT.Round(10*time.Microsecond), final.MinRTT.Round(10*time.Microsecond), final.PacketsLost,
		time.Since(closed).Round(time.Millisecond))
	fmt.Fprintln(text, "\nbulk Done.")
	return nil
}

// readReport reads the server's JSON line, within timeout.
func readReport(ctx context.Context, conn *transport.Conn, timeout time.Duration) (receiverReport, error) {
	type got struct {
		rep receiverReport
		err error
	}
	ch := make(chan got, 1)
	go func() {
		var g got
		br := bufio.NewReader(io.LimitReader(conn, 4096))
		line, err := br.ReadBytes('\n')
		if err != nil {
			g.err = fmt.Errorf("reading the receiver's report: %w", err)
		} else if err := json.Unmarshal(line, &g.rep); err != nil {
			g.err = fmt.Errorf("the receiver's report %q: %w", line, err)
		} else {
			// Read on to the server's FIN, so our Close does not
			// overtake its CloseWrite.
			_, _ = io.Copy(io.Discard, br)
		}
		ch <- g
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g := <-ch:
		return g.rep, g.err
	case <-ctx.Done():
		conn.Close() // unblocks the reader
		<-ch
		return receiverReport{}, ctx.Err()
	case <-t.C:
		conn.Close()
		<-ch
		return receiverReport{}, errors.New("no report from the receiver: is the server fresh's bulk -s?")
	}
}
