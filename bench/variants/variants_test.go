package variants

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"
)

// Every variant is registered and makes a controller of its own.
func TestRegistered(t *testing.T) {
	known := cc.Names()
	for _, name := range Names {
		require.True(t, slices.Contains(known, name), name)
		c, err := cc.New(name, 1200)
		require.NoError(t, err, name)
		require.NotNil(t, c, name)
	}
}
