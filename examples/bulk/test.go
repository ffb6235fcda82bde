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
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// params is the JSON line the client writes first on the control
// connection: the test's parameters (see the package doc).
type params struct {
	Cookie    string        `json:"cookie"`
	TestStart testStart     `json:"test_start"`
	Fresh     freshSettings `json:"fresh"`
}

// paramsReply is the server's answer to params.
type paramsReply struct {
	DataPort int    `json:"data_port,omitempty"`
	Error    string `json:"error,omitempty"`
	Busy     bool   `json:"busy,omitempty"` // another client's test is running; Error says so too
}

// results is the JSON line each side writes on the control connection
// after the test: its half of every stream's figures and its CPU use.
type results struct {
	Streams []streamResult `json:"streams"`
	CPU     [3]float64     `json:"cpu"` // total, user, system %
	// Fresh is the side's transport figures over its data connections:
	// the RTTs, one-way delays and losses are a sender's (its ACKs measure
	// them), so a side that only received reports its peer's (senderFresh).
	Fresh *freshEnd `json:"fresh,omitempty"`
	Error string    `json:"error,omitempty"`
}

type streamResult struct {
	Socket   int        `json:"socket"`
	Sender   *senderEnd `json:"sender,omitempty"`   // the side that sent it
	Receiver *sum       `json:"receiver,omitempty"` // the side that read it
}

// ctrl is a control connection: JSON lines both ways.
type ctrl struct {
	conn *transport.Conn
	br   *bufio.Reader
}

func newCtrl(c *transport.Conn) *ctrl { return &ctrl{conn: c, br: bufio.NewReader(c)} }

func (c *ctrl) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.conn.Write(append(b, '\n'))
	return err
}

// recv reads one JSON line into v within timeout; ctx ending (Ctrl-C, the
// server's shutdown) cuts the wait short with ctx's cause.
func (c *ctrl) recv(ctx context.Context, v any, timeout time.Duration) error {
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(time.Now()) })
	defer func() {
		stop()
		_ = c.conn.SetReadDeadline(time.Time{})
	}()
	line, err := c.br.ReadSlice('\n')
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// stream is one direction of one data connection: what the local host
// sends on it (send) or reads from it.
type stream struct {
	id      int // iperf3's "socket": 1..P forward, P+1..2P the --bidir reverse direction
	conn    *transport.Conn
	send    bool
	forward bool // client to server

	// written counts the bytes Write accepted (sending): what the
	// application handed the transport, as iperf3's sender counts what
	// write() accepted. fresh's stream is reliable and the receiver reads
	// to EOF, so every one of them is read: the receiver's count ends equal
	// to it, never above.
	written atomic.Int64
	read    atomic.Int64 // bytes read (receiving)
	readEnd time.Time    // when EOF was read
	readErr error

	// A sending stream's fixed figures: the peer's receive window
	// (snd_wnd), its RTTVAR's source and the IP and UDP headers' bytes.
	sndWnd int64
	hdrs   int

	prevBytes, prevRetr int64
	maxCwnd, maxSndWnd  int64
	maxRTT, minRTT      int64
	sumRTT, nRTT        int64
}

// test runs the data phase on one side.
type test struct {
	o       testStart
	streams []*stream
	conns   []*transport.Conn // the data connections, each once
	fresh   freshSettings     // for end.fresh
	rep     *reporter
	text    io.Writer
	who     string // "client" or "server", for errors
	begin   time.Time
	end     time.Time // when -t ended
}

// newStreams makes the streams of conns as seen from one side; win is the
// test's -w (0: the transport's default), rv the sending connections'
// RTTVARs.
func newStreams(conns []*transport.Conn, ts testStart, isClient bool, win int) []*stream {
	var ss []*stream
	n := len(conns)
	for i, c := range conns {
		switch {
		case ts.Bidir == 1:
			ss = append(ss, &stream{id: i + 1, conn: c, forward: true, send: isClient},
				&stream{id: n + i + 1, conn: c, forward: false, send: !isClient})
		case ts.Reverse == 1:
			ss = append(ss, &stream{id: i + 1, conn: c, forward: false, send: !isClient})
		default:
			ss = append(ss, &stream{id: i + 1, conn: c, forward: true, send: isClient})
		}
	}
	for _, s := range ss {
		if s.send {
			s.sndWnd, s.hdrs = int64(window(win)), ipUDPHeaders(s.conn)
		}
	}
	return ss
}

// primary says whether s is in the test's direction (sum), not the --bidir
// reverse one (sum_bidir_reverse).
func (t *test) primary(s *stream) bool { return s.forward != (t.o.Reverse == 1) }

