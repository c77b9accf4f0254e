package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/history"
)

// FuzzHistoryQuery: whatever the query, GET /history answers 200 with at
// most the entries held, or 400 with a JSON error; never a crash.
func FuzzHistoryQuery(f *testing.F) {
	for _, q := range []string{"", "limit=2", "limit=0", "limit=-1", "limit=1e3", "limit=%00", "limit=2&limit=x", "limit=+3", "limit=0x10", "limit"} {
		f.Add(q)
	}
	l := history.New(4, clocktest.NewFake(fixedNow))
	for _, st := range []election.Status{noLeaderSt, followerSt, leaderSt, followerSt} {
		l.Add(st)
	}
	held := len(l.Last(0))
	h := fuzzRouter(Options{History: l})
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req := httptest.NewRequest(http.MethodGet, "/history", nil)
		req.URL.RawQuery = rawQuery
		resp, body := serve(t, h, req)
		checkAnswer(t, resp, body)
		switch resp.StatusCode {
		case http.StatusOK:
			var entries []historyJSON
			if err := json.Unmarshal([]byte(body), &entries); err != nil || len(entries) < 1 || len(entries) > held {
				t.Fatalf("%q: %d entries (%v), want 1 to %d", rawQuery, len(entries), err, held)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("%q: status %d, want 200 or 400", rawQuery, resp.StatusCode)
		}
	})
}
