package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/history"
)

// fakeHistory returns its entries as *history.Log does and records the n asked.
type fakeHistory struct {
	entries []history.Entry
	asked   []int
}

func (f *fakeHistory) Last(n int) []history.Entry {
	f.asked = append(f.asked, n)
	if n < 1 || n > len(f.entries) {
		n = len(f.entries)
	}
	return f.entries[len(f.entries)-n:]
}

var testHistory = []history.Entry{
	{Seq: 1, Time: fixedNow, Kind: history.State, Reason: "zookeeper connecting", State: zksession.StateConnecting, Candidate: true},
	{Seq: 2, Time: fixedNow.Add(1500 * time.Millisecond), Kind: history.Leader, LeaderID: "web-1", HasLeader: true,
		FencingToken: 4294967302, HasToken: true, Reason: "following web-1", State: zksession.StateConnected, Candidate: true, Session: 0x1000a2b3c4d0002},
	{Seq: 3, Time: fixedNow.Add(9 * time.Second), Kind: history.Elected, LeaderID: "web-2", HasLeader: true,
		FencingToken: 4294967310, HasToken: true, Reason: "leader", State: zksession.StateConnected, Candidate: true, Session: 0x1000a2b3c4d0002},
}

const (
	historyJSON1 = `{"seq":1,"time":"2026-11-22T10:00:00.000Z","kind":"state","leader":null,"fencing_token":null,"reason":"zookeeper connecting","state":"connecting","candidate":true,"session":"0x0"}`
	historyJSON2 = `{"seq":2,"time":"2026-11-22T10:00:01.500Z","kind":"leader","leader":"web-1","fencing_token":4294967302,"reason":"following web-1","state":"connected","candidate":true,"session":"0x1000a2b3c4d0002"}`
	historyJSON3 = `{"seq":3,"time":"2026-11-22T10:00:09.000Z","kind":"elected","leader":"web-2","fencing_token":4294967310,"reason":"leader","state":"connected","candidate":true,"session":"0x1000a2b3c4d0002"}`
)

func TestHistory(t *testing.T) {
	tests := []struct {
		name   string
		target string
		code   int
		asked  int // n passed to Last; -1: Last not called
		body   string
	}{
		{name: "all, newest last", target: "/history", code: 200, asked: 0,
			body: "[" + historyJSON1 + "," + historyJSON2 + "," + historyJSON3 + "]\n"},
		{name: "limit", target: "/history?limit=2", code: 200, asked: 2,
			body: "[" + historyJSON2 + "," + historyJSON3 + "]\n"},
		{name: "limit 1: the newest", target: "/history?limit=1", code: 200, asked: 1, body: "[" + historyJSON3 + "]\n"},
		{name: "limit above what is held", target: "/history?limit=1000", code: 200, asked: 1000,
			body: "[" + historyJSON1 + "," + historyJSON2 + "," + historyJSON3 + "]\n"},
		{name: "the first limit counts", target: "/history?limit=1&limit=x", code: 200, asked: 1, body: "[" + historyJSON3 + "]\n"},
		{name: "other parameters are ignored", target: "/history?format=text", code: 200, asked: 0,
			body: "[" + historyJSON1 + "," + historyJSON2 + "," + historyJSON3 + "]\n"},
		{name: "limit 0", target: "/history?limit=0", code: 400, asked: -1,
			body: `{"error":"limit: \"0\" is not a number of entries; use a positive integer"}` + "\n"},
		{name: "negative", target: "/history?limit=-1", code: 400, asked: -1},
		{name: "not a number", target: "/history?limit=ten", code: 400, asked: -1,
			body: `{"error":"limit: \"ten\" is not a number of entries; use a positive integer"}` + "\n"},
		{name: "empty", target: "/history?limit=", code: 400, asked: -1},
		{name: "fraction", target: "/history?limit=1.5", code: 400, asked: -1},
		{name: "overflow", target: "/history?limit=99999999999999999999", code: 400, asked: -1},
		{name: "control characters quoted", target: "/history?limit=%1b%5b2J", code: 400, asked: -1,
			body: `{"error":"limit: \"\\x1b[2J\" is not a number of entries; use a positive integer"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHistory{entries: testHistory}
			resp, body := doGet(t, newTestRouter(electiontest.New(followerSt), Options{History: h}), tt.target)
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control = %q, want %q", got, want)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body =\n%s\nwant\n%s", body, tt.body)
			}
			switch {
			case tt.asked < 0 && len(h.asked) != 0:
				t.Errorf("Last called with %v on a bad request", h.asked)
			case tt.asked >= 0 && (len(h.asked) != 1 || h.asked[0] != tt.asked):
				t.Errorf("Last called with %v, want [%d]", h.asked, tt.asked)
			}
		})
	}
}

func TestHistoryRoutes(t *testing.T) {
	tests := []struct {
		name    string
		history HistoryReader
		method  string
		code    int
		allow   string
		body    string
	}{
		{name: "not configured", method: "GET", code: 404, body: `{"error":"no such endpoint: /history"}` + "\n"},
		{name: "HEAD", history: &fakeHistory{entries: testHistory}, method: "HEAD", code: 200},
		{name: "POST", history: &fakeHistory{}, method: "POST", code: 405, allow: "GET, HEAD"},
		{name: "empty log", history: &fakeHistory{}, method: "GET", code: 200, body: "[]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := serve(t, newTestRouter(electiontest.New(followerSt), Options{History: tt.history}), newRequest(tt.method, "/history", ""))
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Allow"), tt.allow; got != want {
				t.Errorf("Allow = %q, want %q", got, want)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
		})
	}
}

// TestHistoryFromLog serves a real *history.Log fed the statuses of a
// handoff to this participant, as the daemon feeds it from Observe.
func TestHistoryFromLog(t *testing.T) {
	clk := clocktest.NewFake(fixedNow)
	l := history.New(history.DefaultSize, clk)
	for _, st := range []election.Status{noLeaderSt, followerSt, leaderSt} {
		clk.Advance(time.Second)
		l.Add(st)
	}
	resp, body := doGet(t, newTestRouter(electiontest.New(leaderSt), Options{History: l}), "/history?limit=2")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d (%s)", resp.StatusCode, body)
	}
	want := `[{"seq":4,"time":"2026-11-22T10:00:03.000Z","kind":"leader","leader":"web-2","fencing_token":4294967310,"reason":"leader","state":"connected","candidate":true,"session":"0x0"},` +
		`{"seq":5,"time":"2026-11-22T10:00:03.000Z","kind":"elected","leader":"web-2","fencing_token":4294967310,"reason":"leader","state":"connected","candidate":true,"session":"0x0"}]` + "\n"
	if body != want {
		t.Errorf("body =\n%s\nwant\n%s", body, want)
	}
}