// run sends and reads for the test's duration and until every receiving
// stream reached EOF; ctx ends it early with its cause, after the figures
// up to then are taken (the last interval reported, the senders' Stats),
// so that local still summarises what was done.
func (t *test) run(ctx context.Context) error {
	dur := time.Duration(t.o.Duration * float64(time.Second))
	ivl := time.Duration(t.o.Interval * float64(time.Second))
	block := make([]byte, t.o.Blksize)
	_, _ = rand.Read(block)
	stop := make(chan struct{})
	errc := make(chan error, 2*len(t.streams))
	var writers, readers sync.WaitGroup
	t.begin = time.Now()
	for _, s := range t.streams {
		if s.send {
			writers.Go(func() {
				if err := t.write(s, block, stop); err != nil {
					errc <- fmt.Errorf("stream %d: write: %w", s.id, err)
				}
			})
			continue
		}
		readers.Go(func() {
			buf := make([]byte, 128<<10)
			for {
				n, err := s.conn.Read(buf)
				s.read.Add(int64(n))
				if err != nil {
					s.readEnd = time.Now()
					if !errors.Is(err, io.EOF) {
						s.readErr = err
						errc <- fmt.Errorf("stream %d: read after %d bytes: %w", s.id, s.read.Load(), err)
					}
					return
				}
			}
		})
	}
	// halt ends the writing. A Write blocked on a full send buffer returns
	// at once with the part it buffered (the deadline), so that once the
	// writers are done the senders' counts are final: what they report is
	// what the receivers will read.
	halted := false
	halt := func() {
		if halted {
			return
		}
		halted = true
		close(stop)
		for _, s := range t.streams {
			if s.send {
				_ = s.conn.SetWriteDeadline(time.Now())
			}
		}
		writers.Wait()
		for _, s := range t.streams {
			if s.send {
				_ = s.conn.SetWriteDeadline(time.Time{})
			}
		}
	}
	abort := func(err error) error {
		halt()
		// At once, not one linger after another (Close is idempotent,
		// so --bidir's two streams on one connection are fine).
		var closing sync.WaitGroup
		for _, s := range t.streams {
			closing.Go(func() { s.conn.Close() })
		}
		closing.Wait()
		readers.Wait()
		return err
	}
	deadline := time.NewTimer(dur)
	defer deadline.Stop()
	var tick <-chan time.Time
	if ivl > 0 {
		tk := time.NewTicker(ivl)
		defer tk.Stop()
		tick = tk.C
	}
	prevT := t.begin
loop:
	for {
		select {
		case <-ctx.Done():
			halt()
			t.stopAt(time.Now(), prevT, ivl)
			return abort(context.Cause(ctx))
		case err := <-errc:
			return abort(err)
		case now := <-tick:
			if t.begin.Add(dur).Sub(now) < ivl/10 {
				// The last tick, at or just before the deadline: the
				// deadline ends this interval instead, so that no sliver
				// of an interval is left over (iperf3 does not report one
				// either) and the intervals still add up to the total.
				continue
			}
			t.report(prevT, now)
			prevT = now
		case now := <-deadline.C:
			halt()
			t.stopAt(now, prevT, ivl)
			break loop
		}
	}
	select {
	case err := <-errc:
		return abort(err)
	default:
	}
	for _, s := range t.streams {
		if s.send {
			if err := s.conn.CloseWrite(); err != nil {
				return abort(fmt.Errorf("stream %d: %w", s.id, err))
			}
		}
	}
	// Wait for the peer's data still in flight, and for the peer to
	// acknowledge ours: the senders' figures (retransmissions, losses,
	// RTTs) are final only once the send buffer has drained, and this
	// side's results go to the peer after this.
	done, quit := make(chan struct{}), make(chan struct{})
	defer close(quit)
	go func() {
		readers.Wait()
		if err := t.awaitAcked(quit); err != nil {
			select {
			case errc <- err:
			case <-quit:
			}
			return
		}
		close(done)
	}()
	timeout := time.NewTimer(drainTimeout(dur))
	defer timeout.Stop()
	select {
	case <-done:
	case err := <-errc:
		return abort(err)
	case <-ctx.Done():
		return abort(context.Cause(ctx))
	case <-timeout.C:
		return abort(errors.New("the peer's data did not end: is the other side fresh's bulk?"))
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	return nil
}

// stopAt ends the sending part of the test at now, once the writers are
// done: the last interval is reported, ending where the test does.
func (t *test) stopAt(now, prevT time.Time, ivl time.Duration) {
	t.end = now
	if ivl > 0 {
		t.report(prevT, t.end)
	}
}

// awaitAcked returns once the peer has acknowledged every byte written on
// the sending streams, or quit is closed. The transport offers no signal
// for it, so it polls Stats.
func (t *test) awaitAcked(quit <-chan struct{}) error {
	for _, s := range t.streams {
		if !s.send {
			continue
		}
		for s.conn.Stats().StreamBytesAcked < s.written.Load() {
			select {
			case <-quit:
				return nil
			case <-s.conn.Done():
				return fmt.Errorf("stream %d: the connection ended before the peer acknowledged the data: %w", s.id, s.conn.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// drainTimeout bounds the wait for data still buffered when -t ends (a
// full -w buffer on a slow path takes a while to deliver).
func drainTimeout(dur time.Duration) time.Duration { return 30*time.Second + 2*dur }

// write sends block on s until stop, paced to the target rate if any, and
// counts in s.written what each Write accepted.
func (t *test) write(s *stream, block []byte, stop <-chan struct{}) error {
	rate := t.o.TargetBitrate
	start := time.Now()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if rate > 0 {
			due := start.Add(time.Duration(float64(s.written.Load()) * 8 / rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				tm := time.NewTimer(wait)
				select {
				case <-stop:
					tm.Stop()
					return nil
				case <-tm.C:
				}
			}
		}
		n, err := s.conn.Write(block)
		s.written.Add(int64(n))
		if err != nil {
			select {
			case <-stop:
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return nil // halted mid-Write: n bytes went, counted
				}
			default:
			}
			return err
		}
	}
}

// report adds the interval from..to of every stream.
func (t *test) report(from, to time.Time) {
	dt := to.Sub(from).Seconds()
	if dt <= 0 {
		return
	}
	st, en := from.Sub(t.begin).Seconds(), to.Sub(t.begin).Seconds()
	iv := intervalJ{}
	var fwd, rev *sum
	for _, s := range t.streams {
		su := sum{Start: st, End: en, Seconds: dt, Omitted: ptr(false), Sender: s.send}
		si := streamInterval{Socket: s.id}
		if s.send {
			x, w := s.conn.Stats(), s.written.Load()
			su.Bytes = w - s.prevBytes
			su.Retransmits = ptr(x.Retransmitted - s.prevRetr)
			s.prevBytes, s.prevRetr = w, x.Retransmitted
			rtt := x.SRTT.Microseconds()
			si.SndCwnd, si.SndWnd, si.RTT = ptr(int64(x.Window)), ptr(s.sndWnd), ptr(rtt)
			si.PMTU = ptr(x.DatagramSize + s.hdrs)
			si.RTTVar = ptr(x.RTTVar.Microseconds())
			s.maxCwnd, s.maxSndWnd = max(s.maxCwnd, int64(x.Window)), max(s.maxSndWnd, s.sndWnd)
			if rtt > 0 {
				s.maxRTT = max(s.maxRTT, rtt)
				if s.minRTT == 0 || rtt < s.minRTT {
					s.minRTT = rtt
				}
				s.sumRTT += rtt
				s.nRTT++
			}
		} else {
			n := s.read.Load()
			su.Bytes = n - s.prevBytes
			s.prevBytes = n
		}
		su.BitsPerSecond = float64(su.Bytes) * 8 / dt
		si.sum = su
		iv.Streams = append(iv.Streams, si)
		p := &fwd
		if !t.primary(s) {
			p = &rev
		}
		if *p == nil {
			*p = &sum{Start: st, End: en, Seconds: dt, Omitted: ptr(false), Sender: s.send}
			if s.send {
				(*p).Retransmits = ptr(int64(0))
			}
		}
		(*p).Bytes += su.Bytes
		if su.Retransmits != nil {
			*(*p).Retransmits += *su.Retransmits
		}
	}
	for _, p := range []*sum{fwd, rev} {
		if p != nil {
			p.BitsPerSecond = float64(p.Bytes) * 8 / dt
		}
	}
	if fwd != nil {
		iv.Sum = *fwd
	}
	iv.SumBidirReverse = rev
	for _, si := range iv.Streams {
		t.line(si.Socket, si.sum, si.SndCwnd, "")
	}
	if len(t.streams) > 1 {
		if fwd != nil {
			t.line(-1, *fwd, nil, "")
		}
		if rev != nil {
			t.line(-1, *rev, nil, "")
		}
	}
	t.rep.interval(iv)
}

// line prints one iperf3 text line; id -1 is [SUM].
func (t *test) line(id int, su sum, cwnd *int64, role string) {
	tag := fmt.Sprintf("[%3d]", id)
	if id < 0 {
		tag = "[SUM]"
	}
	dir := ""
	if t.o.Bidir == 1 {
		dir = "[RX-" + map[bool]string{true: "C", false: "S"}[t.who == "client"] + "]"
		if su.Sender {
			dir = "[TX-" + map[bool]string{true: "C", false: "S"}[t.who == "client"] + "]"
		}
	}
	retr, cw := "", ""
	if su.Retransmits != nil {
		retr = fmt.Sprintf("%4d", *su.Retransmits)
	}
	if cwnd != nil {
		cw = "  " + formatBytes(float64(*cwnd))
	}
	fmt.Fprintf(t.text, "%s%s %s sec  %12s  %15s  %4s%s%s\n", tag, dir, interval(su.Start, su.End),
		formatBytes(float64(su.Bytes)), formatBits(su.BitsPerSecond), retr, cw, role)
}

// local returns this side's half of the results.
func (t *test) local(cpu [3]float64) results {
	r := results{CPU: cpu, Fresh: ptr(freshStats(t.conns, t.fresh))}
	secs := t.end.Sub(t.begin).Seconds()
	for _, s := range t.streams {
		sr := streamResult{Socket: s.id}
		if s.send {
			mean := int64(0)
			if s.nRTT > 0 {
				mean = s.sumRTT / s.nRTT
			}
			final := s.conn.Stats()
			b := s.written.Load() // final: the writers are done (halt)
			sr.Sender = &senderEnd{Socket: s.id,
				sum: sum{End: secs, Seconds: secs, Bytes: b, BitsPerSecond: float64(b) * 8 / secs,
					Retransmits: ptr(final.Retransmitted)},
				MaxSndCwnd: s.maxCwnd, MaxSndWnd: s.maxSndWnd, MaxRTT: s.maxRTT, MinRTT: s.minRTT, MeanRTT: mean}
		} else {
			rs := s.readEnd.Sub(t.begin).Seconds()
			b := s.read.Load()
			sr.Receiver = &sum{End: rs, Seconds: rs, Bytes: b, BitsPerSecond: float64(b) * 8 / rs}
		}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// finish fills res.End from both halves of the results and prints the
// summary. A half the peer did not send (peer is empty when the test was
// interrupted) is left out of the sums and the text, not printed as zero.
func (t *test) finish(res *result, mine, peer results) {
	peers := map[int]streamResult{}
	for _, s := range peer.Streams {
		peers[s.Socket] = s
	}
	var sent, recv, sentRev, recvRev *sum
	add := func(p **sum, x sum, send bool, retr bool) {
		if *p == nil {
			*p = &sum{Sender: send}
			if retr {
				(*p).Retransmits = ptr(int64(0))
			}
		}
		(*p).Bytes += x.Bytes
		(*p).End = max((*p).End, x.End)
		(*p).Seconds = (*p).End
		if retr && x.Retransmits != nil {
			*(*p).Retransmits += *x.Retransmits
		}
	}
	type known struct{ sender, receiver bool }
	var have []known
	res.End.Streams = []endStream{}
	for i, s := range t.streams {
		m, p := mine.Streams[i], peers[s.id]
		var es endStream
		var k known
		if s.send {
			es.Sender, k.sender = *m.Sender, true
			if p.Receiver != nil {
				es.Receiver.sum, k.receiver = *p.Receiver, true
			}
		} else {
			if p.Sender != nil {
				es.Sender, k.sender = *p.Sender, true
			}
			es.Receiver.sum, k.receiver = *m.Receiver, true
		}
		es.Sender.Socket, es.Receiver.Socket = s.id, s.id
		es.Sender.Sender, es.Receiver.Sender = s.send, s.send
		res.End.Streams = append(res.End.Streams, es)
		have = append(have, k)
		ps, pr := &sent, &recv
		if !t.primary(s) {
			ps, pr = &sentRev, &recvRev
		}
		if k.sender {
			add(ps, es.Sender.sum, s.send, true)
		}
		if k.receiver {
			add(pr, es.Receiver.sum, s.send, false)
		}
	}
	for _, p := range []*sum{sent, recv, sentRev, recvRev} {
		if p != nil && p.Seconds > 0 {
			p.BitsPerSecond = float64(p.Bytes) * 8 / p.Seconds
		}
	}
	if sent != nil {
		res.End.SumSent = *sent
	}
	if recv != nil {
		res.End.SumReceived = *recv
	}
	res.End.SumSentBidirReverse, res.End.SumReceivedBidirReverse = sentRev, recvRev
	res.End.CPU = cpuPercent{HostTotal: mine.CPU[0], HostUser: mine.CPU[1], HostSystem: mine.CPU[2],
		RemoteTotal: peer.CPU[0], RemoteUser: peer.CPU[1], RemoteSystem: peer.CPU[2]}

	fmt.Fprintln(t.text, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	fmt.Fprintln(t.text, "[ ID] Interval           Transfer     Bitrate         Retr")
	for i, es := range res.End.Streams {
		if have[i].sender {
			t.line(es.Sender.Socket, es.Sender.sum, nil, "             sender")
		}
		if have[i].receiver {
			r := es.Receiver.sum
			r.Retransmits = nil
			t.line(es.Sender.Socket, r, nil, "             receiver")
		}
	}
	if len(t.streams) > 1 {
		for _, p := range [][2]*sum{{sent, recv}, {sentRev, recvRev}} {
			if p[0] != nil {
				t.line(-1, *p[0], nil, "             sender")
			}
			if p[1] != nil {
				r := *p[1]
				r.Retransmits = nil
				t.line(-1, r, nil, "             receiver")
			}
		}
	}
}

// senderFresh returns the transport figures end.fresh and the summary
// report: this side's if it sent data (the client, or both sides with
// --bidir), else the peer's, which sent it (-R's server, the client in the
// normal direction). A receiver has no RTT of its own: only a sender
// samples it, from the ACKs of its packets (RFC 6298, RFC 9002 §5). ok is
// false if the figures are the peer's and it did not send them (a test
// cut short, or a peer that predates them).
func (t *test) senderFresh(mine, peer results) (f freshEnd, ok bool) {
	sends := false
	for _, s := range t.streams {
		sends = sends || s.send
	}
	src := peer.Fresh
	if sends {
		src = mine.Fresh
	}
	if src == nil {
		return freshEnd{}, false
	}
	return *src, true
}

// defaultWindow is what -w 0 leaves Config.SendBuffer and
// Config.ReceiveWindow at: the transport's defaults (the same size).
const defaultWindow = transport.DefaultReceiveWindow

// window is the send buffer and receive window a test's -w gives.
func window(w int) int {
	if w > 0 {
		return w
	}
	return defaultWindow
}

// ipUDPHeaders is the bytes of IP and UDP header around c's datagrams
// (RFC 768, RFC 791, RFC 8200), for pmtu: an IPv4-mapped peer of a
// dual-stack socket is reached over IPv4.
func ipUDPHeaders(c *transport.Conn) int {
	if a, ok := c.RemoteAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		return 40 + 8
	}
	return 20 + 8
}

// freshStats sums the data connections' transport statistics.
func freshStats(conns []*transport.Conn, settings freshSettings) freshEnd {
	f := freshEnd{CC: settings.CC, DSCP: settings.DSCP}
	for i, c := range conns {
		s := c.Stats()
		f.SRTT = max(f.SRTT, s.SRTT.Microseconds())
		if i == 0 || s.MinRTT.Microseconds() < f.MinRTT {
			f.MinRTT = s.MinRTT.Microseconds()
		}
		if i == 0 || s.MinOWD.Microseconds() < f.MinOWD {
			f.MinOWD = s.MinOWD.Microseconds()
		}
		f.CurOWD = max(f.CurOWD, s.CurOWD.Microseconds())
		if i == 0 {
			f.DelaySignal = s.Signal.String()
		}
		f.PacketsSent += s.PacketsSent
		f.PacketsLost += s.PacketsLost
		f.Retransmitted += s.Retransmitted
	}
	return f
}

// connectedOf is start.connected for the data connections.
func connectedOf(conns []*transport.Conn) []connected {
	var cs []connected
	for i, c := range conns {
		la, ra := c.LocalAddr().(*net.UDPAddr), c.RemoteAddr().(*net.UDPAddr)
		cs = append(cs, connected{Socket: i + 1, LocalHost: la.IP.String(), LocalPort: la.Port,
			RemoteHost: ra.IP.String(), RemotePort: ra.Port})
	}
	return cs
}

// closeAll closes the data connections at once (each Close lingers for
// its own unacknowledged bytes).
func closeAll(conns []*transport.Conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
}

func newStart(o testStart, f freshSettings, cookie string) start {
	now := time.Now()
	return start{
		Version:       "fresh bulk",
		SystemInfo:    systemInfo(),
		Timestamp:     timestamp{Time: now.UTC().Format(time.RFC1123), Timesecs: now.Unix()},
		Cookie:        cookie,
		SockBufsize:   f.Window,
		SndbufActual:  window(f.Window),
		RcvbufActual:  window(f.Window),
		TargetBitrate: o.TargetBitrate,
		TestStart:     o,
		Fresh:         f,
		Connected:     []connected{},
	}
}

func newCookie() string {
	const letters = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 36)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}
