package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
)

func TestLeader(t *testing.T) {
	const followerJSON = `{"leader":{"id":"web-1","advertise":"10.0.0.7:8080","node":"_c_a-latch-0000000003","session":"0x1000a2b3c4d0001","fencing_token":4294967302},` +
		`"self":{"id":"web-2","is_leader":false,"state":"connected","observed_at":"2026-11-22T10:00:00Z","candidate":true},"mode":"latch","path":"/services/web"}` + "\n"
	const noLeaderJSON = `{"leader":null,"self":{"id":"web-2","is_leader":false,"state":"connecting","observed_at":"2026-11-22T10:00:00Z","candidate":true},"mode":"latch","path":"/services/web"}` + "\n"
	negSession := followerSt
	negSession.Leader = &election.Participant{ID: "x", Session: -0x7f00000000000001}
	negSession.ObservedAt = time.Date(2026, 1, 2, 4, 5, 6, 7, time.FixedZone("CET", 3600))

	tests := []struct {
		name     string
		st       election.Status
		target   string
		accept   string
		code     int
		ctype    string
		body     string
		contains string
	}{
		{name: "json follower", st: followerSt, target: "/leader", code: 200, ctype: "application/json", body: followerJSON},
		{name: "json leader self", st: leaderSt, target: "/leader", code: 200, ctype: "application/json", contains: `"self":{"id":"web-2","is_leader":true`},
		{name: "json no leader is 503 with null", st: noLeaderSt, target: "/leader", code: 503, ctype: "application/json", body: noLeaderJSON},
		{name: "session is unsigned hex, observed_at UTC", st: negSession, target: "/leader", code: 200, ctype: "application/json", contains: `"session":"0x80ffffffffffffff"`},
		{name: "observed_at in UTC", st: negSession, target: "/leader", code: 200, ctype: "application/json", contains: `"observed_at":"2026-01-02T03:05:06Z"`},
		{name: "format=text", st: followerSt, target: "/leader?format=text", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "format=text no leader", st: noLeaderSt, target: "/leader?format=text", code: 503, ctype: "text/plain; charset=utf-8", body: "\n"},
		{name: "format=json", st: followerSt, target: "/leader?format=json", accept: "text/plain", code: 200, ctype: "application/json", body: followerJSON},
		{name: "unknown format", st: followerSt, target: "/leader?format=xml", code: 400, ctype: "application/json", contains: `{"error":"format: \"xml\" is not a format`},
		{name: "empty format", st: followerSt, target: "/leader?format=", code: 400, ctype: "application/json", contains: `"error":"format:`},
		{name: "accept text/plain", st: followerSt, target: "/leader", accept: "text/plain", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "accept text/*", st: followerSt, target: "/leader", accept: "text/*", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "accept json preferred", st: followerSt, target: "/leader", accept: "text/plain;q=0.5, application/json", code: 200, ctype: "application/json", body: followerJSON},
		{name: "accept tie is json", st: followerSt, target: "/leader", accept: "text/plain, application/json", code: 200, ctype: "application/json", body: followerJSON},
		{name: "accept text preferred", st: followerSt, target: "/leader", accept: "application/json;q=0.2, text/plain", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "accept */*", st: followerSt, target: "/leader", accept: "*/*", code: 200, ctype: "application/json", body: followerJSON},
		{name: "accept browser", st: followerSt, target: "/leader", accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", code: 200, ctype: "application/json", body: followerJSON},
		// Where goautoneg would answer wrongly (see wantsText).
		{name: "accept */* beats text at q=0.1", st: followerSt, target: "/leader", accept: "*/*, text/plain;q=0.1", code: 200, ctype: "application/json", body: followerJSON},
		{name: "accept text/* at 0.5 beats json at 0.4", st: followerSt, target: "/leader", accept: "text/*;q=0.5, application/json;q=0.4", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "accept is case-insensitive", st: followerSt, target: "/leader", accept: "TEXT/Plain", code: 200, ctype: "text/plain; charset=utf-8", body: "web-1\n"},
		{name: "accept tie in either order is json", st: followerSt, target: "/leader", accept: "application/json, text/plain", code: 200, ctype: "application/json", body: followerJSON},
		{name: "accept text q=0", st: followerSt, target: "/leader", accept: "text/plain;q=0", code: 200, ctype: "application/json", body: followerJSON},
		{name: "unknown parameter ignored", st: followerSt, target: "/leader?pretty=1", code: 200, ctype: "application/json", body: followerJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestRouter(electiontest.New(tt.st), Options{})
			resp, body := doGet(t, h, tt.target, "Accept", tt.accept)
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Content-Type"), tt.ctype; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control = %q, want %q", got, want)
			}
			if tt.body != "" {
				if got, want := body, tt.body; got != want {
					t.Errorf("body =\n%s\nwant\n%s", got, want)
				}
			}
			mustContain(t, body, tt.contains)
		})
	}
}

