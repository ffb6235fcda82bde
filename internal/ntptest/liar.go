package ntptest

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Lie is how a misbehaving NTP server started by StartLiar answers.
type Lie int

const (
	// Silent reads every request and answers none.
	Silent Lie = iota
	// Garbage answers with 48 random-looking bytes that are no NTP reply.
	Garbage
	// KissOfDeath answers stratum 0 with the kiss code "DENY" (RFC 5905
	// §7.4): stop querying this server.
	KissOfDeath
	// Stratum16 answers stratum 16: unsynchronised.
	Stratum16
	// HoursOff answers a well-formed, valid stratum-2 reply whose time is
	// LiarOffset ahead of the true time: a server that lies.
	HoursOff
)

// LiarOffset is how far ahead a HoursOff server's clock is.
const LiarOffset = 5 * time.Hour

func (l Lie) String() string {
	return [...]string{"silent", "garbage", "kiss-of-death", "stratum-16", "hours-off"}[l]
}

// StartLiar starts an NTP server on a 127.0.0.1 UDP port that answers
// every request as lie says, and returns its "127.0.0.1:port". It stops
// at the test's cleanup. Unlike chronyd it can be made to lie, which a
// real server cannot be configured to do.
func StartLiar(t testing.TB, lie Lie) string {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req := make([]byte, 512)
		for {
			n, from, err := c.ReadFromUDPAddrPort(req)
			if err != nil {
				return
			}
			if n < 48 || lie == Silent {
				continue
			}
			_, _ = c.WriteToUDPAddrPort(answer(lie, req[:48]), from)
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		wg.Wait()
	})
	return c.LocalAddr().String()
}

// answer builds the reply to one NTPv4 client request (RFC 5905 §7.3).
func answer(lie Lie, req []byte) []byte {
	b := make([]byte, 48)
	if lie == Garbage {
		for i := range b {
			b[i] = byte(i*37 + 11)
		}
		b[0] = 0xff // leap 3, version 7, mode 7: nothing a client accepts
		return b
	}
	now := time.Now()
	stratum := byte(2)
	switch lie {
	case KissOfDeath:
		stratum = 0
		copy(b[12:16], "DENY")
	case Stratum16:
		stratum = 16
	case HoursOff:
		now = now.Add(LiarOffset)
	}
	b[0] = 0<<6 | 4<<3 | 4 // leap 0, version 4, mode 4 (server)
	b[1] = stratum
	b[2] = 6                                  // poll 2^6 s
	b[3] = 0xec                               // precision 2^-20 s
	binary.BigEndian.PutUint32(b[4:8], 0x10)  // root delay ~0.25 ms
	binary.BigEndian.PutUint32(b[8:12], 0x10) // root dispersion ~0.25 ms
	if lie != KissOfDeath {
		copy(b[12:16], []byte{127, 0, 0, 1})
	}
	putTime(b[16:24], now.Add(-time.Minute)) // reference time
	copy(b[24:32], req[40:48])               // origin = the client's transmit time
	putTime(b[32:40], now)                   // receive
	putTime(b[40:48], now)                   // transmit
	return b
}

// putTime writes t as an NTP timestamp: seconds since 1900 and a 32-bit
// fraction.
func putTime(b []byte, t time.Time) {
	const ntpEpoch = 2208988800 // seconds from 1900 to 1970
	sec := uint64(t.Unix() + ntpEpoch)
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	binary.BigEndian.PutUint64(b, sec<<32|frac)
}
