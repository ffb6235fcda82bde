package main

import (
	"encoding/json"
	"io"
	"sync"
	"syscall"
	"time"
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
		Connected          []connected `json:"connected"`
		Version            string      `json:"version"`
		SystemInfo         string      `json:"system_info"`
		Timestamp          timestamp   `json:"timestamp"`
		ConnectingTo       *hostPort   `json:"connecting_to,omitempty"`       // client
		AcceptedConnection *hostPort   `json:"accepted_connection,omitempty"` // server
		Cookie             string      `json:"cookie"`
		// tcp_mss_default is the MSS TCP chose (iperf3 reads TCP_MAXSEG
		// before any -M). fresh has no MSS to set (bulk refuses -M); this
		// is the datagram size its stream starts the test with
		// (Stats.DatagramSize of the first data connection: UDP payload
		// bytes, fresh's header included), from which path MTU discovery
		// grows it (pmtu).
		TCPMSSDefault int `json:"tcp_mss_default"`
		// sock_bufsize is -w as given, 0 if not (iperf3's socket_bufsize).
		// sndbuf_actual and rcvbuf_actual are, in iperf3, the TCP socket
		// buffers the kernel then granted. fresh's stream keeps its own
		// buffers above the UDP socket: these are the ceilings they run
		// with, Config.SendBuffer and Config.ReceiveWindow, both -w or
		// the transport's default (each starts at 64 KiB and grows to it,
		// as TCP's autotuning grows its buffers).
		SockBufsize   int           `json:"sock_bufsize"`
		SndbufActual  int           `json:"sndbuf_actual"`
		RcvbufActual  int           `json:"rcvbuf_actual"`
		TargetBitrate float64       `json:"target_bitrate"`
		TestStart     testStart     `json:"test_start"`
		Fresh         freshSettings `json:"fresh"`
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
	hostPort struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	// testStart is iperf3's test_start: every parameter of the test. It
	// is also what the client sends the server (see params).
	testStart struct {
		Protocol      string  `json:"protocol"`
		NumStreams    int     `json:"num_streams"`
		Blksize       int     `json:"blksize"`
		Omit          int     `json:"omit"`
		Duration      float64 `json:"duration"` // s
		Bytes         int64   `json:"bytes"`
		Blocks        int64   `json:"blocks"`
		Reverse       int     `json:"reverse"`
		TOS           int     `json:"tos"`
		TargetBitrate float64 `json:"target_bitrate"` // bits/s per connection
		Bidir         int     `json:"bidir"`
		FQRate        int64   `json:"fqrate"`
		Interval      float64 `json:"interval"` // s
	}
	// freshSettings are the test's parameters iperf3 has no field for.
	freshSettings struct {
		CC     string `json:"cc"`
		DSCP   string `json:"dscp"`
		Window int    `json:"window"` // bytes, 0: the transport's default
	}
	intervalJ struct {
		Streams         []streamInterval `json:"streams"`
		Sum             sum              `json:"sum"`
		SumBidirReverse *sum             `json:"sum_bidir_reverse,omitempty"`
	}
	// streamInterval is one stream's interval. A sending stream adds its
	// state at the interval's end, iperf3's tcp_info fields, each as fresh
	// has it; a receiving one has none (nor has iperf3's).
	streamInterval struct {
		Socket int `json:"socket"`
		sum
		SndCwnd *int64 `json:"snd_cwnd,omitempty"` // bytes, the controller's window (Stats.Window)
		// snd_wnd is TCP's send window, the receiver's advertised window
		// (tcpi_snd_wnd, RFC 9293's SND.WND), which caps the sender beside
		// snd_cwnd. fresh's stream has the same flow control, but Stats
		// does not carry the window the peer grants now: this is the most
		// it grows to, the peer's Config.ReceiveWindow, which both ends
		// take from -w.
		SndWnd *int64 `json:"snd_wnd,omitempty"` // bytes
		RTT    *int64 `json:"rtt,omitempty"`     // µs, SRTT
		// rttvar is RFC 6298's RTTVAR (RFC 9002's rttvar), as TCP's
		// tcpi_rttvar (Stats.RTTVar).
		RTTVar *int64 `json:"rttvar,omitempty"` // µs
		// pmtu is the path MTU in IP bytes, as tcpi_pmtu: path MTU
		// discovery's datagram size (Stats.DatagramSize, RFC 8899's
		// PLPMTU) plus the UDP and IP headers. It is the largest size the
		// path was seen to carry, never above Config.MaxDatagram's: a
		// lower bound of the path's MTU.
		PMTU *int `json:"pmtu,omitempty"`
	}
	sum struct {
		Start         float64 `json:"start"`   // s since the test began
		End           float64 `json:"end"`     // s
		Seconds       float64 `json:"seconds"` // End − Start
		Bytes         int64   `json:"bytes"`
		BitsPerSecond float64 `json:"bits_per_second"`
		Retransmits   *int64  `json:"retransmits,omitempty"` // sender side only
		Omitted       *bool   `json:"omitted,omitempty"`     // intervals only
		Sender        bool    `json:"sender"`                // this host sends it
	}
	endJ struct {
		Streams                 []endStream `json:"streams"`
		SumSent                 sum         `json:"sum_sent"`
		SumReceived             sum         `json:"sum_received"`
		SumSentBidirReverse     *sum        `json:"sum_sent_bidir_reverse,omitempty"`
		SumReceivedBidirReverse *sum        `json:"sum_received_bidir_reverse,omitempty"`
		CPU                     cpuPercent  `json:"cpu_utilization_percent"`
		SenderTCPCongestion     string      `json:"sender_tcp_congestion"`
		ReceiverTCPCongestion   string      `json:"receiver_tcp_congestion"`
		Fresh                   freshEnd    `json:"fresh"`
	}
	endStream struct {
		Sender   senderEnd   `json:"sender"`
		Receiver receiverEnd `json:"receiver"`
	}
	senderEnd struct {
		Socket int `json:"socket"`
		sum
		MaxSndCwnd int64 `json:"max_snd_cwnd"` // bytes
		MaxSndWnd  int64 `json:"max_snd_wnd"`  // bytes, the largest snd_wnd
		MaxRTT     int64 `json:"max_rtt"`      // µs
		MinRTT     int64 `json:"min_rtt"`      // µs
		MeanRTT    int64 `json:"mean_rtt"`     // µs, mean of the per-interval SRTTs
	}
	receiverEnd struct {
		Socket int `json:"socket"`
		sum
	}
	cpuPercent struct {
		HostTotal    float64 `json:"host_total"`
		HostUser     float64 `json:"host_user"`
		HostSystem   float64 `json:"host_system"`
		RemoteTotal  float64 `json:"remote_total"`
		RemoteUser   float64 `json:"remote_user"`
		RemoteSystem float64 `json:"remote_system"`
	}
	freshEnd struct {
		CC            string `json:"cc"`
		DSCP          string `json:"dscp"`
		SRTT          int64  `json:"srtt_us"`
		MinRTT        int64  `json:"min_rtt_us"`
		MinOWD        int64  `json:"min_owd_us"`
		CurOWD        int64  `json:"cur_owd_us"`
		DelaySignal   string `json:"delay_signal"`
		PacketsSent   int64  `json:"packets_sent"`
		PacketsLost   int64  `json:"packets_lost"`
		Retransmitted int64  `json:"retransmitted"`
	}
)

