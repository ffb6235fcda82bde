package fleettest

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer that several goroutines write (a command's
// output, a monitor's log) and the test reads while they do.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
