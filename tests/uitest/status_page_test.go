package uitest

import (
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

var screenshotTo = flag.String("screenshot-to", "",
	"also write the status page's screenshot to this file (make screenshot: docs/status-page.png)")

// Participants whose id and advertise address are HTML: the page must show
// them as text. Each would set window.__pwned if it ever ran.
const (
	hostileID        = `<img src=x onerror="window.__pwned=true">`
	hostileAdvertise = `<script>window.__pwned=true</script>:8080`
	adminToken       = "uitest-admin-token"
)

// TestStatusPageInBrowser drives GET / in headless Chromium against a real
// election: real ZooKeeper, three real electd processes, then one with a hostile
// id. The page, served by a follower, must show the leader, its fencing token
// and the queue in order, with JavaScript and in a tab without it (the
// server draws the values), show the hostile id and address as text in
// both, and, with JavaScript, without a reload, show a handoff (POST /leader/release on the leader) with
// its new leader, token, queue order, lease and history entry; then a
// handoff to the hostile participant, whose id becomes the leader's.
func TestStatusPageInBrowser(t *testing.T) {
	tab := Browser(t)
	zk := zktest.Start(t, zktest.Options{})
	const path = "/services/web"
	// Joined one after the other, so the queue is in this order.
	web1 := startElectd(t, zk, path, "web-1", "web-1", "10.0.0.1:8080")
	web2 := startElectd(t, zk, path, "web-2", "web-2", "10.0.0.2:8080")
	web3 := startElectd(t, zk, path, "web-3", "web-3", "10.0.0.3:8080")

	// /readyz (startElectd) passes once a leader is known; web-1 leads
	// from its first renewal, a moment later.
	var v1 electdtest.LeaderView
	var err error
	wait.For(t, 10*time.Second, "web-1 leading (it joined first)", func() bool {
		v1, err = view(t, web1)
		return err == nil && v1.LeaderID() == "web-1" && v1.Self.IsLeader
	})
	token1 := v1.Leader.FencingToken

	// The page of a follower: it shows the election as web-2 sees it.
	base := "http://" + web2.Addr
	if _, err := chromedp.Call(tab.Ctx, cdppage.AddScriptToEvaluateOnNewDocument,
		cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: watchViolationsJS}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("navigating to %s: %v", base, err)
	}

	before := waitPage(t, tab, 20*time.Second, "the page to show web-1 leading and the queue", func(p page) string {
		switch {
		case p.Conn != "live":
			return "the /events stream is not open"
		case p.Leader != "web-1" || p.Token != strconv.FormatInt(token1, 10):
			return "leader web-1 with its token"
		case !slices.Equal(p.queueIDs(), []string{"web-1", "web-2", "web-3"}):
			return "the queue web-1, web-2, web-3"
		case p.Reason != "following web-1":
			return "web-2's reason"
		case len(p.History) == 0:
			return "a history"
		}
		return ""
	})
	checkFollower(t, before, path)
	// The same page without JavaScript: the server drew the values.
	noScript := tab.NoScriptTab(t)
	staticFollower(t, noScript, base+"/", token1)
	if before.Title != "electd: web-1 leads" {
		t.Errorf("title = %q, want electd: web-1 leads", before.Title)
	}

	// Mark the document: a reload would lose the mark.
	if _, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[chromedp.Void](`window.__uitestMarker = "no reload"`)); err != nil {
		t.Fatal(err)
	}

	// The handoff: web-1 releases, web-2 (next in line) leads, web-1 joins
	// the back of the queue.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	status, body, err := web1.Do(ctx, http.MethodPost, "/leader/release", adminToken)
	cancel()
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("POST /leader/release on web-1: %d %s %v; want 202", status, body, err)
	}
	var token2 int64
	after := waitPage(t, tab, 20*time.Second, "the page to show the handoff to web-2 without a reload", func(p page) string {
		v2, err := view(t, web2)
		if err != nil || v2.LeaderID() != "web-2" {
			return "web-2's /leader to name web-2"
		}
		token2 = v2.Leader.FencingToken
		switch {
		case p.Leader != "web-2" || p.Token != strconv.FormatInt(token2, 10):
			return "leader web-2 with its token"
		case !slices.Equal(p.queueIDs(), []string{"web-2", "web-3", "web-1"}):
			return "the queue web-2, web-3, web-1"
		case p.newestSeq() <= before.newestSeq() || p.History[0].Kind != "elected":
			return "a new history entry, newest first: elected"
		case p.Role != "leader" || p.Lease <= 0:
			return "web-2 leading, with a lease"
		}
		return ""
	})
	if after.Marker != "no reload" {
		t.Errorf("the page was reloaded (marker %q)", after.Marker)
	}
	if token2 <= token1 {
		t.Errorf("the new fencing token %d does not exceed the old %d", token2, token1)
	}
	checkLeader(t, tab, after, token2)
	// The picture of an ordinary election of three, for the README.
	saveScreenshot(t, tab)

	// A hostile id and address join, next in line once web-3 and web-1
	// have left: shown as text, never run.
	for _, p := range []*electdtest.Proc{web3, web1} {
		if err := p.Stop(15 * time.Second); err != nil {
			t.Fatalf("stopping %s: %v", p.Name, err)
		}
	}
	startElectd(t, zk, path, "hostile", hostileID, hostileAdvertise)
	joined := waitPage(t, tab, 20*time.Second, "the page to show the hostile participant queued", func(p page) string {
		if !slices.Equal(p.queueIDs(), []string{"web-2", hostileID}) {
			return "the queue web-2, hostile"
		}
		return ""
	})
	checkHostile(t, joined)

	// Another handoff, to the hostile participant: its id is now shown as
	// the leader, in web-2's revoked entry and in its reason, as text.
	ctx, cancel = context.WithTimeout(t.Context(), 15*time.Second)
	status, body, err = web2.Do(ctx, http.MethodPost, "/leader/release", adminToken)
	cancel()
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("POST /leader/release on web-2: %d %s %v; want 202", status, body, err)
	}
	hostile := waitPage(t, tab, 20*time.Second, "the page to show the hostile participant leading", func(p page) string {
		switch {
		case p.Leader != hostileID || p.Advertise != hostileAdvertise:
			return "the hostile id and advertise as the leader's, as text"
		case !slices.Equal(p.queueIDs(), []string{hostileID, "web-2"}):
			return "the queue hostile, web-2"
		case p.History[0].Kind != "leader" || p.History[0].Cells[2] != hostileID:
			return "the new leader's history entry, newest first"
		case revokedSince(p, after.newestSeq()) == nil:
			return "web-2's revoked entry"
		case p.Role != "follower" || p.Reason != "following "+hostileID || p.Lease != 0:
			return "web-2 following the hostile participant, without a lease"
		}
		return ""
	})
	if got := revokedSince(hostile, after.newestSeq()).Cells[3]; got != strconv.FormatInt(token2, 10) {
		t.Errorf("web-2's revoked entry shows token %s, want the one it lost, %d", got, token2)
	}
	if want := "electd: " + hostileID + " leads"; hostile.Title != want {
		t.Errorf("title = %q, want %q", hostile.Title, want)
	}
	checkHostile(t, hostile)
	staticHostile(t, noScript, base+"/")
	if hostile.Marker != "no reload" {
		t.Errorf("the page was reloaded (marker %q)", hostile.Marker)
	}
	checkRequests(t, tab, base, time.Since(began))
	if ex := tab.Exceptions(); len(ex) > 0 {
		t.Errorf("the page threw: %q", ex)
	}
}

