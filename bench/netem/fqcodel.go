package netem

import (
	"fmt"
	"time"

	"github.com/fresh-udp/fresh/clock"
)

// FQ-CoDel parameters, RFC 8290 §4 and §5.1; also the AQM paper's Table 1.
const (
	// DefaultFlows is the number of flow queues (RFC 8290 §5.1: 1024).
	DefaultFlows = 1024
	// DefaultQuantum is the DRR quantum in bytes (RFC 8290 §4.1, §5.1:
	// 1514, an Ethernet MTU plus its 14-byte header).
	DefaultQuantum = 1514
	// maxFlows bounds the flow table so a config typo cannot allocate
	// gigabytes (Linux caps fq_codel flows at 65536 too).
	maxFlows = 65536
)

// Which list a flow queue is on (RFC 8290 §4.2).
const (
	onNoList uint8 = iota
	onNewList
	onOldList
)

// flowQueue is one FQ flow queue: its packets, its DRR deficit, its CoDel
// state and which scheduler list it is on.
type flowQueue struct {
	q       pktQueue
	cd      codel
	deficit int // DRR deficit, bytes (may go negative, RFC 8290 §4.2)
	list    uint8
}

// flowSched is the FQ-CoDel scheduler of RFC 8290 §4 over a fixed table of
// flow queues: hashing (§4.1.1), new/old-flow lists with the sparse-flow
// priority and DRR (§4.2), CoDel per queue (§4.3). It has no limit of its
// own: FQCoDel and each CAKE tin wrap it and apply the limit, because CAKE
// drops from the fattest flow across all its tins.
//
// The flow table is allocated once; each flow's packet ring grows on first
// use and is kept, so steady state does not allocate.
type flowSched struct {
	flows    []flowQueue
	newFlows ring[int32] // indices of flows on the new-flows list
	oldFlows ring[int32] // indices of flows on the old-flows list
	quantum  int         // DRR quantum, bytes
	prm      codelParams
	seed     uint64 // hash perturbation
	drop     DropFunc
	n        int // backlog, packets
	bytes    int // backlog, bytes
}

func newFlowSched(flows, quantum int, prm codelParams, seed uint64, drop DropFunc) (flowSched, error) {
	if flows < 0 || flows > maxFlows {
		return flowSched{}, invalid("flows %d out of range 0..%d", flows, maxFlows)
	}
	if quantum < 0 {
		return flowSched{}, invalid("quantum %d must not be negative", quantum)
	}
	if flows == 0 {
		flows = DefaultFlows
	}
	if quantum == 0 {
		quantum = DefaultQuantum
	}
	return flowSched{
		flows:   make([]flowQueue, flows),
		quantum: quantum,
		prm:     prm,
		seed:    seed,
		drop:    drop,
	}, nil
}

// flowIndex maps a FlowKey to a flow queue (RFC 8290 §4.1.1 leaves the
// hash to the implementation; Linux uses a perturbed jhash of the 5-tuple).
// Ours: the SplitMix64 finaliser of FlowKey XOR the seed, a bijective mix
// whose upper 32 bits are reduced to [0, flows) by multiply-shift (Lemire's
// reduction, Linux's reciprocal_scale). It is fixed per seed, so runs are
// reproducible; distinct keys can still collide and then share a queue,
// exactly as in fq_codel.
func (s *flowSched) flowIndex(key uint64) int {
	h := key ^ s.seed
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return int(((h >> 32) * uint64(len(s.flows))) >> 32)
}

// enqueue timestamps p and appends it to its flow queue; a flow on no list
// goes to the tail of the new-flows list with a full quantum (RFC 8290
// §4.1).
func (s *flowSched) enqueue(now clock.Mono, p *Packet) {
	i := s.flowIndex(p.FlowKey)
	f := &s.flows[i]
	p.EnqueuedAt = now
	f.q.push(p)
	s.n++
	s.bytes += p.Size
	if f.list == onNoList {
		f.list = onNewList
		f.deficit = s.quantum
		s.newFlows.push(int32(i))
	}
}

// dequeue implements RFC 8290 §4.2: serve the head of new flows, else of
// old flows; a flow whose deficit is spent gets a quantum and moves to the
// tail of old flows; a flow CoDel leaves empty is removed, except that an
// empty new flow moves to old flows if any exist (so a flow cannot regain
// new-flow priority by emptying and refilling within one round).
func (s *flowSched) dequeue(now clock.Mono) *Packet {
	for {
		lst := &s.newFlows
		if lst.len() == 0 {
			lst = &s.oldFlows
			if lst.len() == 0 {
				return nil
			}
		}
		fromNew := lst == &s.newFlows
		i := lst.peek()
		f := &s.flows[i]
		if f.deficit <= 0 {
			f.deficit += s.quantum
			lst.pop()
			f.list = onOldList
			s.oldFlows.push(i)
			continue
		}
		n, b := f.q.len(), f.q.bytes
		p := f.cd.dequeue(now, &f.q, s.prm, s.drop)
		s.n -= n - f.q.len()
		s.bytes -= b - f.q.bytes
		if p == nil {
			lst.pop()
			if fromNew && s.oldFlows.len() > 0 {
				f.list = onOldList
				s.oldFlows.push(i)
			} else {
				f.list = onNoList
			}
			continue
		}
		f.deficit -= p.Size
		return p
	}
}

