package session

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/clock"
	"github.com/fresh-udp/fresh/owd"
)

// A monitor's session that only receives updates holds neither a receive
// ring nor a send-side update buffer, and the buffers it does hold are as
// large as what it received, not as the largest datagram.
func TestUpdateOnlySessionAllocatesNoStreamBuffers(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	require.False(t, p.Srv.in.allocated(), "a new session has no ring of its own")
	require.Equal(t, int64(initialRecvWindow), p.Srv.in.maxData(), "yet grants the initial window")
	for i := range 20 {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte{byte(i), 1, 2, 3}))
		p.Run(100 * time.Millisecond)
	}
	u, ok := p.Srv.TakeUpdate()
	require.True(t, ok)
	require.Len(t, u.Payload, 4)
	require.False(t, p.Srv.in.allocated(), "updates alone allocate no ring")
	require.Zero(t, cap(p.Srv.updBuf), "the monitor never sent an update")
	require.Less(t, cap(p.Srv.inUpd), 64, "sized by the updates received")

	// The first stream byte allocates the ring, and the stream is intact.
	msg := []byte("hello, ring")
	_, err := p.Cli.Write(msg)
	require.NoError(t, err)
	require.NoError(t, p.Cli.CloseWrite())
	p.Run(100 * time.Millisecond)
	require.True(t, p.Srv.in.allocated())
	got := make([]byte, 64)
	n, err := p.Srv.Read(got)
	require.NoError(t, err)
	require.Equal(t, msg, got[:n])
	_, err = p.Srv.Read(got)
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, unallocatedRing, "the shared stand-in is never written")
}

// An update larger than the datagram allows is refused as before, although
// the buffer is no longer preallocated to that size.
func TestSendUpdateTooLargeWithLazyBuffer(t *testing.T) {
	s, err := New(Config{}, 1, true, 0)
	require.NoError(t, err)
	max := s.cfg.MaxUpdatePayload()
	require.NoError(t, s.SendUpdate(0, 0, make([]byte, max)))
	require.ErrorIs(t, s.SendUpdate(0, 0, make([]byte, max+1)), ErrUpdateTooLarge)
}

func TestInbandConfigIsValid(t *testing.T) {
	_, err := clock.NewInband(inbandConfig)
	require.NoError(t, err)
}

// A server session that only heard an Initial holds no clock estimator;
// the first stamped packet creates it, and the offset is then estimated.
func TestClockEstimatorCreatedByFirstSample(t *testing.T) {
	s, err := New(Config{}, 1, false, 0)
	require.NoError(t, err)
	require.Nil(t, s.inband)
	st := s.Stats(0)
	require.False(t, st.ClockSynced)
	require.Zero(t, st.ClockOffset)

	p := OpenPair(t, Config{}, Link{})
	require.Nil(t, p.Srv.inband, "the handshake carries no clock sample")
	for i := range 200 {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte{byte(i)}))
		p.Run(100 * time.Millisecond)
	}
	require.NotNil(t, p.Srv.inband)
	require.True(t, p.Srv.Stats(p.Now).ClockSynced, "20 s of updates both ways")
}

// A session that never sends stream data builds no window controller (the
// default one is named, so New may defer it): neither the monitor
// receiving updates and stream data nor the source sending updates. Stats
// reports a fresh controller's figures meanwhile, and the first stream
// byte sent builds it.
func TestControllerBuiltOnFirstStreamSend(t *testing.T) {
	p := OpenPair(t, Config{}, Link{})
	fresh := p.Srv.Stats(p.Now)
	for i := range 20 {
		require.NoError(t, p.Cli.SendUpdate(p.Now, p.Wall(p.Cli), []byte{byte(i)}))
		p.Run(100 * time.Millisecond)
	}
	require.Nil(t, p.Srv.ctl, "the monitor sent no stream data")
	require.Nil(t, p.Cli.ctl, "updates need no window controller")
	st := p.Srv.Stats(p.Now)
	require.Equal(t, "owd", st.CC)
	require.Positive(t, st.Window)
	require.Equal(t, fresh.Window, st.Window)
	require.True(t, st.InSlowStart)

	_, err := p.Cli.Write([]byte("stream bytes"))
	require.NoError(t, err)
	p.Run(100 * time.Millisecond)
	require.NotNil(t, p.Cli.ctl, "the first stream packet builds it")
	require.Nil(t, p.Srv.ctl, "receiving stream data needs none")
}

// A controller the configuration does not name is built in New, so that
// its errors are New's, as before.
func TestUnnamedControllerBuiltInNew(t *testing.T) {
	_, err := New(Config{NewController: func(cc.ByteCount) (cc.Controller, error) { return nil, nil }}, 1, true, 0)
	require.ErrorIs(t, err, ErrInvalidConfig)
	s, err := New(Config{NewController: func(mss cc.ByteCount) (cc.Controller, error) { return owd.New(owd.Config{MSS: mss}) }}, 1, true, 0)
	require.NoError(t, err)
	require.NotNil(t, s.ctl)
}
