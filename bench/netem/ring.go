package netem

// ring is a growable FIFO ring buffer. Its capacity is a power of two and
// only grows (doubling), so a queue that has reached its steady-state size
// never allocates again: the hot path of every discipline and of the delay
// line is allocation-free.
type ring[T any] struct {
	buf  []T
	head int // index of the oldest element
	n    int // number of elements
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// pop removes and returns the oldest element; the zero T if empty.
func (r *ring[T]) pop() T {
	var zero T
	if r.n == 0 {
		return zero
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero // let the GC have dropped packets
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}

// peek returns the oldest element without removing it; the zero T if empty.
func (r *ring[T]) peek() T {
	if r.n == 0 {
		var zero T
		return zero
	}
	return r.buf[r.head]
}

// at returns the i-th oldest element, 0 ≤ i < len().
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring[T]) grow() {
	c := 2 * len(r.buf)
	if c == 0 {
		c = 8
	}
	b := make([]T, c)
	for i := 0; i < r.n; i++ {
		b[i] = r.at(i)
	}
	r.buf, r.head = b, 0
}

// pktQueue is a packet FIFO that keeps its byte backlog and the largest
// packet it has ever held (RFC 8289's maxpacket, used by CoDel's "don't
// drop the last MTU" rule). It is the per-queue storage that CoDel runs
// over, alone (CoDel) or per flow (FQ-CoDel, CAKE).
type pktQueue struct {
	r         ring[*Packet]
	bytes     int // sum of Size of the queued packets, bytes
	maxPacket int // largest Size ever pushed, bytes
}

func (q *pktQueue) len() int { return q.r.len() }

func (q *pktQueue) push(p *Packet) {
	q.r.push(p)
	q.bytes += p.Size
	if p.Size > q.maxPacket {
		q.maxPacket = p.Size
	}
}

func (q *pktQueue) pop() *Packet {
	p := q.r.pop()
	if p != nil {
		q.bytes -= p.Size
	}
	return p
}
