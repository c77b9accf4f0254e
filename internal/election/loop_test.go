package election

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// runUnit runs the Elector's Run loop on the fake until the test ends.
func runUnit(t *testing.T, u *unit) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = u.e.run(ctx)
	}()
	u.e.started.Store(true)
	t.Cleanup(func() {
		cancel()
		<-runDone
	})
}

// waitUntil waits until cond holds, failing the test after 10s.
func waitUntil(t *testing.T, desc string, cond func() bool) {
	t.Helper()
	testkit.For(t, 10*time.Second, desc, cond)
}

// A permission error backs off exponentially on the Clock; lease renewals,
// which signal the session every renewal interval, do not cut the back-off
// short, and the refusal is logged once.
func TestLoopPermissionErrorBacksOff(t *testing.T) {
	u := newUnit(t, Config{})
	ft := u.f.fail("create", "/e", zk.ErrNoAuth, false)
	ft.times = 1 << 20
	runUnit(t, u)
	creates := func() int { return u.f.opCount("create /e") }
	waitUntil(t, "the first attempt", func() bool { return creates() == 1 })
	for i := 0; i < 20; i++ { // renewals: same state, same session
		u.s.notify()
		time.Sleep(5 * time.Millisecond)
	}
	if n := creates(); n != 1 {
		t.Fatalf("%d attempts after 20 renewals and no time passing; want 1 (back-off ignored)", n)
	}
	want := 1
	for _, d := range []time.Duration{50, 100, 200, 400, 800} {
		waitUntil(t, "the retry timer", func() bool { return u.clk.Pending() == 1 })
		u.clk.Advance(d * time.Millisecond)
		want++
		waitUntil(t, "the retry after the back-off", func() bool { return creates() == want })
	}
	if st := u.e.Status(); st.Why != ReasonRefused || !strings.Contains(st.Reason, "no permission on /e") {
		t.Fatalf("status %q (%v), want the refusal", st.Reason, st.Why)
	}
	if n := strings.Count(u.log.String(), "cannot stand in the election"); n != 1 {
		t.Fatalf("the refusal was logged %d times, want once", n)
	}
	// A new session retries at once.
	u.expire(0x1001)
	u.s.notify()
	waitUntil(t, "a retry on the new session", func() bool { return creates() == want+1 })
}
