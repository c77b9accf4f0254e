package testkit

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritesAllKept(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("kept %d bytes, want 800", len(got))
	}
}

func TestMaxKeepsTheStart(t *testing.T) {
	b := Buffer{Max: 4}
	for _, w := range []string{"abc", "de", "fg"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if got := b.String(); got != "abcde" {
		t.Fatalf("kept %q, want %q (writes after more than Max bytes are dropped)", got, "abcde")
	}
}
