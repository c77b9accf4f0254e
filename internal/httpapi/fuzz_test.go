package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election/electiontest"
)

// The fuzz targets feed what a client controls (the query, Accept and
// Authorization) to the whole router. Whatever comes in, the answer is a
// 2xx, 4xx or 5xx, every error is JSON {"error": "..."} and no handler
// panics or waits. Seeds: testdata/fuzz/<target>/. Run one with, e.g.,
//
//	go test -run '^$' -fuzz '^FuzzQuery$' -fuzztime 20s ./internal/httpapi

// checkAnswer fails unless resp/body is a well-formed answer of the API.
func checkAnswer(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	code := resp.StatusCode
	if code < 200 || code >= 600 || code/100 == 3 {
		t.Fatalf("status %d", code)
	}
	switch ct := resp.Header.Get("Content-Type"); ct {
	case "application/json":
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%d: body is not JSON: %q", code, body)
		}
		if code/100 == 4 {
			var e api.Error
			if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
				t.Fatalf("%d: not a JSON error: %q", code, body)
			}
		}
	case "text/plain; charset=utf-8":
		// /leader as text: one printable line.
		line, ok := strings.CutSuffix(body, "\n")
		if code/100 == 4 || !ok || strings.ContainsAny(line, "\n\r\x00\x1b") || !utf8.ValidString(line) {
			t.Fatalf("%d: bad text answer %q", code, body)
		}
	default:
		t.Fatalf("%d: Content-Type %q", code, ct)
	}
}

func fuzzRouter(opts Options) http.Handler {
	st := followerSt
	st.Leader = web1
	opts.MaxWait = time.Millisecond // a valid ?wait= must not stall the fuzzer
	return newTestRouter(electiontest.New(st), opts)
}

func FuzzQuery(f *testing.F) {
	h := fuzzRouter(Options{})
	f.Fuzz(func(t *testing.T, rawQuery string) {
		for _, path := range []string{"/leader", "/healthz/leader", "/readyz"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.URL.RawQuery = rawQuery
			resp, body := serve(t, h, req)
			checkAnswer(t, resp, body)
		}
	})
}

func FuzzAccept(f *testing.F) {
	h := fuzzRouter(Options{})
	f.Fuzz(func(t *testing.T, accept string) {
		resp, body := doGet(t, h, "/leader", "Accept", accept)
		checkAnswer(t, resp, body)
		if code := resp.StatusCode; code != http.StatusOK {
			t.Fatalf("Accept %q: %d, want 200 (an Accept header never makes /leader fail)", accept, code)
		}
	})
}

func FuzzAuthorization(f *testing.F) {
	const token = "s3cret"
	h := newTestRouter(electiontest.New(leaderSt), Options{AdminToken: token})
	f.Fuzz(func(t *testing.T, auth string) {
		req := httptest.NewRequest(http.MethodPost, "/leader/release", nil)
		req.Header.Set("Authorization", auth)
		resp, body := serve(t, h, req)
		checkAnswer(t, resp, body)
		scheme, got, _ := strings.Cut(auth, " ")
		valid := strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(got) == token
		switch code := resp.StatusCode; {
		case valid && code != http.StatusAccepted:
			t.Fatalf("%q: %d, want 202", auth, code)
		case !valid && code != http.StatusUnauthorized:
			t.Fatalf("%q: %d, want 401", auth, code)
		case !valid && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"):
			t.Fatalf("%q: 401 without a Bearer challenge", auth)
		}
	})
}
