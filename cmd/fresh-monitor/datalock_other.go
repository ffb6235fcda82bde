//go:build !unix

package main

// dataLock is not taken where flock(2) does not exist (Windows): two
// monitors on one -data there are not refused.
type dataLock struct{}

func lockData(dir string) (*dataLock, error) { return &dataLock{}, nil }
func (l *dataLock) write(string) error       { return nil }
func (l *dataLock) release()                 {}
