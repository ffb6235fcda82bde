// Command quickstart is the smallest complete use of fresh: a monitor
// listens, an agent dials it on loopback, sends one status update and a few
// bytes on the reliable stream, and the monitor reads both.
//
//	go run ./examples/quickstart
//
// It takes no flags. The code is the README's "Quick start"; example_test.go
// runs it as a testable Example, so the README's sample always compiles and
// works. A real agent runs the two halves in two programs (examples/agent,
// examples/monitor) and calls SendUpdate for every new reading: it never
// blocks, and only the freshest reading not yet sent is ever transmitted.
package main

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/fresh-udp/fresh/transport"
	"github.com/fresh-udp/fresh/transport/devcert"
)

func main() {
	ctx := context.Background()

	// Connections are TLS 1.3. devcert.Loopback is a throwaway certificate
	// for localhost that both ends here trust. In production the monitor
	// loads its certificate and the agent the CA that signed it (see
	// examples/certgen, examples/monitor and examples/agent).
	tlsConf, err := devcert.Loopback()
	if err != nil {
		log.Fatal(err)
	}

	// The monitor listens; the agent dials it ("owd" is the default controller).
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{TLS: tlsConf})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	agent, err := transport.Dial(ctx, ln.Addr().String(), transport.Config{TLS: tlsConf, CC: "owd"})
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	monitor, err := ln.Accept(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// Status updates: SendUpdate never blocks, the newest replaces one not
	// yet sent; ReadUpdate returns the freshest that arrived.
	if err := agent.SendUpdate([]byte(`{"temp_c":21.5}`)); err != nil {
		log.Fatal(err)
	}
	u, err := monitor.ReadUpdate(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("update: %s\n", u.Payload)

	// The reliable byte stream: write, half-close, read to EOF.
	if _, err := agent.Write([]byte("hello")); err != nil {
		log.Fatal(err)
	}
	if err := agent.CloseWrite(); err != nil {
		log.Fatal(err)
	}
	data, err := io.ReadAll(monitor)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("received %d bytes\n", len(data))
}
