package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
)

func TestHealthzLeader(t *testing.T) {
	tests := []struct {
		name   string
		st     election.Status
		target string
		code   int
		body   string
	}{
		{name: "leader", st: leaderSt, target: "/healthz/leader", code: 200,
			body: `{"is_leader":true,"reason":"leader","lease_remaining_ms":5873,"fencing_token":4294967310}` + "\n"},
		{name: "follower", st: followerSt, target: "/healthz/leader", code: 503,
			body: `{"is_leader":false,"reason":"following web-1","lease_remaining_ms":0,"fencing_token":null}` + "\n"},
		{name: "no leader", st: noLeaderSt, target: "/healthz/leader", code: 503,
			body: `{"is_leader":false,"reason":"not joined","lease_remaining_ms":0,"fencing_token":null}` + "\n"},
		{name: "leader with wait answers at once", st: leaderSt, target: "/healthz/leader?wait=5m", code: 200,
			body: `{"is_leader":true,"reason":"leader","lease_remaining_ms":5873,"fencing_token":4294967310}` + "\n"},
		{name: "wait=0s does not wait", st: followerSt, target: "/healthz/leader?wait=0s", code: 503},
		{name: "unknown parameter ignored", st: leaderSt, target: "/healthz/leader?verbose=1", code: 200},
		{name: "bare number", st: leaderSt, target: "/healthz/leader?wait=30", code: 400,
			body: `{"error":"wait: \"30\" needs a unit, e.g. 30s"}` + "\n"},
		{name: "bare zero", st: leaderSt, target: "/healthz/leader?wait=0", code: 400},
		{name: "malformed", st: leaderSt, target: "/healthz/leader?wait=abc", code: 400,
			body: `{"error":"wait: \"abc\" is not a duration; use e.g. 500ms, 30s or 2m"}` + "\n"},
		{name: "empty", st: leaderSt, target: "/healthz/leader?wait=", code: 400},
		{name: "negative", st: leaderSt, target: "/healthz/leader?wait=-1s", code: 400,
			body: `{"error":"wait: \"-1s\" is negative"}` + "\n"},
		{name: "over max", st: leaderSt, target: "/healthz/leader?wait=5m1s", code: 400,
			body: `{"error":"wait: \"5m1s\" is longer than the maximum 5m0s"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := electiontest.New(tt.st)
			resp, body := doGet(t, newTestRouter(f, Options{}), tt.target)
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control = %q, want %q", got, want)
			}
			if tt.body != "" {
				if got, want := body, tt.body; got != want {
					t.Errorf("body = %s, want %s", got, want)
				}
			}
			if count(f, "await") != 0 {
				t.Error("Await was called")
			}
		})
	}
}

func TestHealthzLeaderMaxWaitOption(t *testing.T) {
	h := newTestRouter(electiontest.New(leaderSt), Options{MaxWait: time.Second})
	if resp, body := doGet(t, h, "/healthz/leader?wait=2s"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("wait=2s with MaxWait 1s: %d %s, want 400", resp.StatusCode, body)
	}
	if resp, body := doGet(t, h, "/healthz/leader?wait=1s"); resp.StatusCode != http.StatusOK {
		t.Errorf("wait=1s with MaxWait 1s: %d %s, want 200", resp.StatusCode, body)
	}
}

// result is one answer of a request served in the background.
type result struct {
	code int
	body string
}

func serveAsync(h http.Handler, req *http.Request) <-chan result {
	done := make(chan result, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		done <- result{rec.Code, rec.Body.String()}
	}()
	return done
}

func TestHealthzLeaderWaitReturnsWhenLeading(t *testing.T) {
	f := electiontest.New(followerSt)
	awaits := contexts(f, "await")
	done := serveAsync(newTestRouter(f, Options{}), newRequest(http.MethodGet, "/healthz/leader?wait=5m", ""))
	var awaitCtx context.Context
	select {
	case awaitCtx = <-awaits:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler never called Await")
	}
	if dl, ok := awaitCtx.Deadline(); !ok || time.Until(dl) > 5*time.Minute {
		t.Errorf("Await ctx deadline = %v, %v; want within 5m", dl, ok)
	}
	f.Set(leaderSt)
	select {
	case r := <-done:
		if got, want := r.code, http.StatusOK; got != want {
			t.Errorf("status = %d, want %d (%s)", got, want, r.body)
		}
		mustContain(t, r.body, `"is_leader":true`)
	case <-time.After(5 * time.Second):
		t.Fatal("?wait=5m did not answer once leading")
	}
}

func TestHealthzLeaderWaitTimesOut(t *testing.T) {
	f := electiontest.New(followerSt)
	start := time.Now()
	resp, body := doGet(t, newTestRouter(f, Options{}), "/healthz/leader?wait=50ms")
	if got, want := resp.StatusCode, http.StatusServiceUnavailable; got != want {
		t.Errorf("status = %d, want %d (%s)", got, want, body)
	}
	if got, want := time.Since(start), 50*time.Millisecond; got < want {
		t.Errorf("answered after %v, want at least %v", got, want)
	}
	mustContain(t, body, `"reason":"following web-1"`)
}

func TestHealthzLeaderWaitEndsWithRequest(t *testing.T) {
	f := electiontest.New(followerSt)
	awaits := contexts(f, "await")
	ctx, cancel := context.WithCancel(context.Background())
	req := newRequest(http.MethodGet, "/healthz/leader?wait=5m", "").WithContext(ctx)
	done := serveAsync(newTestRouter(f, Options{}), req)
	select {
	case <-awaits:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler never called Await")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept waiting after the client went away")
	}
}

func TestHealthz(t *testing.T) {
	tests := []struct {
		name string
		live func() error
		code int
		body string
	}{
		{name: "no Live", live: nil, code: 200, body: `{"status":"ok"}` + "\n"},
		{name: "alive", live: func() error { return nil }, code: 200, body: `{"status":"ok"}` + "\n"},
		{name: "dead", live: func() error { return errors.New("election loop stopped") }, code: 503,
			body: `{"status":"unavailable","error":"election loop stopped"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// noLeaderSt: liveness never depends on ZooKeeper or leadership.
			resp, body := doGet(t, newTestRouter(electiontest.New(noLeaderSt), Options{Live: tt.live}), "/healthz")
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := body, tt.body; got != want {
				t.Errorf("body = %s, want %s", got, want)
			}
			if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control = %q, want %q", got, want)
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	suspended := followerSt
	suspended.State = zksession.StateSuspended
	notJoined := followerSt
	notJoined.Joined = false
	misconfigured := followerSt
	misconfigured.Misconfigured = "lock- nodes under a latch path"
	noLeaderKnown := followerSt
	noLeaderKnown.Leader = nil
	draining := followerSt
	draining.Why, draining.Reason = election.ReasonShuttingDown, "shutting down"
	duplicate := noLeaderSt
	duplicate.State, duplicate.Why = zksession.StateConnected, election.ReasonDuplicateID
	duplicate.Reason = "duplicate id: another live participant (session 0x2) has id \"b\"; give each sidecar a unique id, e.g. the pod name"
	tests := []struct {
		name string
		st   election.Status
		code int
		body string
	}{
		{name: "joined", st: followerSt, code: 200,
			body: `{"ready":true,"joined":true,"state":"connected","node":"_c_b-latch-0000000004","reason":"joined"}` + "\n"},
		{name: "not joined", st: notJoined, code: 503,
			body: `{"ready":false,"joined":false,"state":"connected","node":"_c_b-latch-0000000004","reason":"not joined"}` + "\n"},
		{name: "connecting", st: noLeaderSt, code: 503,
			body: `{"ready":false,"joined":false,"state":"connecting","node":"","reason":"zookeeper connecting"}` + "\n"},
		{name: "suspended", st: suspended, code: 503,
			body: `{"ready":false,"joined":true,"state":"suspended","node":"_c_b-latch-0000000004","reason":"zookeeper suspended"}` + "\n"},
		{name: "leader", st: leaderSt, code: 200,
			body: `{"ready":true,"joined":true,"state":"connected","node":"_c_b-latch-0000000004","reason":"joined"}` + "\n"},
		{name: "joined, no leader known yet", st: noLeaderKnown, code: 503,
			body: `{"ready":false,"joined":true,"state":"connected","node":"_c_b-latch-0000000004","reason":"no leader known yet"}` + "\n"},
		{name: "duplicate id", st: duplicate, code: 503,
			body: `{"ready":false,"joined":false,"state":"connected","node":"","reason":"duplicate id: another live participant (session 0x2) has id \"b\"; give each sidecar a unique id, e.g. the pod name"}` + "\n"},
		{name: "shutting down", st: draining, code: 503,
			body: `{"ready":false,"joined":true,"state":"connected","node":"_c_b-latch-0000000004","reason":"shutting down"}` + "\n"},
		{name: "misconfigured", st: misconfigured, code: 503,
			body: `{"ready":false,"joined":true,"state":"connected","node":"_c_b-latch-0000000004","reason":"misconfigured: lock- nodes under a latch path"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doGet(t, newTestRouter(electiontest.New(tt.st), Options{}), "/readyz")
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := body, tt.body; got != want {
				t.Errorf("body = %s, want %s", got, want)
			}
		})
	}
}
