package httpapi

import (
	"io"
	"net/http"
	"testing"

	"github.com/electd/electd/internal/election/electiontest"
)

func TestRouting(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "electd_is_leader 1\n")
	})
	tests := []struct {
		name    string
		metrics http.Handler
		method  string
		target  string
		code    int
		allow   string
		ctype   string
		body    string
	}{
		{name: "unknown path", method: "GET", target: "/nope", code: 404, ctype: "application/json",
			body: `{"error":"no such endpoint: /nope"}` + "\n"},
		{name: "trailing slash", method: "GET", target: "/leader/", code: 404, ctype: "application/json"},
		{name: "POST /leader", method: "POST", target: "/leader", code: 405, allow: "GET, HEAD", ctype: "application/json",
			body: `{"error":"method POST not allowed on /leader; allowed: GET, HEAD"}` + "\n"},
		{name: "DELETE /healthz/leader", method: "DELETE", target: "/healthz/leader", code: 405, allow: "GET, HEAD", ctype: "application/json"},
		{name: "PUT /healthz", method: "PUT", target: "/healthz", code: 405, allow: "GET, HEAD", ctype: "application/json"},
		{name: "POST /events", method: "POST", target: "/events", code: 405, allow: "GET, HEAD", ctype: "application/json"},
		{name: "GET /leader/release", method: "GET", target: "/leader/release", code: 405, allow: "POST", ctype: "application/json"},
		{name: "unknown method", method: "BREW", target: "/readyz", code: 405, allow: "GET, HEAD", ctype: "application/json"},
		{name: "unknown method, unknown path", method: "BREW", target: "/nope", code: 404, ctype: "application/json"},
		{name: "metrics", metrics: metrics, method: "GET", target: "/metrics", code: 200, body: "electd_is_leader 1\n"},
		{name: "POST /metrics", metrics: metrics, method: "POST", target: "/metrics", code: 405, allow: "GET, HEAD", ctype: "application/json"},
		{name: "no metrics handler", method: "GET", target: "/metrics", code: 404, ctype: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestRouter(electiontest.New(followerSt), Options{Metrics: tt.metrics, AdminToken: "t"})
			resp, body := serve(t, h, newRequest(tt.method, tt.target, ""))
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Allow"), tt.allow; got != want {
				t.Errorf("Allow = %q, want %q", got, want)
			}
			if tt.ctype != "" {
				if got, want := resp.Header.Get("Content-Type"), tt.ctype; got != want {
					t.Errorf("Content-Type = %q, want %q", got, want)
				}
			}
			if tt.body != "" {
				if got, want := body, tt.body; got != want {
					t.Errorf("body = %q, want %q", got, want)
				}
			}
		})
	}
}