// With a forwarding proxy, /leader adds the leader's proxy address and this
// participant's proxy state, and /events carries both; without one, neither
// appears (the fields of /leader are otherwise unchanged).
func TestLeaderProxy(t *testing.T) {
	st := followerSt
	l := *st.Leader
	l.Proxy = "10.0.0.7:4041"
	st.Leader = &l
	px := func() *api.ProxyStatus {
		return &api.ProxyStatus{Mode: "http", Advertise: "10.0.0.8:4041", Route: "leader", To: "10.0.0.7:4041", Held: 2, Connections: 5}
	}
	_, body := doGet(t, newTestRouter(electiontest.New(st), Options{Proxy: px}), "/leader")
	mustContain(t, body, `"fencing_token":4294967302,"proxy":"10.0.0.7:4041"}`)
	mustContain(t, body, `"proxy":{"mode":"http","advertise":"10.0.0.8:4041","route":"leader","to":"10.0.0.7:4041","held":2,"connections":5,"in_flight":0,"peer_connections":0,"buffered_bytes":0}`)
	for _, opts := range []Options{{}, {Proxy: func() *api.ProxyStatus { return nil }}} {
		_, body = doGet(t, newTestRouter(electiontest.New(followerSt), opts), "/leader")
		if strings.Contains(body, "proxy") {
			t.Errorf("without a proxy, /leader says %s", body)
		}
	}
}

func TestLeaderObservedAtDefaultsToNow(t *testing.T) {
	st := followerSt
	st.ObservedAt = time.Time{}
	now := time.Date(2027, 3, 4, 5, 6, 7, 0, time.UTC)
	h := NewRouter(electiontest.New(st), Options{Clock: clocktest.NewFake(now)})
	_, body := doGet(t, h, "/leader")
	mustContain(t, body, `"observed_at":"2027-03-04T05:06:07Z"`)
}

func TestLeaderHead(t *testing.T) {
	h := newTestRouter(electiontest.New(followerSt), Options{})
	resp, _ := serve(t, h, newRequest(http.MethodHead, "/leader", ""))
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Errorf("HEAD /leader = %d, want %d", got, want)
	}
}

func TestAcceptQ(t *testing.T) {
	tests := []struct {
		accept string
		want   float64
	}{
		{"text/plain", 1},
		{"TEXT/Plain; q=0.3", 0.3},
		{"text/*;q=0.4, text/plain;q=0.2", 0.2},
		{"*/*;q=0.1, text/*;q=0.6", 0.6},
		{"application/json", -1},
		{"text/plain;q=abc", 0},
		{"text/plain;q=2", 0},
		{"text/plain;charset=utf-8", 1},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			if got, want := acceptQ(tt.accept, "text", "plain"), tt.want; got != want {
				t.Errorf("acceptQ(%q) = %v, want %v", tt.accept, got, want)
			}
		})
	}
}

// A leader id comes from another participant's node: in text it must never
// reach a script raw when it holds control characters.
func TestLeaderTextEscapesForeignIDs(t *testing.T) {
	tests := []struct {
		id, want string
	}{
		{"web-1", "web-1\n"},
		{"pod with spaces", "pod with spaces\n"},
		{"żółw-1", "żółw-1\n"},
		{"evil\nleader", `"evil\nleader"` + "\n"},
		{"\x1b[2Jcleared", `"\x1b[2Jcleared"` + "\n"},
		{"nul\x00byte", `"nul\x00byte"` + "\n"},
		{"bell\a", `"bell\a"` + "\n"},
		{"del\x7f", `"del\x7f"` + "\n"},
		{"c1\u0085", `"c1\u0085"` + "\n"},
		{"line\u2028sep", `"line\u2028sep"` + "\n"},
		{"bad\xffutf8", `"bad\xffutf8"` + "\n"},
		{`back\slash`, `back\slash` + "\n"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.id), func(t *testing.T) {
			st := followerSt
			st.Leader = &election.Participant{ID: tt.id, Node: "_c_x-latch-0000000001"}
			_, body := doGet(t, newTestRouter(electiontest.New(st), Options{}), "/leader?format=text")
			if got, want := body, tt.want; got != want {
				t.Errorf("body = %q, want %q", got, want)
			}
			if strings.Count(body, "\n") != 1 {
				t.Errorf("body %q is not exactly one line", body)
			}
		})
	}
}
