package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/electd/electd/internal/candidacy"
	"github.com/electd/electd/internal/election/electiontest"
)

// fakeCandidacy is a Candidacy whose state the test sets; SetOperator
// records the setting and returns err (with Pending set when err is not
// nil); without an error it sets el's Candidate, when el is set.
type fakeCandidacy struct {
	mu   sync.Mutex
	st   candidacy.State
	err  error
	sets []bool
	el   *electiontest.Fake
}

func (f *fakeCandidacy) State() candidacy.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeCandidacy) SetOperator(ctx context.Context, c bool) (candidacy.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, c)
	f.st.Operator = c
	if f.err == nil {
		f.st.Standing = c && (f.st.App == candidacy.AppDisabled || f.st.App == candidacy.AppHealthy)
		if f.el != nil {
			st := f.el.Status()
			st.Candidate = f.st.Standing
			f.el.Set(st)
		}
	}
	f.st.Pending = f.err != nil
	return f.st, f.err
}

func postBody(target, auth, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

func TestGetCandidacy(t *testing.T) {
	c := &fakeCandidacy{st: candidacy.State{Operator: true, App: candidacy.AppUnhealthy, AppDetail: "HTTP 503 Service Unavailable"}}
	st := followerSt
	st.Candidate, st.Reason = false, "not a candidate (app_unhealthy)"
	h := newTestRouter(electiontest.New(st), Options{Candidacy: c})
	resp, body := doGet(t, h, "/candidacy")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("status %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	want := `{"id":"web-2","candidate":true,"standing":false,"pending":false,"app_health":"unhealthy",` +
		`"app_detail":"HTTP 503 Service Unavailable","reason":"not a candidate (app_unhealthy)"}` + "\n"
	if body != want {
		t.Errorf("body\n %s\nwant %s", body, want)
	}
	// /leader's self says the same.
	_, body = doGet(t, h, "/leader")
	mustContain(t, body, `"candidate":false,"app_healthy":false}`)
}

func TestLeaderSelfCandidacy(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Candidacy
		want string
	}{
		{"no candidacy", nil, `"observed_at":"2026-11-22T10:00:00Z","candidate":true}`},
		{"no health checks", &fakeCandidacy{st: candidacy.State{Operator: true, Standing: true, App: candidacy.AppDisabled}},
			`"observed_at":"2026-11-22T10:00:00Z","candidate":true}`},
		{"healthy", &fakeCandidacy{st: candidacy.State{Operator: true, Standing: true, App: candidacy.AppHealthy}},
			`"candidate":true,"app_healthy":true}`},
		{"unknown", &fakeCandidacy{st: candidacy.State{Operator: true, App: candidacy.AppUnknown}},
			`"candidate":true,"app_healthy":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestRouter(electiontest.New(followerSt), Options{Candidacy: tc.c})
			_, body := doGet(t, h, "/leader")
			mustContain(t, body, tc.want)
		})
	}
}

func TestPostCandidacy(t *testing.T) {
	const token = "s3cret"
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name     string
		token    string
		auth     string
		body     string
		err      error
		code     int
		contains string
		sets     string // the settings SetOperator got
	}{
		{name: "withdraw", token: token, auth: bearer, body: `{"candidate": false}`, code: 200,
			contains: `"candidate":false,"standing":false,"pending":false`, sets: "[false]"},
		{name: "restore", token: token, auth: bearer, body: " {\"candidate\":true}\n", code: 200,
			contains: `"candidate":true,"standing":true,"pending":false`, sets: "[true]"},
		{name: "not applied in time", token: token, auth: bearer, body: `{"candidate": false}`, err: context.DeadlineExceeded,
			code: 202, contains: `"candidate":false,"standing":true,"pending":true`, sets: "[false]"},
		{name: "failed", token: token, auth: bearer, body: `{"candidate": false}`, err: errors.New("election: closed"),
			code: 503, contains: `candidacy recorded, not applied yet: election: closed`, sets: "[false]"},
		{name: "no token configured", auth: bearer, body: `{"candidate": false}`, code: 403, contains: "set http.admin_token", sets: "[]"},
		{name: "no token sent", token: token, body: `{"candidate": false}`, code: 401, contains: "missing bearer token", sets: "[]"},
		{name: "wrong token", token: token, auth: "Bearer nope", body: `{"candidate": false}`, code: 401, contains: "invalid bearer token", sets: "[]"},
		{name: "empty body", token: token, auth: bearer, body: ``, code: 400, contains: `not {\"candidate\": true|false}: it is empty`, sets: "[]"},
		{name: "not JSON", token: token, auth: bearer, body: `candidate=false`, code: 400, contains: "not JSON at byte 1: invalid character", sets: "[]"},
		{name: "string", token: token, auth: bearer, body: `{"candidate": "false"}`, code: 400, contains: `\"candidate\" is a JSON string, not true or false`, sets: "[]"},
		{name: "null", token: token, auth: bearer, body: `{"candidate": null}`, code: 400, contains: `\"candidate\" is missing`, sets: "[]"},
		{name: "missing", token: token, auth: bearer, body: `{}`, code: 400, contains: `\"candidate\" is missing`, sets: "[]"},
		{name: "unknown field", token: token, auth: bearer, body: `{"candidate": false, "force": true}`, code: 400, contains: `unknown field \"force\"`, sets: "[]"},
		{name: "two values", token: token, auth: bearer, body: `{"candidate": false} {"candidate": true}`, code: 400, contains: "more than one JSON value", sets: "[]"},
		{name: "trailing", token: token, auth: bearer, body: `{"candidate": false}}`, code: 400, contains: "more than one JSON value", sets: "[]"},
		{name: "array", token: token, auth: bearer, body: `[false]`, code: 400, contains: "a JSON array, not an object", sets: "[]"},
		{name: "a number", token: token, auth: bearer, body: `{"candidate": 0}`, code: 400, contains: `\"candidate\" is a JSON number, not true or false`, sets: "[]"},
		{name: "cut short", token: token, auth: bearer, body: `{"candidate": fal`, code: 400, contains: "the JSON ends early", sets: "[]"},
		{name: "too large", token: token, auth: bearer, body: `{"candidate": false` + strings.Repeat(" ", 300) + `}`, code: 413, contains: "larger than 256 bytes", sets: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			el := electiontest.New(followerSt)
			c := &fakeCandidacy{st: candidacy.State{Operator: true, Standing: true, App: candidacy.AppDisabled}, err: tc.err, el: el}
			h := newTestRouter(el, Options{AdminToken: tc.token, Candidacy: c})
			resp, body := serve(t, h, postBody("/candidacy", tc.auth, tc.body))
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.code, body)
			}
			if resp.Header.Get("Content-Type") != "application/json" || !json.Valid([]byte(body)) {
				t.Errorf("not a JSON answer: %q %q", resp.Header.Get("Content-Type"), body)
			}
			mustContain(t, body, tc.contains)
			if strings.Contains(body, "Go ") || strings.Contains(body, "unmarshal") || strings.Contains(body, "Request") {
				t.Errorf("the answer names Go, not the JSON sent: %s", body)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if got := fmtBools(c.sets); got != tc.sets {
				t.Errorf("SetOperator got %s, want %s", got, tc.sets)
			}
		})
	}
}

// A body larger than the limit is refused on its announced length alone,
// and the connection is not kept.
func TestPostCandidacyRefusesALargeContentLength(t *testing.T) {
	c := &fakeCandidacy{}
	h := newTestRouter(electiontest.New(followerSt), Options{AdminToken: "t", Candidacy: c})
	req := postBody("/candidacy", "Bearer t", `{"candidate": false}`)
	req.ContentLength = 1 << 30
	resp, body := serve(t, h, req)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Connection") != "close" {
		t.Errorf("status %d, Connection %q: %s", resp.StatusCode, resp.Header.Get("Connection"), body)
	}
}

func TestCandidacyRoutes(t *testing.T) {
	h := newTestRouter(electiontest.New(followerSt), Options{})
	if resp, _ := doGet(t, h, "/candidacy"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("without Candidacy: GET /candidacy %d, want 404", resp.StatusCode)
	}
	h = newTestRouter(electiontest.New(followerSt), Options{Candidacy: &fakeCandidacy{}})
	resp, _ := serve(t, h, httptest.NewRequest(http.MethodDelete, "/candidacy", nil))
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE /candidacy: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func fmtBools(bs []bool) string {
	var parts []string
	for _, b := range bs {
		if b {
			parts = append(parts, "true")
		} else {
			parts = append(parts, "false")
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// A change of candidacy is a change of own state on /events.
func TestCandidacyChangeIsAStateEvent(t *testing.T) {
	withdrawn := followerSt
	withdrawn.Candidate = false
	if !stateChanged(followerSt, withdrawn) {
		t.Error("no state event for a withdrawal")
	}
}
