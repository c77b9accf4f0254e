package e2e

import (
	"slices"
	"sync"
	"time"
)

// Timeline is a value that changes over time, recorded as observed: the
// leader by ZooKeeper or by a Lease, the ready endpoints of a Service.
// Safe for concurrent use.
type Timeline[T comparable] struct {
	mu      sync.Mutex
	changes []Change[T]
	subs    []chan struct{}
}

// Change is one observed value and when it was seen.
type Change[T comparable] struct {
	At    time.Time
	Value T
}

// Set records v at now unless it equals the current value.
func (tl *Timeline[T]) Set(v T) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if n := len(tl.changes); n > 0 && tl.changes[n-1].Value == v {
		return
	}
	tl.changes = append(tl.changes, Change[T]{time.Now(), v})
	for _, s := range tl.subs {
		select {
		case s <- struct{}{}:
		default:
		}
	}
}

// Current is the last value recorded.
func (tl *Timeline[T]) Current() (T, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var zero T
	if len(tl.changes) == 0 {
		return zero, false
	}
	return tl.changes[len(tl.changes)-1].Value, true
}

// Between returns the value in force at from, then every change up to to.
func (tl *Timeline[T]) Between(from, to time.Time) []Change[T] {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []Change[T]
	for i, c := range tl.changes {
		if c.At.After(to) {
			break
		}
		if !c.At.After(from) {
			if i+1 == len(tl.changes) || tl.changes[i+1].At.After(from) {
				out = append(out, Change[T]{from, c.Value})
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// At returns the value in force at t.
func (tl *Timeline[T]) At(t time.Time) (T, bool) {
	cs := tl.Between(t, t)
	var zero T
	if len(cs) == 0 {
		return zero, false
	}
	return cs[0].Value, true
}

// HeldWithin reports whether v was in force at some instant of [from, to].
func (tl *Timeline[T]) HeldWithin(v T, from, to time.Time) bool {
	return slices.ContainsFunc(tl.Between(from, to), func(c Change[T]) bool { return c.Value == v })
}

// First returns the first time at or after from when ok holds for the
// value in force.
func (tl *Timeline[T]) First(from time.Time, ok func(T) bool) (time.Time, bool) {
	for _, c := range tl.Between(from, time.Now().Add(time.Hour)) {
		if ok(c.Value) {
			return c.At, true
		}
	}
	return time.Time{}, false
}

// Longest is the longest stretch within [from, to] during which bad holds
// for the value in force.
func (tl *Timeline[T]) Longest(from, to time.Time, bad func(T) bool) time.Duration {
	var longest time.Duration
	var since time.Time
	in := false
	for _, c := range tl.Between(from, to) {
		switch {
		case bad(c.Value) && !in:
			in, since = true, c.At
		case !bad(c.Value) && in:
			in = false
			longest = max(longest, c.At.Sub(since))
		}
	}
	if in {
		longest = max(longest, to.Sub(since))
	}
	return longest
}

// Wait blocks until ok holds for the current value or the deadline passes,
// and reports whether it held.
func (tl *Timeline[T]) Wait(deadline time.Time, ok func(T) bool) bool {
	ch := make(chan struct{}, 1)
	tl.mu.Lock()
	tl.subs = append(tl.subs, ch)
	tl.mu.Unlock()
	defer func() {
		tl.mu.Lock()
		tl.subs = slices.DeleteFunc(tl.subs, func(c chan struct{}) bool { return c == ch })
		tl.mu.Unlock()
	}()
	for {
		if v, have := tl.Current(); have && ok(v) {
			return true
		}
		d := time.Until(deadline)
		if d <= 0 {
			return false
		}
		select {
		case <-ch:
		case <-time.After(d):
		}
	}
}
