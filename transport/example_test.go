package transport_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

// A monitor listens, an agent dials it, sends a status update and a few
// bytes on the reliable stream, and the monitor reads both.
func Example() {
	ctx := context.Background()
	// devcert.Loopback is a throwaway certificate for localhost that both
	// ends trust; a real monitor loads its own (examples/certgen).
	tlsConf, err := devcert.Loopback()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: tlsConf})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	agent, err := transport.Dial(ctx, ln.Addr().String(), transport.Config{TLS: tlsConf})
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	monitor, err := ln.Accept(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// An update never blocks: a newer one replaces one not yet sent.
	if err := agent.SendUpdate([]byte(`{"temp_c":21.5}`)); err != nil {
		log.Fatal(err)
	}
	u, err := monitor.ReadUpdate(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("update %s\n", u.Payload)

	// The stream: write, half-close, read to EOF.
	if _, err := agent.Write([]byte("log line\n")); err != nil {
		log.Fatal(err)
	}
	if err := agent.CloseWrite(); err != nil {
		log.Fatal(err)
	}
	data, err := io.ReadAll(monitor)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stream %q\n", data)
	// Output:
	// update {"temp_c":21.5}
	// stream "log line\n"
}

// A device that sleeps between readings keeps a TLS session cache and a
// token store across wakes: every wake after the first resumes, and its
// reading leaves with the first flight in 0-RTT (no Retry round trip,
// thanks to the token). The monitor gets it once the handshake completes,
// so a replayed first flight never reaches it.
func ExampleDialEarly() {
	ctx := context.Background()
	tlsConf, err := devcert.Loopback()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: tlsConf, Allow0RTT: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	device := tlsConf.Clone()
	device.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	cfg := transport.Config{TLS: device, Allow0RTT: true, TokenStore: transport.NewTokenStore(1)}
	for wake := 1; wake <= 2; wake++ {
		c, err := transport.DialEarly(ctx, ln.Addr().String(), cfg)
		if err != nil {
			log.Fatal(err)
		}
		if err := c.SendUpdate(fmt.Appendf(nil, "reading %d", wake)); err != nil {
			log.Fatal(err)
		}
		sc, err := ln.Accept(ctx)
		if err != nil {
			log.Fatal(err)
		}
		u, err := sc.ReadUpdate(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s, 0-RTT %v\n", u.Payload, u.Early)
		// The device sleeps once its reading is acknowledged; the ticket
		// for the next wake came before that ACK.
		for c.Stats().UpdatesAcked == 0 {
			time.Sleep(time.Millisecond)
		}
		c.Close()
		sc.Close()
	}
	// Output:
	// reading 1, 0-RTT false
	// reading 2, 0-RTT true
}
