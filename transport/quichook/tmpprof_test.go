package quichook_test

import (
	"os"
	"testing"
	"time"

	"github.com/fresh-udp/fresh/transport/quichook"
)

func TestTmpProfile(t *testing.T) {
	data := make([]byte, 500<<20)
	hooked := os.Getenv("HOOKED") == "1"
	srv, cli := newEndpoint(t, hooked, quichook.Config{}), newEndpoint(t, hooked, quichook.Config{})
	start := time.Now()
	upload(t, cli, srv, nil, data, 60*time.Second)
	t.Logf("hooked=%v %.0f Mbit/s", hooked, float64(len(data))*8/time.Since(start).Seconds()/1e6)
}
