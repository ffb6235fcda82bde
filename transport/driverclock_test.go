package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/clock"
)

// aheadClock is the system clock read an hour on: the clock of a driver
// that has run for an hour, as the first Config's clock of a long-lived
// Transport reads when a connection is dialled on it later.
type aheadClock struct{ *clock.System }

func (c aheadClock) Now() clock.Mono { return c.System.Now().Add(time.Hour) }

// A Transport shared by Dials whose Configs have clocks of their own (each
// Config without a Clock gets a clock.NewSystem started when it is filled
// in): the driver runs on the first Config's clock, which reads far ahead
// of a later connection's. Its deadlines must be compared on one clock.
// Compared raw, the later connection's handshake timer looked overdue by
// an hour: the driver serviced it in a loop that never let it send the
// Initial the Retry asked for, and every Dial from then on timed out (as a
// load generator found past ~190 sequential Dials: their 250 ms
// retransmission timer against a driver clock more than 250 ms ahead).
func TestDialsWithTheirOwnClocksShareADriver(t *testing.T) {
	l, err := Listen("127.0.0.1:0", testConfig(Config{}))
	require.NoError(t, err)
	defer l.Close()
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer udp.Close()
	tr := &Transport{Conn: udp}
	defer tr.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := tr.Dial(ctx, l.Addr(), testConfig(Config{Clock: aheadClock{clock.NewSystem()}}))
	require.NoError(t, err, "the driver starts on this Config's clock")
	defer first.Abort()
	for i := range 3 {
		c, err := tr.Dial(ctx, l.Addr(), testConfig(Config{HandshakeTimeout: 3 * time.Second}))
		require.NoError(t, err, "dial %d on a clock an hour behind the driver's", i)
		require.NoError(t, c.SendUpdate([]byte{byte(i)}))
		c.Abort()
	}
}
