package proxy

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
)

// A small body read to its end is kept and can be read again from the
// start; one past maxKeptBody, or past the shared budget, or not read to
// its end, cannot; an unread one always can. The budget comes back.
func TestBodyKeepsSmallBodiesWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		budget   int64
		readAll  bool
		rewinds  bool
		readHalf bool
		declared bool // its length is declared
	}{
		{"small, read whole", 100, keptBudget, true, true, false, false},
		{"unread", 100, keptBudget, false, true, false, false},
		{"half read", 100, keptBudget, false, false, true, false},
		{"half read, of a declared length", 100, keptBudget, false, false, true, true},
		{"read to its declared length, not its end", 100, keptBudget, false, true, false, true},
		{"past maxKeptBody", maxKeptBody + 1, keptBudget, true, false, false, false},
		{"past the budget", 100, 99, true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var budget atomic.Int64
			budget.Store(tc.budget)
			want := strings.Repeat("x", tc.size)
			size := int64(-1)
			if tc.declared {
				size = int64(tc.size)
			}
			b := newBody(io.NopCloser(strings.NewReader(want)), size, &budget)
			switch {
			case tc.declared && !tc.readAll && !tc.readHalf:
				if _, err := io.ReadFull(b, make([]byte, tc.size)); err != nil {
					t.Fatal(err)
				}
			case tc.readAll:
				if got, err := io.ReadAll(b); err != nil || string(got) != want {
					t.Fatalf("first read: %d bytes, %v", len(got), err)
				}
			case tc.readHalf:
				if _, err := io.ReadFull(b, make([]byte, tc.size/2)); err != nil {
					t.Fatal(err)
				}
			}
			if got := b.rewind(); got != tc.rewinds {
				t.Fatalf("rewind = %v, want %v", got, tc.rewinds)
			}
			if tc.rewinds {
				if got, err := io.ReadAll(b); err != nil || string(got) != want {
					t.Fatalf("read again: %d bytes, %v; want all %d", len(got), err, tc.size)
				}
			}
			b.release()
			if got := budget.Load(); got != tc.budget {
				t.Fatalf("budget after release %d, want %d back", got, tc.budget)
			}
		})
	}
}
