package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/transport"
)

// TestClientServerJSON runs the server and a 2 s client in-process over
// loopback and checks the -J result: the receiver's report came back and
// accounts for at least every byte the sender saw acknowledged.
func TestClientServerJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ln, err := transport.Listen("127.0.0.1:0", transport.Config{})
	require.NoError(t, err)
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		o := &options{server: true, oneOff: true, interval: time.Second}
		srvErr <- serve(ctx, ln, o, io.Discard)
	}()

	port := ln.Addr().(*net.UDPAddr).Port
	var out bytes.Buffer
	err = run(ctx, []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2s", "-C", "cubic", "-J"}, &out)
	require.NoError(t, err, out.String())
	require.NoError(t, <-srvErr)

	var res result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Empty(t, res.Error)
	require.Equal(t, "cubic", res.End.SenderTCPCongestion)
	require.Len(t, res.Intervals, 2, "one interval per second of -t 2s")
	sent, recv := res.End.SumSent, res.End.SumReceived
	require.Positive(t, sent.Bytes)
	require.Positive(t, recv.Bytes, "the receiver reported what it read")
	require.Positive(t, recv.BitsPerSecond)
	require.GreaterOrEqual(t, recv.Bytes, sent.Bytes, "acknowledged bytes were all read")
	require.InDelta(t, 2.0, sent.Seconds, 0.2)
	var sumIntervals int64
	for _, iv := range res.Intervals {
		sumIntervals += iv.Sum.Bytes
	}
	require.Equal(t, sent.Bytes, sumIntervals, "the intervals add up to the sender's total")
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},                          // neither -s nor -c
		{"-s", "-c", "x"},           // both
		{"-c", "x", "-C", "nosuch"}, // unknown controller
		{"-c", "x", "-l", "0"},
		{"-c", "x", "-t", "0s"},
		{"-c", "x", "-l", "lots"},
		{"-c", "x", "-w", "-1M"},
	} {
		_, err := parseFlags(args)
		require.Error(t, err, "%q", args)
	}
	o, err := parseFlags([]string{"-c", "h", "-l", "64K", "-w", "1M"})
	require.NoError(t, err)
	require.Equal(t, 64<<10, o.blksize)
	require.Equal(t, 1<<20, o.window)
	// The examples' one size parser: decimal units and exponents too.
	o, err = parseFlags([]string{"-c", "h", "-l", "1e4", "-w", "4MB"})
	require.NoError(t, err)
	require.Equal(t, 10000, o.blksize)
	require.Equal(t, 4000000, o.window)
}

func TestFormat(t *testing.T) {
	require.Equal(t, "1.46 Gbits/sec", formatBits(1.46e9))
	require.Equal(t, "95.4 Mbits/sec", formatBits(95.4e6))
	require.Equal(t, " 232 KBytes", formatBytes(232*1024))
	require.Equal(t, "2.26 MBytes", formatBytes(2.26*(1<<20)))
}
