package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/examples/internal/syncbuf"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/examples/internal/testcerts"
)

// The demo moves the upload byte-exact (run fails on a SHA-256 mismatch)
// and the server hears status updates, with each controller and without
// the hook.
func TestDemo(t *testing.T) {
	for _, args := range [][]string{{"-cc", "owd"}, {"-cc", "cubic"}, {"-plain"}} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, run(ctx, append(args, "-bytes", "3MB", "-update-every", "1ms"), &out))
			s := out.String()
			require.Contains(t, s, "sha256 matches")
			require.NotContains(t, s, " 0 status updates,", "the server heard updates")
			if args[0] == "-cc" {
				require.Contains(t, s, "hooked=true cc="+args[1])
				require.NotContains(t, s, "client hook: 0 shimmed")
			} else {
				require.NotContains(t, s, "hook:")
			}
			t.Log(s)
		})
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer taken.Close()
	files := testcerts.Write(t, "agent")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-insecure"}, []string{"TLS"}},
		{[]string{"-s", "-c", "x:1"}, []string{"exclude"}},
		{[]string{"-s", "-listen", "127.0.0.1:0"}, []string{"-cert"}},
		{[]string{"-c", "127.0.0.1"}, []string{"-c 127.0.0.1: want host:port"}},
		{[]string{"-update-every", "0s"}, []string{"-update-every 0s: must be positive"}},
		{[]string{"-bytes", "0"}, []string{"-bytes 0: want a positive size"}},
		{[]string{"-bytes", "lots"}, []string{"-bytes", "1GB, 50MB"}},
		{[]string{"-cc", "nosuch"}, []string{"-cc", "unknown controller"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"-s", "-listen", taken.LocalAddr().String(), "-cert", files.ServerCert, "-key", files.ServerKey},
			[]string{"the port is in use", "give -listen another port"}},
	} {
		err := run(context.Background(), tc.args, &out)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, "%q", tc.args)
		}
	}
}

// A client whose TLS flags do not fit the server's is told which flag to
// change and how, not only quic-go's CRYPTO_ERROR code; so is one that
// dials where no server listens.
func TestExplainedErrors(t *testing.T) {
	files, other := testcerts.Write(t, "agent"), testcerts.Write(t, "stranger")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srvOut := &syncbuf.Buffer{}
	srvDone := make(chan error, 1)
	go func() {
		srvDone <- run(ctx, []string{"-s", "-listen", "127.0.0.1:0", "-cert", files.ServerCert, "-key", files.ServerKey, "-ca", files.CA}, srvOut)
	}()
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	require.Eventually(t, func() bool { return listening.MatchString(srvOut.String()) }, 10*time.Second, 10*time.Millisecond)
	addr := listening.FindStringSubmatch(srvOut.String())[1]
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer silent.Close() // a port that is open but never answers

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no -ca", []string{"-c", addr, "-cert", files.ClientCert, "-key", files.ClientKey},
			[]string{"CRYPTO_ERROR", "not signed by a CA this host trusts: give -ca"}},
		{"another CA", []string{"-c", addr, "-ca", other.CA, "-cert", files.ClientCert, "-key", files.ClientKey},
			[]string{"not signed by -ca " + other.CA}},
		{"wrong name", []string{"-c", addr, "-ca", files.CA, "-server-name", "wrong.example", "-cert", files.ClientCert, "-key", files.ClientKey},
			[]string{`not valid for "wrong.example" (it is for localhost, 127.0.0.1, ::1)`, "-server-name"}},
		{"no client certificate", []string{"-c", addr, "-ca", files.CA},
			[]string{"CRYPTO_ERROR 0x174", "requires a client certificate", "give -cert and -key"}},
		{"client certificate of another CA", []string{"-c", addr, "-ca", files.CA, "-cert", other.ClientCert, "-key", other.ClientKey},
			[]string{"the server refused -cert " + other.ClientCert}},
		{"nobody listening", []string{"-c", silent.LocalAddr().String(), "-ca", files.CA},
			[]string{"no answer from " + silent.LocalAddr().String(), "quic -s running there"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(ctx, append(tc.args, "-bytes", "100kB"), &bytes.Buffer{})
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
	var out bytes.Buffer
	require.NoError(t, run(ctx, append([]string{"-c", addr, "-bytes", "100kB"}, files.ClientArgs("-")...), &out),
		"the right flags work against the same server")
	require.Contains(t, out.String(), "sha256 matches")
	cancel()
	require.NoError(t, <-srvDone, "Ctrl-C ends the server without an error")
}
