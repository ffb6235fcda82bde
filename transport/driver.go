package transport

import (
	"container/heap"
	"log/slog"
	"sync"

	"github.com/fresh-udp/fresh/clock"
)

// driver sends for, and keeps the timers of, every connection of one
// Transport (its Listener's and its Dial'ed ones), on one goroutine. A goroutine per connection (as a client
// Conn has, and as quic-go runs per connection) costs a stack of 2 to
// 8 KiB, a timer and a wake-up channel even while the connection is idle:
// with thousands of mostly idle sources on one monitor that is most of
// its memory. Here an idle connection is an entry in a timer heap, and a
// busy one is run when the Listener's reader or the application kicks it.
//
// It runs each session (Conn.poll) when it was kicked or its deadline
// passed, sends what it polled, and re-arms its deadline. The datagrams of every connection it
// runs in one pass share one batch, sent with one sendmmsg: the ACKs of a
// reader's batch of updates from many sources leave in one system call,
// not one each. A send that
// finds the socket's buffer full holds the others up; they would wait
// anyway, as every connection of a Listener sends through that buffer.
type driver struct {
	clk     clock.Clock
	log     *slog.Logger
	onError func(error)   // a send failed
	wake    chan struct{} // something was queued
	stop    chan struct{} // close: exit once every Conn has finished
	done    chan struct{} // closed when run has returned

	mu       sync.Mutex
	queue    []*Conn // kicked, to run soon; each at most once (Conn.queued)
	nextSock *socket // send on this socket from the next pass (Conn.Migrate)

	maxDatagram int

	// The run goroutine's alone.
	timers  timerHeap
	tx      *txBatch
	closing []*Conn // closed in this pass: finished once their last datagram is sent
}

// maxRounds bounds how many full batches one connection sends in a row
// before the others get their turn: a bulk sender must not starve the
// timers and ACKs of the rest.
const maxRounds = 4

func newDriver(clk clock.Clock, log *slog.Logger, sock *socket, maxDatagram int, onError func(error)) *driver {
	return &driver{
		clk:     clk,
		log:     log,
		onError: onError,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		tx:      newTxBatch(sock, maxDatagram),

		maxDatagram: maxDatagram,
	}
}

// useSocket makes the driver send on s from its next pass on.
func (d *driver) useSocket(s *socket) {
	d.mu.Lock()
	d.nextSock = s
	d.mu.Unlock()
	signal(d.wake)
}

// start runs a new connection (its first step sends the Accept).
func (d *driver) start(c *Conn) {
	c.drv = d
	c.startTrace()
	d.schedule(c)
}

// schedule queues c to run soon. It is safe from any goroutine.
func (d *driver) schedule(c *Conn) {
	d.mu.Lock()
	if !c.queued && !c.finished {
		c.queued = true
		d.queue = append(d.queue, c)
	}
	d.mu.Unlock()
	signal(d.wake)
}

// scheduleAll queues every Conn of cs (a reader's batch) with one lock and
// one wake-up, so the driver finds them together and sends their replies in
// one batch, rather than waking for the first alone.
func (d *driver) scheduleAll(cs []*Conn) {
	d.mu.Lock()
	for _, c := range cs {
		if !c.queued && !c.finished {
			c.queued = true
			d.queue = append(d.queue, c)
		}
	}
	d.mu.Unlock()
	signal(d.wake)
}

// close stops the driver once the connections it runs have finished (the
// Transport closes them first) and waits for it.
func (d *driver) close() {
	close(d.stop)
	<-d.done
}