func ptr[T any](v T) *T { return &v }

// reporter writes a test's JSON: the whole object at the end (-J), or
// iperf3's line-delimited events as they happen (--json-stream).
type reporter struct {
	mu     sync.Mutex
	w      io.Writer
	json   bool
	stream bool
	res    result
}

func (r *reporter) event(name string, data any) {
	if !r.stream {
		return
	}
	b, err := json.Marshal(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{name, data})
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(append(b, '\n'))
}

func (r *reporter) started() { r.event("start", r.res.Start) }
func (r *reporter) interval(iv intervalJ) {
	r.res.Intervals = append(r.res.Intervals, iv)
	r.event("interval", iv)
}
func (r *reporter) finish(err error) error {
	if err != nil {
		r.res.Error = err.Error()
	}
	if !r.json {
		return err
	}
	if r.stream {
		if err != nil {
			r.event("error", r.res.Error)
		}
		r.event("end", r.res.End)
		return err
	}
	b, jerr := json.MarshalIndent(r.res, "", "\t")
	if jerr != nil {
		if err == nil {
			err = jerr
		}
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, werr := r.w.Write(append(b, '\n')); werr != nil && err == nil {
		err = werr
	}
	return err
}

// cpuClock measures this process's CPU use over a test, as iperf3's
// cpu_utilization_percent: user and system time over wall time, percent.
type cpuClock struct {
	wall      time.Time
	user, sys time.Duration
}

func cpuNow() cpuClock {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuClock{wall: time.Now(), user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}

// since returns total, user and system percent since c.
func (c cpuClock) since() [3]float64 {
	n := cpuNow()
	wall := n.wall.Sub(c.wall).Seconds()
	if wall <= 0 {
		return [3]float64{}
	}
	u, s := (n.user-c.user).Seconds()*100/wall, (n.sys-c.sys).Seconds()*100/wall
	return [3]float64{u + s, u, s}
}
