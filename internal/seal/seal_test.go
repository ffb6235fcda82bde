package seal

import (
	"bytes"
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
)

var suites = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}

func pair(t testing.TB, suite uint16) (*Keys, *Keys) {
	secret := bytes.Repeat([]byte{7}, 48)
	a, err := New(suite, secret)
	require.NoError(t, err)
	b, err := New(suite, secret)
	require.NoError(t, err)
	return a, b
}

func packet(hdr, body string) []byte {
	p := make([]byte, 0, len(hdr)+len(body)+Overhead)
	return append(append(p, hdr...), body...)
}

func TestSealOpenEverySuite(t *testing.T) {
	for _, s := range suites {
		tx, rx := pair(t, s)
		p := tx.Seal(packet("HEADER", "secret body"), 6, 42, false)
		require.Len(t, p, 6+11+Overhead)
		require.NotContains(t, string(p), "secret body", "body must be encrypted")
		body, err := rx.Open(p, 6, 42, false)
		require.NoError(t, err)
		require.Equal(t, "secret body", string(body))
	}
}

// Every input the receiver authenticates must matter: the header (the
// associated data), the body, the packet number and its space.
func TestOpenRejectsAnyChange(t *testing.T) {
	tx, rx := pair(t, tls.TLS_AES_128_GCM_SHA256)
	sealed := tx.Seal(packet("HEADER", "body"), 6, 9, false)
	try := func(mut func(p []byte), pn uint64, control bool) error {
		p := bytes.Clone(sealed)
		mut(p)
		_, err := rx.Open(p, 6, pn, control)
		return err
	}
	same := func([]byte) {}
	require.NoError(t, try(same, 9, false))
	require.ErrorIs(t, try(func(p []byte) { p[0] ^= 1 }, 9, false), ErrAuth, "header")
	require.ErrorIs(t, try(func(p []byte) { p[7] ^= 1 }, 9, false), ErrAuth, "body")
	require.ErrorIs(t, try(func(p []byte) { p[len(p)-1] ^= 1 }, 9, false), ErrAuth, "tag")
	require.ErrorIs(t, try(same, 10, false), ErrAuth, "packet number")
	require.ErrorIs(t, try(same, 9, true), ErrAuth, "packet-number space")
	other, err := New(tls.TLS_AES_128_GCM_SHA256, bytes.Repeat([]byte{8}, 48))
	require.NoError(t, err)
	_, err = other.Open(bytes.Clone(sealed), 6, 9, false)
	require.ErrorIs(t, err, ErrAuth, "other keys")
}

func TestKeyUpdateBothSidesAgree(t *testing.T) {
	tx, rx := pair(t, tls.TLS_AES_256_GCM_SHA384)
	tx2, err := tx.Next()
	require.NoError(t, err)
	rx2, err := rx.Next()
	require.NoError(t, err)
	p := tx2.Seal(packet("H", "after update"), 1, 1, false)
	_, err = rx.Open(bytes.Clone(p), 1, 1, false)
	require.ErrorIs(t, err, ErrAuth, "the old keys must not open a new-phase packet")
	body, err := rx2.Open(p, 1, 1, false)
	require.NoError(t, err)
	require.Equal(t, "after update", string(body))
}

func TestUnknownSuite(t *testing.T) {
	_, err := New(0x1304, make([]byte, 32))
	require.Error(t, err)
}

func TestReplayWindow(t *testing.T) {
	w := NewReplayWindow()
	accept := func(pn int64) bool {
		if !w.Check(pn) {
			return false
		}
		w.Mark(pn)
		return true
	}
	require.True(t, accept(0))
	require.False(t, accept(0), "replay")
	require.True(t, accept(5))
	require.True(t, accept(3), "reordered, not seen")
	require.False(t, accept(3))
	require.False(t, accept(5))
	require.True(t, accept(5+Window))
	require.False(t, accept(5), "too old to tell")
	require.True(t, accept(6+Window-2), "inside the window, never seen")
	require.True(t, accept(10*Window))
	for pn := int64(9*Window) + 1; pn < 10*Window; pn++ {
		if pn == 10*Window-Window/2 {
			continue
		}
		require.True(t, accept(pn), "pn %d", pn)
	}
	require.True(t, accept(10*Window-Window/2))
	require.False(t, accept(10*Window-Window/2))
	// Check alone changes nothing: a forged packet that fails authentication
	// must not poison the window.
	require.True(t, w.Check(11*Window))
	require.True(t, w.Check(11*Window))
}

func BenchmarkSealOpen(b *testing.B) {
	tx, rx := pair(b, tls.TLS_AES_128_GCM_SHA256)
	buf := make([]byte, 1200, 1200+Overhead)
	b.SetBytes(1200)
	b.ReportAllocs()
	for i := range b.N {
		p := tx.Seal(buf[:1200], 28, uint64(i), false)
		if _, err := rx.Open(p, 28, uint64(i), false); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSealOpenDoNotAllocate(t *testing.T) {
	tx, rx := pair(t, tls.TLS_AES_128_GCM_SHA256)
	buf := make([]byte, 1200, 1200+Overhead)
	pn := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		p := tx.Seal(buf[:1200], 28, pn, false)
		if _, err := rx.Open(p, 28, pn, false); err != nil {
			t.Fatal(err)
		}
		pn++
	})
	require.Zero(t, allocs)
}