// run is the driver's goroutine.
func (d *driver) run() {
	defer close(d.done)
	var timer wakeTimer
	defer timer.close()
	var batch []*Conn
	for {
		d.mu.Lock()
		batch, d.queue = d.queue, batch[:0]
		for _, c := range batch {
			c.queued = false
		}
		sock := d.nextSock
		d.nextSock = nil
		d.mu.Unlock()
		if sock != nil {
			d.flush() // what was batched goes on the old socket
			d.tx.reset(sock, d.maxDatagram)
		}
		for _, c := range batch {
			d.service(c)
		}
		clear(batch) // do not keep finished Conns alive
		now := d.clk.Now()
		for len(d.timers) > 0 && !now.Before(d.timers[0].due) {
			d.service(d.timers[0])
		}
		d.flush()
		d.mu.Lock()
		more := len(d.queue) > 0
		d.mu.Unlock()
		if more {
			continue
		}
		var due clock.Mono
		if len(d.timers) > 0 {
			due = d.timers[0].due
		}
		timer.set(due, d.clk.Now())
		select {
		case <-d.wake:
		case <-timer.nearC():
			timer.fired(true)
		case <-timer.farC():
			timer.fired(false)
		case <-d.stop:
			return
		}
	}
}

// service runs c: it polls c into the batch, sending the batch whenever
// it fills, for up to maxRounds full batches; then c's deadline goes into
// the heap, or, if it has more to send, c goes to the back of the queue. A
// closed connection leaves the driver (finished after the pass's flush, so
// its CLOSE has left when Close returns).
func (d *driver) service(c *Conn) {
	if c.finished { // written by this goroutine only
		return
	}
	for round := 1; ; round++ {
		next, full, closed := c.poll(d.tx)
		if closed {
			d.unarm(c)
			d.mu.Lock()
			c.finished = true
			d.mu.Unlock()
			d.closing = append(d.closing, c)
			return
		}
		if !full {
			d.arm(c, d.onDriverClock(c, next))
			return
		}
		d.send() // the datagram that did not fit starts the next batch
		if round == maxRounds {
			d.arm(c, d.clk.Now())
			d.schedule(c)
			return
		}
	}
}

// send sends the batch.
func (d *driver) send() {
	if err := d.tx.send(); err != nil {
		d.onError(err)
	}
}

// flush sends everything batched, then finishes the connections that
// closed in this pass.
func (d *driver) flush() {
	for d.tx.n > 0 { // twice if the first send left a carried datagram
		d.send()
	}
	for _, c := range d.closing {
		c.finish()
	}
	clear(d.closing)
	d.closing = d.closing[:0]
}

// onDriverClock converts c's deadline from c's clock to the driver's.
// Each Conn keeps time on its own Config.Clock, and a Mono reading counts
// from its clock's origin: every Config that leaves Clock nil gets a
// clock.NewSystem of its own, started when the Config was filled in, so
// on a Transport shared by many Dials the same instant reads differently
// on each connection's clock and on the driver's (the first Config's).
// The heap orders every deadline on the driver's. Compared unconverted, a
// connection dialled later than the driver started looks overdue by the
// difference: the driver serviced it again and again without advancing
// its own now (a connection whose clock said "not yet" returned the same
// deadline), starving every other connection until that handshake timed
// out.
func (d *driver) onDriverClock(c *Conn, due clock.Mono) clock.Mono {
	if due == 0 {
		return 0
	}
	if t := d.clk.Now().Add(due.Sub(c.clk.Now())); t != 0 {
		return t
	}
	return 1 // 0 means none
}

// arm sets c's deadline in the heap (0: none).
func (d *driver) arm(c *Conn, due clock.Mono) {
	if due == 0 {
		d.unarm(c)
		return
	}
	c.due = due
	if c.timerIdx >= 0 {
		heap.Fix(&d.timers, c.timerIdx)
		return
	}
	heap.Push(&d.timers, c)
}

// unarm takes c out of the heap.
func (d *driver) unarm(c *Conn) {
	if c.timerIdx >= 0 {
		heap.Remove(&d.timers, c.timerIdx)
	}
}

// timerHeap orders connections by deadline (container/heap); each Conn
// knows its index, so a deadline moves in O(log n).
type timerHeap []*Conn

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].timerIdx, h[j].timerIdx = i, j
}

func (h *timerHeap) Push(x any) {
	c := x.(*Conn)
	c.timerIdx = len(*h)
	*h = append(*h, c)
}

func (h *timerHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	c.timerIdx = -1
	*h = old[:len(old)-1]
	return c
}
