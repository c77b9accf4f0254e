package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/proxy"
)

func TestRelease(t *testing.T) {
	const token = "s3cret"
	tests := []struct {
		name        string
		token       string // configured
		auth        string // sent
		err         error  // from Release
		code        int
		contains    string
		challenge   string
		wantRelease bool
	}{
		{name: "leader", token: token, auth: "Bearer " + token, code: 202,
			contains: `{"released":true,"id":"web-2"}`, wantRelease: true},
		{name: "scheme is case-insensitive", token: token, auth: "bearer " + token, code: 202, wantRelease: true},
		{name: "follower", token: token, auth: "Bearer " + token, err: fmt.Errorf("release: %w", election.ErrNotLeader),
			code: 409, contains: `{"error":"not the leader"}`, wantRelease: true},
		{name: "other error", token: token, auth: "Bearer " + token, err: errors.New("zk: connection closed"),
			code: 503, contains: `zk: connection closed`, wantRelease: true},
		{name: "no token configured", token: "", auth: "Bearer " + token, code: 403,
			contains: `set http.admin_token (environment ELECTD_HTTP_ADMIN_TOKEN`},
		{name: "missing token", token: token, auth: "", code: 401, contains: `missing bearer token`,
			challenge: `Bearer realm="electd"`},
		{name: "wrong scheme", token: token, auth: "Basic " + token, code: 401, contains: `missing bearer token`,
			challenge: `Bearer realm="electd"`},
		{name: "wrong token", token: token, auth: "Bearer s3cre", code: 401, contains: `invalid bearer token`,
			challenge: `Bearer realm="electd", error="invalid_token"`},
		{name: "empty bearer", token: token, auth: "Bearer ", code: 401, contains: `invalid bearer token`,
			challenge: `Bearer realm="electd", error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := electiontest.New(leaderSt)
			f.Fail(electiontest.Release, tt.err)
			h := newTestRouter(f, Options{AdminToken: tt.token})
			resp, body := serve(t, h, newRequest(http.MethodPost, "/leader/release", tt.auth))
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("WWW-Authenticate"), tt.challenge; got != want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, want)
			}
			mustContain(t, body, tt.contains)
			if n := count(f, "release"); (n == 1) != tt.wantRelease {
				t.Errorf("Release called %d times, want called: %v", n, tt.wantRelease)
			}
		})
	}
}

// With a forwarding proxy, the release's answer says how long its drain
// waited for the application's requests, and how many it still had.
func TestReleaseReportsTheDrain(t *testing.T) {
	f := electiontest.New(leaderSt)
	f.Intercept(func(ctx context.Context, call string) error {
		if call == "release" { // as the proxy's Yield around it does
			proxy.NoteDrain(ctx, proxy.Drained{Waited: 1500 * time.Millisecond, Left: 2})
		}
		return nil
	})
	h := newTestRouter(f, Options{AdminToken: "t"})
	resp, body := serve(t, h, newRequest(http.MethodPost, "/leader/release", "Bearer t"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d (%s)", resp.StatusCode, body)
	}
	mustContain(t, body, `{"released":true,"id":"web-2","drain":{"waited_seconds":1.5,"in_flight":2}}`)
}
