package election

import (
	"testing"
	"time"
)

func TestLeaseForStaysInsideTheServerBound(t *testing.T) {
	for _, timeout := range []time.Duration{time.Second, 4 * time.Second, 10 * time.Second, 40 * time.Second} {
		iv := defaultRenewInterval(timeout)
		got := leaseFor(timeout, iv)
		// The worst case the server can expire the session: last activity it
		// knows of is one renewal interval plus half a tick (<= timeout/4)
		// before the renewal was sent.
		worst := timeout - iv - timeout/4
		if got <= 0 || got >= worst {
			t.Errorf("leaseFor(%v, %v) = %v, want in (0, %v)", timeout, iv, got, worst)
		}
		// And it must leave room for several renewals.
		if got < 4*iv {
			t.Errorf("leaseFor(%v) = %v covers fewer than 4 renewals of %v", timeout, got, iv)
		}
	}
}

func TestLeaseForNeverNegative(t *testing.T) {
	if got := leaseFor(100*time.Millisecond, time.Second); got != 0 {
		t.Fatalf("leaseFor with a renewal longer than the timeout = %v, want 0", got)
	}
}
