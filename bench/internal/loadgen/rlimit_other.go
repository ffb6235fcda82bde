//go:build !unix

package loadgen

// RaiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func RaiseFileLimit() error { return nil }
