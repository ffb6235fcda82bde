package cc_test

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/owd" // also registers "owd" and "owd-eq2"
)

// The invariant fuzz test drives every registered controller with event
// sequences decoded from the fuzz input — packets sent (within the window
// or not), acknowledged (in order or not) with valid, missing or absurd RTT
// and one-way-delay samples, synced or not, lost, retransmission timeouts
// and idle gaps — and after every event checks what must hold whatever the
// network does:
//
//   - Window() is at least the controller's documented floor and at most
//     maxSaneWindow; CanSend(0) is true (a controller that refuses to send
//     with nothing in flight deadlocks the connection);
//   - PacingRate() is at most maxSanePacing, and positive once an RTT
//     sample exists (0 means "do not pace", which only makes sense before
//     the controller has any idea of the path);
//   - Metrics() windows and RTTs are not negative and Mode is set; a
//     controller with a delay analyzer (owd.Delays) reports a finite OWDv
//     and μ (one-way delays may be negative, with a bad clock);
//   - nothing panics.
//
// Run it longer with
//
//	go test -run '^$' -fuzz FuzzControllerInvariants -fuzztime 5m ./cc/
//
// and FRESH_FUZZ_CC=name to fuzz one controller only (the first input
// byte then no longer picks it).

// floors is each controller's documented window floor in packets, and the
// floor right after a retransmission timeout (package doc "What the
// baselines share": 2 packets, 1 MSS after an RTO, from which slow start
// grows; bbr.go "Floors": 4 packets, 1 after an RTO until the next ACK;
// copa.go: 2 packets, also after an RTO).
// The after-RTO floor holds until the window is back at the normal floor.
// owd's window is composite — its own, or in competitive mode its embedded
// CUBIC's, and the two can alternate while the way-back probe runs — so for
// it the after-RTO floor holds instead until a packet sent after the
// timeout is lost: that is a new congestion event, whose reduction floors
// either window at 2 packets.
var floors = map[string]struct {
	normal, afterRTO cc.ByteCount
	composite        bool
}{
	"reno":     {2, 1, false},
	"cubic":    {2, 1, false},
	"htcp":     {2, 1, false},
	"rttdelay": {2, 1, false},
	"owd":      {2, 1, true},
	"owd-eq2":  {2, 1, true},
	"bbr":      {4, 1, false},
	"copa":     {2, 2, false},
}

const (
	// maxSaneWindow: 2^40 bytes (1 TB) is far beyond any real window; a
	// larger one is a runaway computation.
	maxSaneWindow = cc.ByteCount(1) << 40
	// maxSanePacing: 2^53 bit/s, beyond which float64 no longer counts
	// bits exactly; nothing sensible is near it.
	maxSanePacing = cc.Bandwidth(1) << 53
	// maxFuzzEvents bounds one input's events so that the committed corpus
	// runs in milliseconds as a plain test.
	maxFuzzEvents = 4096
)

var fuzzMSS = []cc.ByteCount{cc.DefaultMSS, 100, 1400, 9000}

func FuzzControllerInvariants(f *testing.F) {
	f.Add([]byte{0, 0, 0, 7, 1, 0x40, 0, 7, 1, 0x40, 2, 1, 3, 4, 200})
	f.Add([]byte{6, 1, 0, 7, 0, 7, 1, 0x81, 1, 0x82, 4, 0xff, 0, 3, 1, 0x10, 5, 3})
	f.Add([]byte{5, 2, 0, 7, 1, 0xc3, 1, 0x13, 3, 0, 7, 1, 0x44, 6, 2, 0x55})
	f.Fuzz(fuzzControllerInvariants)
}

func fuzzControllerInvariants(t *testing.T, data []byte) {
	names := cc.Names()
	if len(data) < 2 || len(names) == 0 {
		return
	}
	name := names[int(data[0])%len(names)]
	if pinned := os.Getenv("FRESH_FUZZ_CC"); pinned != "" {
		name = pinned
	}
	mss := fuzzMSS[int(data[1])%len(fuzzMSS)]
	c, err := cc.New(name, mss)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	d := &fuzzDriver{t: t, c: c, name: name, mss: mss, in: data[2:]}
	d.run()
}

type fuzzPacket struct {
	pn    cc.PacketNumber
	bytes cc.ByteCount
	sent  clock.Mono
}

