package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/net/html"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/candidacy"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/history"
)

// drawn is the status page as a client without JavaScript reads it.
type drawn struct {
	text    map[string]string // each element's text, by id
	attr    map[string]map[string]string
	title   string
	queue   [][]string // the cells of each row of #queue-rows
	history [][]string // of #history-rows
}

func parsePage(t *testing.T, body string) drawn {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	d := drawn{text: map[string]string{}, attr: map[string]map[string]string{}}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attrs := map[string]string{}
			for _, a := range n.Attr {
				attrs[a.Key] = a.Val
			}
			if id := attrs["id"]; id != "" {
				d.text[id], d.attr[id] = textOf(n), attrs
			}
			switch {
			case n.Data == "title":
				d.title = textOf(n)
			case n.Data == "tr" && n.Parent != nil && attrOf(n.Parent, "id") == "queue-rows":
				d.queue = append(d.queue, cellsOf(n))
			case n.Data == "tr" && n.Parent != nil && attrOf(n.Parent, "id") == "history-rows":
				d.history = append(d.history, cellsOf(n))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return d
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

func attrOf(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func cellsOf(tr *html.Node) []string {
	var cells []string
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			cells = append(cells, textOf(c))
		}
	}
	return cells
}

// TestStatusPageDrawn: GET / carries the values of the moment, as curl or a
// browser without JavaScript sees them, in the words the script uses.
func TestStatusPageDrawn(t *testing.T) {
	tests := []struct {
		name      string
		st        election.Status
		parts     []election.Participant
		partsErr  error
		candidacy Candidacy
		proxy     *api.ProxyStatus
		text      map[string]string
		attr      map[string][2]string // id: attribute, value
		title     string
		queue     [][]string
		history   int // rows
	}{
		{
			name: "follower", st: followerSt, parts: []election.Participant{leading(*web1), *web2},
			text: map[string]string{
				"election": "/services/web (latch)", "leader-id": "web-1", "leader-token": "4294967302",
				"leader-advertise": "10.0.0.7:8080", "leader-node": web1.Node,
				"self-id": "web-2", "self-role": "follower", "self-reason": "following web-1", "self-state": "connected",
				"self-candidate": "yes", "self-session": "none yet", "lease-text": "none (not leading)",
				"queue-note":   "In queue order: the first participant leads. 2 participants.",
				"history-note": "Newest first, as this participant saw them.",
			},
			attr:  map[string][2]string{"leader-id": {"data-known", "yes"}, "self-role": {"data-leader", "no"}, "self-proxy": {"hidden", ""}, "conn": {"data-conn", "static"}},
			title: "electd: web-1 leads",
			queue: [][]string{
				{"1", "web-1", "10.0.0.7:8080", "leader", "4294967302", "0x1000a2b3c4d0001"},
				{"2", "web-2", "10.0.0.8:8080", "follower (this electd)", "4294967310", "0x1000a2b3c4d0002"},
			},
			history: 3,
		},
		{
			name: "leader with a proxy and a healthy application", st: withSession(leaderSt, web2.Session), parts: []election.Participant{leading(*web2)},
			candidacy: &fakeCandidacy{st: candidacy.State{Operator: true, Standing: true, App: candidacy.AppHealthy}},
			proxy:     &api.ProxyStatus{Mode: "http", Advertise: "10.0.0.8:9091", Route: "app", To: "127.0.0.1:8080", Held: 1, InFlight: 2, Connections: 3},
			text: map[string]string{
				"leader-id": "web-2", "self-role": "leader", "self-reason": "leader", "lease-text": "5.9 s left",
				"self-candidate": "yes (application healthy)", "self-session": "0x1000a2b3c4d0002",
				"self-proxy": "http at 10.0.0.8:9091, to its application at 127.0.0.1:8080; 1 held, 2 with the application, 3 connections",
				"queue-note": "In queue order: the first participant leads. 1 participant.",
			},
			attr:  map[string][2]string{"self-role": {"data-leader", "yes"}, "self-proxy": {"data-route", "app"}, "lease-bar": {"value", "5873"}},
			title: "electd: web-2 leads",
			queue: [][]string{{"1", "web-2", "10.0.0.8:8080", "leader (this electd)", "4294967310", "0x1000a2b3c4d0002"}},
		},
		{
			name: "no leader, ZooKeeper unreachable", st: noLeaderSt, partsErr: errors.New("zk: could not connect to a server"),
			text: map[string]string{
				"election": "/services/web (latch)", "leader-id": "none known", "leader-token": "–", "leader-advertise": "–",
				"self-state": "connecting", "self-reason": "not joined",
				"queue-note": "Cannot read the queue: cannot read the participants from ZooKeeper: zk: could not connect to a server",
			},
			attr:  map[string][2]string{"leader-id": {"data-known", "no"}},
			title: "electd: no leader known",
		},
		{
			name: "observer", st: notCandidate(followerSt), parts: []election.Participant{leading(*web1)},
			text:  map[string]string{"self-role": "observer (not a candidate)", "self-candidate": "no"},
			queue: [][]string{{"1", "web-1", "10.0.0.7:8080", "leader", "4294967302", "0x1000a2b3c4d0001"}},
			title: "electd: web-1 leads",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := electiontest.New(tt.st)
			f.SetParticipants(tt.parts)
			f.Fail(electiontest.Participants, tt.partsErr)
			opts := Options{Candidacy: tt.candidacy, History: &fakeHistory{entries: testHistory}}
			if tt.proxy != nil {
				opts.Proxy = func() *api.ProxyStatus { return tt.proxy }
			}
			if tt.history == 0 {
				opts.History = nil
			}
			resp, body := doGet(t, newTestRouter(f, opts), "/")
			if got, want := resp.StatusCode, http.StatusOK; got != want {
				t.Fatalf("status = %d, want %d", got, want)
			}
			if got, want := resp.Header.Get("Content-Length"), strconv.Itoa(len(body)); got != want {
				t.Errorf("Content-Length = %s, want %s", got, want)
			}
			p := parsePage(t, body)
			for id, want := range tt.text {
				if got := p.text[id]; got != want {
					t.Errorf("#%s = %q, want %q", id, got, want)
				}
			}
			for id, kv := range tt.attr {
				got, ok := p.attr[id][kv[0]]
				if !ok || got != kv[1] {
					t.Errorf("#%s %s = %q (set: %v), want %q", id, kv[0], got, ok, kv[1])
				}
			}
			if got, want := p.title, tt.title; got != want {
				t.Errorf("title = %q, want %q", got, want)
			}
			if !slices.EqualFunc(p.queue, tt.queue, slices.Equal) {
				t.Errorf("queue = %q, want %q", p.queue, tt.queue)
			}
			if got, want := len(p.history), tt.history; got != want {
				t.Errorf("history has %d rows, want %d", got, want)
			}
			if tt.history == 0 {
				return
			}
			// Newest first, as the script draws it.
			want := []string{"2026-11-22 10:00:09.000", "elected", "web-2", "4294967310", "leader", "connected"}
			if !slices.Equal(p.history[0], want) {
				t.Errorf("newest history row = %q, want %q", p.history[0], want)
			}
		})
	}
}