// checkFollower checks what the page of web-2 shows while web-1 leads.
func checkFollower(t *testing.T, p page, path string) {
	t.Helper()
	if want := path + " (latch)"; p.Election != want {
		t.Errorf("election = %q, want %q", p.Election, want)
	}
	if p.Advertise != "10.0.0.1:8080" {
		t.Errorf("leader's advertise = %q, want 10.0.0.1:8080", p.Advertise)
	}
	if p.SelfID != "web-2" || p.Role != "follower" || p.State != "connected" {
		t.Errorf("self = %q %q %q, want web-2 follower connected", p.SelfID, p.Role, p.State)
	}
	if p.Lease != 0 || p.LeaseText != "none (not leading)" {
		t.Errorf("a follower's lease = %v %q, want 0 and none", p.Lease, p.LeaseText)
	}
	if !strings.HasPrefix(p.Session, "0x") || p.Session == "0x0" {
		t.Errorf("session = %q, want web-2's session id", p.Session)
	}
	leaderRow := p.Queue[0]
	if leaderRow[3] != "leader" || p.Queue[1][3] != "follower (this electd)" {
		t.Errorf("roles = %q, %q; want leader, follower (this electd)", leaderRow[3], p.Queue[1][3])
	}
}

// startElectd starts a participant on path and waits until it is ready.
func startElectd(t *testing.T, zk *zktest.Ensemble, path, name, id, advertise string, args ...string) *electdtest.Proc {
	t.Helper()
	p := electdtest.Start(t, electdtest.Spec{
		Name: name,
		Config: &electdtest.Config{
			ID: id, Advertise: advertise, Servers: zk.Servers(), Path: path,
			AdminToken: adminToken, LogLevel: "debug",
		},
		Args: args,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		t.Fatal(err)
	}
	return p
}

// revokedSince returns the first revoked entry newer than seq, or nil.
func revokedSince(p page, seq int) *historyRow {
	for i, h := range p.History {
		if h.Seq > seq && h.Kind == "revoked" {
			return &p.History[i]
		}
	}
	return nil
}

// view reads p's GET /leader.
func view(t *testing.T, p *electdtest.Proc) (electdtest.LeaderView, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return p.View(ctx)
}

// checkLeader checks what the page of web-2 shows once it leads, and that
// its lease bar drains between two readings of /healthz/leader.
func checkLeader(t *testing.T, tab *Tab, p page, token int64) {
	t.Helper()
	if p.Reason != "leader" || p.Queue[0][3] != "leader (this electd)" {
		t.Errorf("reason %q, first row's role %q; want leader, leader (this electd)", p.Reason, p.Queue[0][3])
	}
	if p.Lease > p.LeaseMax || !strings.HasSuffix(p.LeaseText, " s left") {
		t.Errorf("lease bar %v of %v, %q; want at most full, with seconds", p.Lease, p.LeaseMax, p.LeaseText)
	}
	e := p.History[0]
	if e.Cells[2] != "web-2" || e.Cells[3] != strconv.FormatInt(token, 10) || e.Cells[4] != "leader" {
		t.Errorf("newest history entry %q; want elected, web-2, token %d, reason leader", e.Cells, token)
	}
	// Drains: a later reading is lower, unless a renewal refilled it
	// meanwhile, so wait for one pair of readings that shows it.
	prev := p.Lease
	waitPage(t, tab, 20*time.Second, "the lease bar to drain", func(p page) string {
		drained := p.Lease < prev && p.Lease > 0
		prev = p.Lease
		if !drained {
			return "a reading of the bar below the one before"
		}
		return ""
	})
}

// checkHostile checks that the hostile id and address are shown as text,
// that no element came of them, and that no handler of theirs ran.
func checkHostile(t *testing.T, p page) {
	t.Helper()
	var row []string
	for _, r := range p.Queue {
		if r[1] == hostileID {
			row = r
		}
	}
	switch {
	case row == nil:
		t.Errorf("no queue row shows the id %q as text; queue %q", hostileID, p.Queue)
	case row[2] != hostileAdvertise:
		t.Errorf("the hostile participant's advertise shows as %q, want the text %q", row[2], hostileAdvertise)
	}
	if p.Imgs != 0 || p.Pwned {
		t.Errorf("the hostile id became HTML: %d <img> elements, handler ran: %v", p.Imgs, p.Pwned)
	}
	if len(p.Violations) != 0 {
		t.Errorf("the Content-Security-Policy blocked %q: the page tried to load or run something not its own", p.Violations)
	}
}

// checkRequests checks the page's requests against the API's bounds
// (docs/design/http-contract.md, "HTTP API"): GET only, its own origin only, one /events
// stream, and /participants re-read at most once a second.
func checkRequests(t *testing.T, tab *Tab, base string, took time.Duration) {
	t.Helper()
	streams, reads := 0, 0
	for _, r := range tab.Requests() {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL, base+"/") {
			t.Errorf("the page sent %s %s; want GET on %s only", r.Method, r.URL, base)
		}
		switch strings.TrimPrefix(r.URL, base) {
		case "/events":
			streams++
		case "/participants":
			reads++
		}
	}
	if streams != 1 {
		t.Errorf("the page opened /events %d times; want one stream", streams)
	}
	if most := int(took/time.Second) + 2; reads > most || reads < 3 {
		t.Errorf("the page read /participants %d times in %v; want at least 3 (before and after each handoff), at most %d (once a second)",
			reads, took.Round(time.Millisecond), most)
	}
}

// saveScreenshot saves the page as PNG among the test's artifacts (kept
// with go test -artifacts), and at -screenshot-to when given.
func saveScreenshot(t *testing.T, tab *Tab) {
	t.Helper()
	png, err := chromedp.Run(tab.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join(t.ArtifactDir(), "status-page.png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
	if *screenshotTo != "" {
		if err := os.WriteFile(*screenshotTo, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot also written to %s", *screenshotTo)
	}
}