// fuzzDriver decodes events from in and applies them to c as a sender would.
type fuzzDriver struct {
	t    *testing.T
	c    cc.Controller
	name string
	mss  cc.ByteCount
	in   []byte

	now         clock.Mono
	nextPN      cc.PacketNumber
	outstanding []fuzzPacket
	inFlight    cc.ByteCount
	hadRTT      bool
	afterRTO    bool
	rtoLargest  cc.PacketNumber // the largest packet number sent before the last RTO
	events      []string        // the last events, for the failure message
}

// next returns the next input byte (0 once the input is used up).
func (d *fuzzDriver) next() byte {
	if len(d.in) == 0 {
		return 0
	}
	b := d.in[0]
	d.in = d.in[1:]
	return b
}

func (d *fuzzDriver) run() {
	for n := 0; len(d.in) > 0 && n < maxFuzzEvents; n++ {
		op := d.next()
		switch op % 8 {
		case 0: // send what the window allows, up to 1 + (next%16) packets
			k := int(d.next()%16) + 1
			for i := 0; i < k && d.c.CanSend(d.inFlight); i++ {
				d.send(op&0x80 != 0)
			}
		case 1: // acknowledge the oldest packet
			d.ack(0)
		case 2: // acknowledge a later packet first (out of order across ACKs)
			if len(d.outstanding) > 0 {
				d.ack(int(d.next()) % len(d.outstanding))
			}
		case 3: // lose the oldest packets
			k := int(d.next()%4) + 1
			for i := 0; i < k && len(d.outstanding) > 0; i++ {
				d.lose(0)
			}
		case 4: // time passes: up to 2^(next%24) µs (about 16 s)
			d.advance(time.Duration(1<<(d.next()%24)) * time.Microsecond)
		case 5: // a retransmission timeout, as the session fires it
			d.rto(op&0x80 != 0)
		case 6: // send one packet whatever the window says (a probe, a retransmission)
			d.send(op&0x80 != 0)
		case 7: // a long idle gap: up to 255 s
			d.advance(time.Duration(d.next()) * time.Second)
		}
	}
}

func (d *fuzzDriver) note(ev string) {
	if len(d.events) >= 12 {
		d.events = d.events[1:]
	}
	d.events = append(d.events, ev)
}

func (d *fuzzDriver) advance(dt time.Duration) {
	d.now = d.now.Add(dt)
	d.note("advance " + dt.String())
}

func (d *fuzzDriver) send(short bool) {
	bytes := d.mss
	if short {
		bytes = max(d.mss/3, 1) // the stream's last chunk
	}
	p := fuzzPacket{pn: d.nextPN, bytes: bytes, sent: d.now}
	// Packet numbers skip now and then: updates and probes use them too.
	d.nextPN += 1 + cc.PacketNumber(d.next()%2)
	d.outstanding = append(d.outstanding, p)
	d.inFlight += bytes
	d.c.OnPacketSent(d.now, p.pn, bytes, d.inFlight)
	d.note("sent")
	d.check()
}

// sample decodes an RTT and one-way-delay sample for packet p from the
// input: valid, missing, below the path's minimum, or absurd; the OWD valid
// or not, synced or not, plausible, negative or larger than the RTT.
func (d *fuzzDriver) sample(p fuzzPacket) (rtt, owd time.Duration, owdValid, synced bool) {
	elapsed := d.now.Sub(p.sent)
	b := d.next()
	switch b % 4 {
	case 0:
		rtt = elapsed
	case 1:
		rtt = 0 // not the largest acknowledged
	case 2:
		rtt = time.Duration(b>>2+1) * time.Millisecond
	case 3:
		rtt = time.Duration(b>>2+1) * time.Hour // absurd
	}
	o := d.next()
	owdValid, synced = o&1 != 0, o&2 != 0
	switch o >> 2 % 4 {
	case 0:
		owd = rtt / 2
	case 1:
		owd = -time.Duration(o>>4+1) * time.Millisecond // a bad clock
	case 2:
		owd = rtt + time.Duration(o>>4)*time.Second
	case 3:
		owd = time.Duration(o>>4) * time.Millisecond
	}
	return rtt, owd, owdValid, synced
}

