package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
)

var _ Election = (*election.Elector)(nil)

// count returns how many of f's calls were call, or call followed by an
// argument ("switchover web-3" counts as "switchover").
func count(f *electiontest.Fake, call string) int {
	n := 0
	for _, c := range f.Calls() {
		if c == call || strings.HasPrefix(c, call+" ") {
			n++
		}
	}
	return n
}

// contexts makes f send on the channel it returns the ctx of each of its
// calls named call (the first 8).
func contexts(f *electiontest.Fake, call string) <-chan context.Context {
	ch := make(chan context.Context, 8)
	f.Intercept(func(ctx context.Context, c string) error {
		if c == call {
			select {
			case ch <- ctx:
			default:
			}
		}
		return nil
	})
	return ch
}

// Statuses the tests start from.
var (
	fixedNow   = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	web1       = &election.Participant{ID: "web-1", Advertise: "10.0.0.7:8080", Node: "_c_a-latch-0000000003", Session: 0x1000a2b3c4d0001, FencingToken: 4294967302}
	web2       = &election.Participant{ID: "web-2", Advertise: "10.0.0.8:8080", Node: "_c_b-latch-0000000004", Session: 0x1000a2b3c4d0002, FencingToken: 4294967310}
	followerSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Node: web2.Node, Candidate: true,
		Reason: "following web-1", LeaseRemaining: 6120 * time.Millisecond,
		State: zksession.StateConnected, Joined: true, Leader: web1, ObservedAt: fixedNow,
	}
	leaderSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Node: web2.Node, Candidate: true,
		IsLeader: true, Reason: "leader", FencingToken: web2.FencingToken, LeaseRemaining: 5873900 * time.Microsecond,
		State: zksession.StateConnected, Joined: true, Leader: web2, ObservedAt: fixedNow,
	}
	noLeaderSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Candidate: true,
		Reason: "not joined", State: zksession.StateConnecting,
	}
)

func newTestRouter(f *electiontest.Fake, opts Options) http.Handler {
	if opts.Clock == nil {
		opts.Clock = clocktest.NewFake(fixedNow)
	}
	return NewRouter(f, opts)
}

// serve runs one request through h and returns the response and its body.
func serve(t *testing.T, h http.Handler, req *http.Request) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func doGet(t *testing.T, h http.Handler, target string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return serve(t, h, req)
}

func mustContain(t *testing.T, body, want string) {
	t.Helper()
	if !strings.Contains(body, want) {
		t.Errorf("body %q does not contain %q", body, want)
	}
}

func newRequest(method, target, auth string) *http.Request {
	req := httptest.NewRequest(method, target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}
