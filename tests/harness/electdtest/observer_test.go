package electdtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/invariant"
)

// TestObserver polls two fake participants and checks that samples carry
// status, token and consistent times, and that a handoff is seen.
func TestObserver(t *testing.T) {
	var leaderIsA atomic.Bool
	leaderIsA.Store(true)
	fake := func(isA bool) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz/leader" {
				http.NotFound(w, r)
				return
			}
			if leaderIsA.Load() == isA {
				w.WriteHeader(200)
				w.Write([]byte(`{"is_leader": true, "reason": "leader", "lease_remaining_ms": 1234, "fencing_token": 42}`))
				return
			}
			w.WriteHeader(503)
			w.Write([]byte(`{"is_leader": false, "reason": "follower", "lease_remaining_ms": 0, "fencing_token": 0}`))
		}))
	}
	a, b := fake(true), fake(false)
	defer a.Close()
	defer b.Close()
	o := NewObserver(2*time.Millisecond, 250*time.Millisecond)
	o.Add("a", strings.TrimPrefix(a.URL, "http://"))
	o.Add("b", strings.TrimPrefix(b.URL, "http://"))
	defer o.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := o.WaitLeader(ctx, 0); err != nil {
		t.Fatal(err)
	}
	tBefore := o.Now()
	leaderIsA.Store(false)
	t0 := o.Now()
	s, err := o.WaitLeader(ctx, t0, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s.Who != "b" || s.Token != 42 || s.Lease != 1234*time.Millisecond {
		t.Errorf("first leader after the switch: %v", s)
	}
	if err := o.WaitCovered(ctx, o.Now(), "a", "b"); err != nil {
		t.Fatal(err)
	}
	o.Stop()
	samples := o.Samples()
	for _, x := range samples {
		if x.Recv < x.Send || !x.Answered || (x.State != "200" && x.State != "503") {
			t.Fatalf("bad sample %v", x)
		}
	}
	// The switch happened in [tBefore, t0]: a 200 of a was sent before its
	// end, one of b received after its start.
	for _, x := range samples {
		if x.Leader && x.Who == "a" && x.Send > t0 {
			t.Errorf("a's 200 sent after the switch: %v", x)
		}
		if x.Leader && x.Who == "b" && x.Recv < tBefore {
			t.Errorf("b's 200 received before the switch: %v", x)
		}
	}
	for who, want := range map[string]bool{"a": false, "b": true} {
		var last invariant.Sample
		for _, x := range samples {
			if x.Who == who && x.Recv >= last.Recv {
				last = x
			}
		}
		if last.Leader != want {
			t.Errorf("%s's latest answer %v, want leader=%v", who, last, want)
		}
	}
}

// TestObserverUnanswered records a participant that does not answer as
// status 0 within the request timeout.
func TestObserverUnanswered(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
	}))
	defer srv.Close()
	defer close(block)
	o := NewObserver(2*time.Millisecond, 50*time.Millisecond)
	o.Add("x", strings.TrimPrefix(srv.URL, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := o.WaitFor(ctx, func(s invariant.Sample) bool { return s.Who == "x" })
	o.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if s.Answered || s.Recv-s.Send < 50*time.Millisecond {
		t.Errorf("unanswered request recorded as %v", s)
	}
}