// fattest returns the index of the active flow with the largest byte
// backlog, or -1 if none has packets. Only flows on a list can hold
// packets, so only those are scanned.
func (s *flowSched) fattest() (idx, bytes int) {
	idx = -1
	for _, l := range []*ring[int32]{&s.newFlows, &s.oldFlows} {
		for k := 0; k < l.len(); k++ {
			i := int(l.at(k))
			if b := s.flows[i].q.bytes; s.flows[i].q.len() > 0 && (idx < 0 || b > bytes) {
				idx, bytes = i, b
			}
		}
	}
	return idx, bytes
}

// dropHead drops the head packet of flow i as an overflow (RFC 8290
// §4.1.1: drop from the head of the fattest queue). The flow stays on its
// list; the dequeue path removes it once it is found empty.
func (s *flowSched) dropHead(now clock.Mono, i int) {
	p := s.flows[i].q.pop()
	s.n--
	s.bytes -= p.Size
	s.drop(now, p, DropOverflow)
}

// FQCoDelConfig configures FQ-CoDel. Zero fields take the defaults noted.
type FQCoDelConfig struct {
	// Limit is the total capacity in packets across all flow queues
	// (RFC 8290 §4.1; Linux default 10240, AQM paper Table 1 1000; here
	// 0 = DefaultLimit when LimitBytes is 0 too).
	Limit int
	// LimitBytes optionally caps the total backlog in bytes as well (the
	// role of Linux's memory_limit); 0 = none.
	LimitBytes int
	// Flows is the number of flow queues (0: DefaultFlows).
	Flows int
	// Quantum is the DRR quantum in bytes (0: DefaultQuantum).
	Quantum int
	// Target and Interval are each queue's CoDel parameters (0: RFC 8289
	// defaults).
	Target   time.Duration
	Interval time.Duration
	// HashSeed perturbs the FlowKey → queue hash (see flowIndex).
	HashSeed uint64
}

// FQCoDel is RFC 8290 FlowQueue-CoDel.
type FQCoDel struct {
	lim limits
	fs  flowSched
}

var _ Queue = (*FQCoDel)(nil)

// NewFQCoDel returns an empty FQ-CoDel. onDrop may be nil.
func NewFQCoDel(cfg FQCoDelConfig, onDrop DropFunc) (*FQCoDel, error) {
	lim, err := newLimits(cfg.Limit, cfg.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("fq_codel: %w", err)
	}
	prm, err := newCodelParams(cfg.Target, cfg.Interval)
	if err != nil {
		return nil, fmt.Errorf("fq_codel: %w", err)
	}
	fs, err := newFlowSched(cfg.Flows, cfg.Quantum, prm, cfg.HashSeed, dropOrNop(onDrop))
	if err != nil {
		return nil, fmt.Errorf("fq_codel: %w", err)
	}
	return &FQCoDel{lim: lim, fs: fs}, nil
}

// Enqueue adds p to its flow queue. If the total backlog then exceeds a
// limit, packets are dropped from the head of the flow with the largest
// byte backlog until it does not (RFC 8290 §4.1.1). Linux drops a batch
// (up to 64 packets or half the fat flow) per overflow to save CPU; we
// drop one packet at a time, which is what the RFC describes and drops
// no more than needed.
func (q *FQCoDel) Enqueue(now clock.Mono, p *Packet) {
	q.fs.enqueue(now, p)
	for q.lim.over(q.fs.n, q.fs.bytes) {
		i, _ := q.fs.fattest()
		q.fs.dropHead(now, i)
	}
}

// Dequeue returns the next packet by DRR over the flow queues, after each
// queue's CoDel drops; nil if empty.
func (q *FQCoDel) Dequeue(now clock.Mono) *Packet { return q.fs.dequeue(now) }

// Len is the total backlog in packets.
func (q *FQCoDel) Len() int { return q.fs.n }

// Bytes is the total backlog in bytes.
func (q *FQCoDel) Bytes() int { return q.fs.bytes }

// FlowIndex is the flow queue a FlowKey maps to (for tests and drivers
// that want to check their flows do not collide).
func (q *FQCoDel) FlowIndex(key uint64) int { return q.fs.flowIndex(key) }
