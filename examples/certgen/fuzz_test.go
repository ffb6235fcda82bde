package main

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// For any -hosts entry: no panic; an accepted one is an IP address or a
// name of DNS characters only (no port, no scheme, no spaces), and a
// refused one is named in the error. `go test` replays the corpus in
// testdata/fuzz: TestCheckHost's cases.
func FuzzCheckHost(f *testing.F) {
	f.Fuzz(func(t *testing.T, h string) {
		err := checkHost(h)
		if err != nil {
			require.Contains(t, err.Error(), strconv.Quote(h))
			return
		}
		if net.ParseIP(h) != nil {
			return
		}
		name := strings.TrimPrefix(h, "*.")
		require.NotEmpty(t, name, "%q", h)
		require.Empty(t, strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-."), "%q has other characters", h)
		require.NotContains(t, name, "..", "%q", h)
	})
}
