package proxy

import (
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

// The budget allows budgetFloor re-sends a second plus budgetRatio of the
// requests, over budgetWindow seconds; what slides out of the window is
// given back.
func TestBudget(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	b := &budget{clock: c}
	floor := budgetFloor * budgetWindow
	n := 0
	for b.withdraw() {
		n++
	}
	if n != floor {
		t.Fatalf("with no requests, %d re-sends allowed, want the floor %d", n, floor)
	}
	for range 100 {
		b.deposit()
	}
	n = 0
	for b.withdraw() {
		n++
	}
	if want := int(budgetRatio * 100); n != want {
		t.Fatalf("after 100 requests, %d more re-sends, want %d", n, want)
	}
	c.Advance(budgetWindow * time.Second)
	n = 0
	for b.withdraw() {
		n++
	}
	if n != floor {
		t.Fatalf("a window later, %d re-sends allowed, want the floor %d again", n, floor)
	}
}

// The k-th re-send waits between half and all of resendFirst·2^k.
func TestResendBackoff(t *testing.T) {
	for k := range 4 {
		d := resendFirst << k
		if lo := resendBackoff(k, func(int64) int64 { return 0 }); lo != d/2 {
			t.Errorf("re-send %d: shortest %v, want %v", k, lo, d/2)
		}
		if hi := resendBackoff(k, func(n int64) int64 { return n - 1 }); hi != d {
			t.Errorf("re-send %d: longest %v, want %v", k, hi, d)
		}
	}
}
