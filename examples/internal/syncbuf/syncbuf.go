// Package syncbuf holds the examples' writers that several goroutines
// share: Writer, a program's output that its connections' goroutines
// write lines to, and Buffer, a test's output buffer that a program's
// goroutines write while the test reads what has arrived so far.
package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Writer serialises writes to an io.Writer from several goroutines, so
// that lines written at once are not interleaved.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter is a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Buffer is a bytes.Buffer safe for concurrent writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
