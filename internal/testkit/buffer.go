package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine may write (a logger, an exec
// copier) while another reads it: the tests' log and output captures. It
// is safe for concurrent Write and String. The zero value is empty and
// unbounded.
type Buffer struct {
	// Max, when positive, bounds what is kept: writes once the buffer holds
	// more are dropped (and reported written), keeping the start.
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.b.Len() > s.Max {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
