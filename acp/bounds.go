package acp

import "math"

// Bound says which bound, if any, lowered the rate an epoch set.
type Bound uint8

const (
	BoundNone     Bound = iota // the rule's rate stood
	BoundQueue                 // Tuning.QueueBound: K/Q̄
	BoundDelivery              // Tuning.DeliveryBound: the capacity the path showed
	BoundSource                // Tuning.SourceHeadroom: (1 + h)·σ̂
	BoundBacklog               // Tuning.BacklogBound: B/SRTT
)

func (b Bound) String() string {
	switch b {
	case BoundQueue:
		return "queue"
	case BoundDelivery:
		return "delivery"
	case BoundSource:
		return "source"
	case BoundBacklog:
		return "backlog"
	}
	return "none"
}

// applyBounds runs after the rule has set the rate at an epoch's close: it
// resumes after a drained queue (the delivery bound), then lowers the rate to
// the delivery, queue and source bounds that are on (sigma: the source rate
// the closing epoch measured, 0 if it was not source-limited), never below
// the MinUpdatesPerRTT floor, and says which bound set it. A bound resets the
// rule's step (gradientState.clipped).
func (r *Regulator) applyBounds(sigma Rate) Bound {
	if r.tun.DeliveryBound {
		if l := r.deliv.resumeRate(r, r.rate); l > r.rate {
			r.setRate(min(l, r.cfg.MaxRate))
		}
	}
	lambda, bound := r.rate, BoundNone
	queueCap := r.queue.cap(r.tun.QueueBound)
	if r.tun.DeliveryBound {
		if ceiling, drain, ok := r.deliv.ceiling(r); ok {
			// A queue that is ours is drained at the rate the path
			// delivers, not cut to K/Q̄ (see delivery.go).
			queueCap = max(queueCap, drain)
			if ceiling < lambda {
				lambda, bound = ceiling, BoundDelivery
			}
		}
	}
	if queueCap < lambda {
		if r.tun.DeliveryBound {
			r.deliv.queueCut(r, lambda)
		}
		lambda, bound = queueCap, BoundQueue
	}
	if c := r.backlogCap(); c < lambda {
		lambda, bound = c, BoundBacklog
	}
	if h := r.tun.SourceHeadroom; h > 0 && sigma > 0 {
		if c := sigma * Rate(1+h); c < lambda {
			lambda, bound = c, BoundSource
		}
	}
	if bound == BoundNone {
		return BoundNone
	}
	lambda = min(max(lambda, r.minRate()), r.cfg.MaxRate)
	if lambda >= r.rate {
		return BoundNone
	}
	r.setRate(lambda)
	r.grad.clipped(r.tun.StepMin)
	return bound
}

// inf is an absent cap.
var inf = Rate(math.Inf(1))
