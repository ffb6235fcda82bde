//go:build !linux

package emu

import "fmt"

// tunSys is empty: the TUN router needs Linux.
type tunSys struct{}

// NewTUN returns an error wrapping ErrNoTUN: the TUN router needs Linux
// (network namespaces and /dev/net/tun).
func NewTUN(cfg TUNConfig) (*TUN, error) {
	return nil, fmt.Errorf("%w: needs Linux (network namespaces and /dev/net/tun)", ErrNoTUN)
}

// InClient returns ErrNoTUN: there is no TUN router on this OS.
func (t *TUN) InClient(fn func() error) error { return ErrNoTUN }

// InServer returns ErrNoTUN: there is no TUN router on this OS.
func (t *TUN) InServer(fn func() error) error { return ErrNoTUN }

// Close does nothing: NewTUN never returns a TUN on this OS.
func (t *TUN) Close() error { return nil }