func withSession(st election.Status, id int64) election.Status {
	st.SessionID = id
	return st
}

func leading(p election.Participant) election.Participant {
	p.IsLeader = true
	return p
}

func notCandidate(st election.Status) election.Status {
	st.Candidate = false
	return st
}

// TestStatusPageEscapes: ids, addresses and reasons come from whoever may
// write the election path; the page shows them as text, whatever they hold.
func TestStatusPageEscapes(t *testing.T) {
	const hostile = `<script>x</script>`
	const hostileAttr = `"><img src=x onerror=alert(1)>`
	evil := &election.Participant{ID: hostile, Advertise: hostileAttr, Node: web1.Node, Session: web1.Session, FencingToken: 7}
	st := followerSt
	st.Leader, st.Reason = evil, "following "+hostile
	f := electiontest.New(st)
	f.SetParticipants([]election.Participant{*evil, *web2})
	hist := []history.Entry{{Seq: 1, Time: fixedNow, Kind: history.Leader, LeaderID: hostile, HasLeader: true, Reason: "following " + hostile,
		State: zksession.StateConnected, Candidate: true}}
	_, body := doGet(t, newTestRouter(f, Options{History: &fakeHistory{entries: hist}}), "/")

	for _, bad := range []string{"<script>x", "<img"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	mustContain(t, body, "&lt;script&gt;x&lt;/script&gt;")
	p := parsePage(t, body)
	for id, want := range map[string]string{"leader-id": hostile, "leader-advertise": hostileAttr, "self-reason": "following " + hostile} {
		if got := p.text[id]; got != want {
			t.Errorf("#%s = %q, want the text %q", id, got, want)
		}
	}
	if got, want := p.title, "electd: "+hostile+" leads"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if len(p.queue) != 2 || p.queue[0][1] != hostile || p.queue[0][2] != hostileAttr {
		t.Errorf("queue = %q, want the hostile id and address as text first", p.queue)
	}
	if len(p.history) != 1 || p.history[0][2] != hostile {
		t.Errorf("history = %q, want the hostile id as text", p.history)
	}
}

// TestStatusPageBounded: the page's size does not grow with the election
// nor with what participants wrote into their nodes: the first queueShown
// rows, each value cut at maxShownBytes.
func TestStatusPageBounded(t *testing.T) {
	long := strings.Repeat("<é", 500_000) // 1.5 MB, escaped to far more
	parts := make([]election.Participant, 10_000)
	for i := range parts {
		parts[i] = election.Participant{ID: long, Advertise: long, Node: web1.Node, Session: int64(i + 1), FencingToken: int64(i + 1)}
	}
	st := followerSt
	st.Leader, st.Reason = &parts[0], "following "+long
	f := electiontest.New(st)
	f.SetParticipants(parts)
	_, body := doGet(t, newTestRouter(f, Options{}), "/")
	if len(body) > 256<<10 {
		t.Errorf("the page has %d bytes; want at most 256 KiB", len(body))
	}
	p := parsePage(t, body)
	if got, want := len(p.queue), queueShown; got != want {
		t.Errorf("%d queue rows, want %d", got, want)
	}
	if got, want := p.text["queue-note"], "In queue order: the first participant leads. 10000 participants; the first 50 shown, all at /participants."; got != want {
		t.Errorf("queue note = %q, want %q", got, want)
	}
	if id := p.text["leader-id"]; len(id) > maxShownBytes+len("…") || !strings.HasSuffix(id, "…") || !strings.HasPrefix(long, strings.TrimSuffix(id, "…")) {
		t.Errorf("leader id drawn as %d bytes %q...; want the first %d bytes and …", len(id), id[:min(len(id), 20)], maxShownBytes)
	}
}

// TestStatusPageQueueRefused: past /participants' cap (shared with the
// page) the page is still drawn, saying why the queue is missing, and the
// refusal is counted as /participants' are.
func TestStatusPageQueueRefused(t *testing.T) {
	var refused []string
	p := statusPage{
		el: electiontest.New(followerSt), now: func() time.Time { return fixedNow }, log: slog.New(slog.DiscardHandler),
		readers: capped{s: newSlots(0), reason: "participants", what: "requests on /participants",
			held: func(*http.Request) func() { return func() {} }, refused: func(r string) { refused = append(refused, r) }},
	}
	h := chi.NewRouter()
	routeUI(h, p)
	resp, body := doGet(t, h, "/")
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status = %d, want %d", got, want)
	}
	d := parsePage(t, body)
	if got, want := d.text["queue-note"], "Cannot read the queue: too many requests on /participants (the limit is 0); retry later"; got != want {
		t.Errorf("queue note = %q, want %q", got, want)
	}
	if d.text["leader-id"] != "web-1" || len(d.queue) != 0 {
		t.Errorf("leader %q, %d queue rows; want web-1 from memory and no rows", d.text["leader-id"], len(d.queue))
	}
	if !slices.Equal(refused, []string{"participants"}) {
		t.Errorf("refusals counted: %q, want one at participants", refused)
	}
}
