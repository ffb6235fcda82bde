package cc_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cc"

	// Imported for their side effects: owd registers its controllers, and
	// acp must not register anything.
	_ "github.com/fresh-udp/fresh/acp"
	_ "github.com/fresh-udp/fresh/owd"
)

func TestRegistryHasControllersOnly(t *testing.T) {
	for _, name := range []string{"reno", "cubic", "htcp", "rttdelay", "bbr", "copa", "owd", "owd-eq2"} {
		c, err := cc.New(name, 0)
		require.NoError(t, err, name)
		require.Equal(t, name, c.Name())
	}
	// Update policies pace status updates and never limit a window: a
	// stream run with one would have no congestion control at all. They
	// are built with acp.NewPolicy, never through the cc registry.
	for _, name := range []string{"acp", "acp-literal", "lazy", "fixed", "owd-eq7"} {
		_, err := cc.New(name, 0)
		require.ErrorIs(t, err, cc.ErrUnknown, name)
	}
	require.Equal(t, []string{"bbr", "copa", "cubic", "htcp", "owd", "owd-eq2", "reno", "rttdelay"}, cc.Names())
}
