// Command udpbaseline is the floor a Go process reaches for one reading
// a second: it sends one small UDP datagram a second to a socket in the
// same process, which echoes it back, and the sender reads the echo. It
// is the "bare Go UDP sender" examples/agent/wakeups.sh measures the
// agent's wake-ups against (all threads' context switches per second):
// a Go runtime, a ticker, two blocking reads and nothing else.
//
//	go run ./examples/internal/udpbaseline [-rate-hz 1] [-duration 20s]
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	hz := flag.Float64("rate-hz", 1, "datagrams per second")
	duration := flag.Duration("duration", 20*time.Second, "how long to run")
	flag.Parse()
	if *hz <= 0 {
		fmt.Fprintln(os.Stderr, "udpbaseline: -rate-hz must be positive")
		os.Exit(2)
	}
	if err := run(*hz, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "udpbaseline:", err)
		os.Exit(1)
	}
}

func run(hz float64, duration time.Duration) error {
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer echo.Close()
	go func() { // the echo end
		buf := make([]byte, 1500)
		for {
			n, from, err := echo.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = echo.WriteToUDP(buf[:n], from)
		}
	}()
	conn, err := net.DialUDP("udp", nil, echo.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return err
	}
	defer conn.Close()
	echoed := make(chan int, 1)
	go func() { // the sender's reader
		buf := make([]byte, 1500)
		n := 0
		for {
			if _, err := conn.Read(buf); err != nil {
				echoed <- n
				return
			}
			n++
		}
	}()
	tick := time.NewTicker(time.Duration(float64(time.Second) / hz))
	defer tick.Stop()
	end := time.After(duration)
	sent := 0
	reading := []byte(`{"seq":0,"t_ms":0,"temp_c":21.50,"rh_pct":45.0,"vib_g":0.010}`)
	for {
		select {
		case <-tick.C:
			if _, err := conn.Write(reading); err != nil {
				return err
			}
			sent++
		case <-end:
			// The last echo is on its way: the reader stops at a deadline
			// a moment later, not at once.
			_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			fmt.Printf("udpbaseline: %d sent, %d echoed\n", sent, <-echoed)
			return nil
		}
	}
}
