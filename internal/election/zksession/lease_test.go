package zksession

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

func TestActivityGap(t *testing.T) {
	const timeout = 3 * time.Second
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		prev time.Time
		want time.Duration
	}{
		{time.Time{}, time.Second},                                 // never renewed: the pings bound it
		{now.Add(-300 * time.Millisecond), 300 * time.Millisecond}, // renewing: the last renewal
		{now.Add(-time.Minute), time.Second},                       // renewed long ago: a ping since
	} {
		if got := activityGap(now, tc.prev, timeout); got != tc.want {
			t.Errorf("activityGap(prev %v) = %v, want %v", now.Sub(tc.prev), got, tc.want)
		}
	}
}

// Only electors that may lead soon make the Session renew: with no demand
// it sends no sync; the first renewal after idling proves less (the gap to
// the previous activity is a ping interval), the next ones more.
func TestRenewalOnlyOnDemand(t *testing.T) {
	u := newUnit(t)
	u.s.mu.Lock()
	u.s.leaseEnd, u.s.leaseSID = time.Time{}, 0
	u.s.mu.Unlock()
	u.s.loops.Add(1)
	go u.s.renewLoop()
	t.Cleanup(func() { close(u.s.done); u.s.loops.Wait() })
	for i := 0; i < 10; i++ {
		u.s.notify()
		u.clk.Advance(time.Second)
	}
	if n := u.f.opCount("sync"); n != 0 {
		t.Fatalf("%d syncs without demand", n)
	}
	u.s.NeedLease(true)
	waitUntil(t, "a renewal once needed", func() bool { return u.s.LeaseRemaining() > 0 })
	first := u.s.LeaseRemaining()
	if want := leaseFor(4*time.Second, 4*time.Second/3); first != want {
		t.Fatalf("first lease %v, want %v (gap: a ping interval)", first, want)
	}
	u.clk.Advance(400 * time.Millisecond)
	waitUntil(t, "the next renewal", func() bool { return u.f.opCount("sync") == 2 })
	waitUntil(t, "a longer lease", func() bool { return u.s.LeaseRemaining() == leaseFor(4*time.Second, 400*time.Millisecond) })
	u.s.NeedLease(false)
	u.clk.Advance(400 * time.Millisecond) // the timer already armed fires once more
	waitUntil(t, "the armed renewal", func() bool { return u.f.opCount("sync") >= 2 })
	n := u.f.opCount("sync")
	for i := 0; i < 5; i++ {
		u.clk.Advance(400 * time.Millisecond)
		u.s.notify()
	}
	if got := u.f.opCount("sync"); got > n+1 {
		t.Fatalf("%d syncs after the demand went (had %d)", got, n)
	}
}
