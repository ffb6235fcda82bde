package loopback

import (
	"context"
	"fmt"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// Fresh moves n bytes over one fresh stream on loopback, with controller
// ccName, MaxDatagram maxDatagram (0: the default) and every other Config
// field at its default.
func Fresh(ctx context.Context, ccName string, n cc.ByteCount, maxDatagram int) (Transfer, error) {
	// TLS as shipped (quic-go encrypts too), with throwaway loopback
	// credentials.
	tlsConf, err := devcert.Loopback()
	if err != nil {
		return Transfer{}, err
	}
	cfg := transport.Config{CC: ccName, TLS: tlsConf, MaxDatagram: maxDatagram}
	ln, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		return Transfer{}, fmt.Errorf("fresh listen: %w", err)
	}
	defer ln.Close()

	received := make(chan copyResult, 1)
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			received <- copyResult{err: fmt.Errorf("fresh accept: %w", err)}
			return
		}
		received <- drain(conn)
	}()

	conn, err := transport.Dial(ctx, ln.Addr().String(), cfg)
	if err != nil {
		return Transfer{}, fmt.Errorf("fresh dial: %w", err)
	}
	defer conn.Close()
	// A stalled Write must not outlive the timeout.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	t, err := timeTransfer(n, conn, conn.CloseWrite, received)
	if err != nil {
		return Transfer{}, fmt.Errorf("fresh: %w", err)
	}
	st := conn.Stats()
	t.Lost = st.PacketsLost
	t.Detail = fmt.Sprintf("avg datagram %d B", avgSize(st.BytesSent, st.PacketsSent))
	return t, nil
}
