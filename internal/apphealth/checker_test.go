package apphealth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/testkit"
)

// waiting waits until Run waits for its next check: the last check has
// been counted and any change reported.
func waiting(t *testing.T, c *clocktest.Fake) {
	t.Helper()
	testkit.For(t, 10*time.Second, "Run to wait for a next check", func() bool { return c.Pending() == 1 })
}

// next checks that Run waits want for its next check, lets that check
// run, and waits until it has been counted.
func next(t *testing.T, c *clocktest.Fake, want time.Duration) {
	t.Helper()
	waiting(t, c)
	c.Advance(want - time.Millisecond)
	if c.Pending() != 1 {
		t.Fatalf("waited less than %v", want)
	}
	c.Advance(time.Millisecond)
	waiting(t, c) // a longer wait leaves its timer pending, and the check's change never comes
}

type countRecorder struct {
	mu sync.Mutex
	n  map[Result]int
}

func (r *countRecorder) AppHealthChecked(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[res]++
}

func TestCheckerRun(t *testing.T) {
	var code atomic.Int32
	code.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(code.Load()))
	}))
	defer srv.Close()

	clock := clocktest.NewFake(time.Unix(1000, 0))
	rec := &countRecorder{n: map[Result]int{}}
	c := New(Config{URL: srv.URL, Interval: 10 * time.Second, Timeout: time.Second,
		FailureThreshold: 2, SuccessThreshold: 2, Clock: clock, Recorder: rec})
	if h := c.Health(); h.State != Unknown || h.Detail != "" {
		t.Fatalf("before any check: %+v", h)
	}
	changes := make(chan Health, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, func(h Health) { changes <- h })
	}()

	expect := func(want State) {
		t.Helper()
		select {
		case h := <-changes:
			if h.State != want {
				t.Fatalf("change to %v, want %v (%+v)", h.State, want, h)
			}
		default:
			t.Fatalf("no change; want one to %v (now %+v)", want, c.Health())
		}
	}
	none := func() {
		t.Helper()
		select {
		case h := <-changes:
			t.Fatalf("unexpected change to %+v", h)
		default:
		}
	}

	// The first check runs at once; one pass is below the threshold of two.
	waiting(t, clock)
	none()
	if h := c.Health(); h.State != Unknown || h.Detail != "HTTP 200 OK" {
		t.Fatalf("after one pass: %+v", h)
	}
	next(t, clock, 10*time.Second)
	expect(Healthy)

	code.Store(http.StatusInternalServerError)
	next(t, clock, 10*time.Second)
	none()
	next(t, clock, 10*time.Second)
	expect(Unhealthy)
	if h := c.Health(); h.Detail != "HTTP 500 Internal Server Error" {
		t.Errorf("detail %q", h.Detail)
	}

	code.Store(http.StatusOK)
	next(t, clock, 10*time.Second)
	none()
	next(t, clock, 10*time.Second)
	expect(Healthy)

	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.n[Success] != 4 || rec.n[Failure] != 2 {
		t.Errorf("recorded %v, want 4 successes and 2 failures", rec.n)
	}
}

// A check that is cut short by the end of Run's context is neither
// counted nor reported.
func TestCheckerStopsWithContext(t *testing.T) {
	entered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	defer srv.Close()
	rec := &countRecorder{n: map[Result]int{}}
	c := New(Config{URL: srv.URL, Interval: time.Hour, Timeout: time.Hour, FailureThreshold: 1, SuccessThreshold: 1, Recorder: rec})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, func(h Health) { t.Errorf("change %+v", h) })
	}()
	<-entered
	cancel()
	<-done
	if len(rec.n) != 0 || c.Health().State != Unknown {
		t.Errorf("recorded %v, health %+v", rec.n, c.Health())
	}
}
