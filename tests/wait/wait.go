// Package wait is the tests' one polling helper: wait until a condition
// holds, or fail the test.
package wait

import (
	"testing"
	"time"
)

// For polls cond every 10ms until it holds, failing t after timeout with
// what it waited for.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
