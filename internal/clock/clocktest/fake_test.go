package clocktest

import (
	"testing"
	"time"
)

func TestFakeRunsTimersInOrderWhenAdvanced(t *testing.T) {
	c := NewFake(time.Unix(1000, 0))
	got := make(chan int, 3)
	c.AfterFunc(2*time.Second, func() { got <- 2 })
	c.AfterFunc(time.Second, func() { got <- 1 })
	stopped := c.AfterFunc(time.Second, func() { got <- -1 })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	after := c.After(3 * time.Second)
	if n := c.Pending(); n != 3 {
		t.Fatalf("Pending = %d, want 3", n)
	}
	c.Advance(1500 * time.Millisecond)
	if v := <-got; v != 1 {
		t.Fatalf("first timer %d, want 1", v)
	}
	if !c.AdvanceToNext() {
		t.Fatal("AdvanceToNext found no timer")
	}
	if v := <-got; v != 2 {
		t.Fatalf("second timer %d, want 2", v)
	}
	c.Advance(time.Second)
	if at := <-after; !at.Equal(time.Unix(1003, 0)) {
		t.Fatalf("After delivered %v, want 1003 s", at)
	}
	if c.Pending() != 0 || c.AdvanceToNext() {
		t.Fatal("timers left after all ran")
	}
}