func (d *fuzzDriver) ack(i int) {
	if len(d.outstanding) == 0 {
		return
	}
	p := d.outstanding[i]
	d.outstanding = append(d.outstanding[:i], d.outstanding[i+1:]...)
	prior := d.inFlight
	d.inFlight -= p.bytes
	rtt, owd, owdValid, synced := d.sample(p)
	if rtt > 0 {
		d.hadRTT = true
	}
	d.c.OnAck(d.now, cc.AckSample{
		PacketNumber: p.pn, Bytes: p.bytes, SentTime: p.sent, RTT: rtt,
		OWD: owd, OWDValid: owdValid, ClockSynced: synced, PriorInFlight: prior,
	})
	d.note("ack rtt=" + rtt.String() + " owd=" + owd.String())
	d.check()
}

func (d *fuzzDriver) lose(i int) {
	p := d.outstanding[i]
	d.outstanding = append(d.outstanding[:i], d.outstanding[i+1:]...)
	prior := d.inFlight
	d.inFlight -= p.bytes
	if d.afterRTO && floors[d.name].composite && p.pn > d.rtoLargest {
		d.afterRTO = false // a new congestion event: see floors
	}
	d.c.OnLoss(d.now, cc.LossEvent{PacketNumber: p.pn, Bytes: p.bytes, SentTime: p.sent, PriorInFlight: prior})
	d.note("lost")
	d.check()
}

// rto declares everything outstanding lost and then fires the timeout, as
// the session does; withoutLosses fires it alone.
func (d *fuzzDriver) rto(withoutLosses bool) {
	if !withoutLosses {
		for len(d.outstanding) > 0 {
			d.lose(0)
		}
	}
	d.c.OnRetransmissionTimeout(d.now)
	d.afterRTO = true
	d.rtoLargest = d.nextPN - 1
	d.note("rto")
	d.check()
}

func (d *fuzzDriver) fail(format string, args ...any) {
	d.t.Helper()
	args = append([]any{d.name, d.mss}, args...)
	args = append(args, d.events, d.c.Metrics())
	d.t.Fatalf("%s (mss %d): "+format+"\nlast events: %q\nmetrics: %+v", args...)
}

func (d *fuzzDriver) check() {
	d.t.Helper()
	fl, ok := floors[d.name]
	if !ok {
		fl.normal, fl.afterRTO = 1, 1 // an unknown controller: one packet at least
	}
	w := d.c.Window()
	if d.afterRTO && !fl.composite && w >= fl.normal*d.mss {
		d.afterRTO = false
	}
	floor := fl.normal * d.mss
	if d.afterRTO {
		floor = fl.afterRTO * d.mss
	}
	if w < floor {
		d.fail("Window() = %d below its floor %d", w, floor)
	}
	if w > maxSaneWindow {
		d.fail("Window() = %d above %d", w, maxSaneWindow)
	}
	if !d.c.CanSend(0) {
		d.fail("CanSend(0) is false with Window() = %d", w)
	}
	r := d.c.PacingRate()
	if r > maxSanePacing {
		d.fail("PacingRate() = %d above %d", r, maxSanePacing)
	}
	if d.hadRTT && r == 0 {
		d.fail("PacingRate() = 0 after an RTT sample")
	}
	m := d.c.Metrics()
	if dl, ok := d.c.(interface{ Delays() owd.Delays }); ok {
		dd := dl.Delays()
		for _, v := range []struct {
			name string
			v    float64
		}{{"V", dd.V}, {"Mu", dd.Mu}} {
			if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
				d.fail("Delays().%s = %v", v.name, v.v)
			}
		}
	}
	if m.Window < 0 || m.Window > maxSaneWindow || m.Ssthresh < 0 || m.Ssthresh > maxSaneWindow {
		d.fail("Metrics() Window %d, Ssthresh %d out of range", m.Window, m.Ssthresh)
	}
	if m.PacingRate > maxSanePacing {
		d.fail("Metrics().PacingRate = %d", m.PacingRate)
	}
	if m.SRTT < 0 || m.MinRTT < 0 {
		d.fail("Metrics() negative RTT: SRTT %v MinRTT %v", m.SRTT, m.MinRTT)
	}
	if m.Mode == "" {
		d.fail("Metrics().Mode is empty")
	}
}
