package transport

import (
	"container/heap"
	"sync"
	"time"

	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/internal/wire"
)

// driver sends for, and keeps the timers of, every connection of one
// Listener, on one goroutine. A goroutine per connection (as a client
// Conn has, and as quic-go runs per connection) costs a stack of 2 to
// 8 KiB, a timer and a wake-up channel even while the connection is idle:
// with thousands of mostly idle sources on one monitor that is most of
// its memory. Here an idle connection is an entry in a timer heap, and a
// busy one is run when the Listener's reader or the application kicks it.
//
// It does what a client Conn's loop does, for many connections: run the
// session (Conn.step) when it was kicked or its deadline passed, send what
// it polled, and re-arm its deadline. It shares one send batch among them
// all, since a batch is only needed while a send is built. A send that
// finds the socket's buffer full holds the others up; they would wait
// anyway, as every connection of a Listener sends through that buffer.
type driver struct {
	clk  clock.Clock
	wake chan struct{} // something was queued
	stop chan struct{} // close: exit once every Conn has finished
	done chan struct{} // closed when run has returned

	mu    sync.Mutex
	queue []*Conn // kicked, to run soon; each at most once (Conn.queued)

	// The run goroutine's alone.
	timers timerHeap
	tx     *txBatch
}

// maxRounds bounds how many full batches one connection sends in a row
// before the others get their turn: a bulk sender must not starve the
// timers and ACKs of the rest.
const maxRounds = 4

func newDriver(cfg *Config, sock *socket) *driver {
	return &driver{
		clk:  cfg.Clock,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		tx:   newTxBatch(sock, max(cfg.MaxDatagram, wire.MinInitialSize)),
	}
}

// start runs a new connection (its first step sends the Accept).
func (d *driver) start(c *Conn) {
	c.drv = d
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

// close stops the driver once the connections it runs have finished (the
// Listener closes them first) and waits for it.
func (d *driver) close() {
	close(d.stop)
	<-d.done
}

// run is the driver's goroutine.
func (d *driver) run() {
	defer close(d.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch []*Conn
	for {
		d.mu.Lock()
		batch, d.queue = d.queue, batch[:0]
		for _, c := range batch {
			c.queued = false
		}
		d.mu.Unlock()
		for _, c := range batch {
			d.service(c)
		}
		clear(batch) // do not keep finished Conns alive
		now := d.clk.Now()
		for len(d.timers) > 0 && !now.Before(d.timers[0].due) {
			d.service(d.timers[0])
		}
		d.mu.Lock()
		more := len(d.queue) > 0
		d.mu.Unlock()
		if more {
			continue
		}
		if len(d.timers) > 0 {
			timer.Reset(max(d.timers[0].due.Sub(d.clk.Now()), 0))
		}
		select {
		case <-d.wake:
		case <-timer.C:
		case <-d.stop:
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

// service runs c: up to maxRounds batches, then its deadline goes into
// the heap, or, if it has more to send, it goes to the back of the queue.
// A closed connection leaves the driver.
func (d *driver) service(c *Conn) {
	if c.finished { // written by this goroutine only
		return
	}
	for range maxRounds {
		next, full, closed := c.step(d.tx)
		if closed {
			d.tx.reset(d.tx.sock, cap(d.tx.scratch)) // a closed session's leftovers
			d.unarm(c)
			d.mu.Lock()
			c.finished = true
			d.mu.Unlock()
			c.finish()
			return
		}
		if !full {
			d.arm(c, next)
			return
		}
	}
	// The batch holds one polled datagram (the carry): it is c's, so it
	// goes now, before another connection uses the batch.
	if err := d.tx.send(c.peer); err != nil {
		c.cfg.Logger.Debug("fresh: write failed", "peer", c.peer, "err", err)
	}
	d.arm(c, c.clk.Now())
	d.schedule(c)
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
