//go:build !linux

package transport

// setDontFragment is Linux-only for now: elsewhere datagrams go with the
// platform's default fragmentation policy, and a probe the first link
// fragments counts as carried (discovery may then settle above the path
// MTU, on IPv4, with fragmented datagrams; DisablePathMTUDiscovery avoids
// that).
func (s *socket) setDontFragment() error { return nil }
