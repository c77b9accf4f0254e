package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
)

func TestSwitchover(t *testing.T) {
	const token = "s3cret"
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name     string
		target   string
		auth     string
		err      error
		status   election.Status // default leaderSt
		code     int
		contains string
		to       string // what Switchover got; "" when not called
		release  bool   // plain Release called
	}{
		{name: "hand over", target: "?to=web-3", auth: bearer, code: 202,
			contains: `{"released":true,"id":"web-2","to":"web-3"}`, to: "web-3"},
		{name: "escaped id", target: "?to=pod%20a%2Fb%C3%A9", auth: bearer, code: 202, contains: `"to":"pod a/bé"`, to: "pod a/bé"},
		{name: "follower", target: "?to=web-3", auth: bearer, err: fmt.Errorf("switchover: %w", election.ErrNotLeader),
			code: 409, contains: `not the leader`, to: "web-3"},
		{name: "race mode", target: "?to=web-3", auth: bearer, err: election.ErrNoQueue,
			code: 409, contains: `election.mode race has no queue`, to: "web-3"},
		{name: "unknown target", target: "?to=web-9", auth: bearer, err: fmt.Errorf("%w: web-9 is not a participant", election.ErrSwitchover),
			code: 409, contains: `{"error":"switchover refused: web-9 is not a participant"}`, to: "web-9"},
		{name: "other failure", target: "?to=web-3", auth: bearer, err: errors.New("zk: connection closed"),
			code: 503, contains: `switchover failed: zk: connection closed; this participant still leads`, to: "web-3"},
		{name: "failure after the release", target: "?to=web-3", auth: bearer, err: errors.New("zk: connection closed"), status: followerSt,
			code: 503, contains: `no longer leads`, to: "web-3"},
		{name: "empty", target: "?to=", auth: bearer, code: 400, contains: `to: empty`},
		{name: "bare", target: "?to", auth: bearer, code: 400, contains: `to: empty`},
		{name: "twice", target: "?to=a&to=b", auth: bearer, code: 400, contains: `to: given more than once`},
		{name: "control", target: "?to=a%0Ab", auth: bearer, code: 400, contains: `control character`},
		{name: "not UTF-8", target: "?to=%FF", auth: bearer, code: 400, contains: `invalid UTF-8`},
		{name: "too long", target: "?to=" + strings.Repeat("a", election.MaxIDBytes+1), auth: bearer, code: 400, contains: `1025 bytes`},
		{name: "no token", target: "?to=web-3", code: 401, contains: `missing bearer token`},
		{name: "wrong token, bad target", target: "?to=", auth: "Bearer x", code: 401, contains: `invalid bearer token`},
		{name: "no to: a plain release", target: "", auth: bearer, code: 202, contains: `{"released":true,"id":"web-2"}`, release: true},
		{name: "other parameter: a plain release", target: "?wait=1s", auth: bearer, code: 202, release: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := leaderSt
			if tc.status.ID != "" {
				st = tc.status
			}
			f := electiontest.New(st)
			f.Fail(electiontest.Switchover, tc.err)
			h := newTestRouter(f, Options{AdminToken: token, Switchover: f})
			resp, body := serve(t, h, newRequest(http.MethodPost, "/leader/release"+tc.target, tc.auth))
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.code, body)
			}
			mustContain(t, body, tc.contains)
			var to []string
			for _, c := range f.Calls() {
				if s, ok := strings.CutPrefix(c, "switchover "); ok {
					to = append(to, s)
				}
			}
			if got := strings.Join(to, ","); got != tc.to {
				t.Errorf("Switchover got %q, want %q", got, tc.to)
			}
			if got := count(f, "release") == 1; got != tc.release {
				t.Errorf("Release called: %v, want %v", got, tc.release)
			}
			if tc.code == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		})
	}
}

func TestSwitchoverTimesOut(t *testing.T) {
	f := electiontest.New(leaderSt)
	f.Intercept(func(ctx context.Context, call string) error {
		<-ctx.Done() // the switchover outlasts the request
		return ctx.Err()
	})
	h := newTestRouter(f, Options{AdminToken: "t", Switchover: f})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the request's context has ended: the switchover's too, at once
	req := newRequest(http.MethodPost, "/leader/release?to=web-3", "Bearer t").WithContext(ctx)
	resp, body := serve(t, h, req)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "still leads") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if code, msg := switchoverAnswer(context.DeadlineExceeded, "web-3", true); code != 503 ||
		msg != `the switchover to "web-3" did not complete within 10s; this participant still leads` {
		t.Errorf("deadline: %d %q", code, msg)
	}
}

func TestSwitchoverNotAvailable(t *testing.T) {
	h := newTestRouter(electiontest.New(leaderSt), Options{AdminToken: "t"})
	resp, body := serve(t, h, newRequest(http.MethodPost, "/leader/release?to=web-3", "Bearer t"))
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

var _ Switcher = (*election.Elector)(nil)
