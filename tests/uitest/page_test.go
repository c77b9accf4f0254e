package uitest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/electd/electd/tests/harness/wait"
)

// page is what the status page shows, read from its DOM in one evaluation.
type page struct {
	Election   string       `json:"election"`
	Conn       string       `json:"conn"`
	Leader     string       `json:"leader"`
	Token      string       `json:"token"`
	Advertise  string       `json:"advertise"`
	SelfID     string       `json:"selfID"`
	Role       string       `json:"role"`
	Reason     string       `json:"reason"`
	State      string       `json:"state"`
	Session    string       `json:"session"`
	Lease      float64      `json:"lease"`
	LeaseMax   float64      `json:"leaseMax"`
	LeaseText  string       `json:"leaseText"`
	Queue      [][]string   `json:"queue"`   // cells of each row: #, id, advertise, role, token, session
	History    []historyRow `json:"history"` // newest first
	Imgs       int          `json:"imgs"`    // <img> elements anywhere in the document
	Title      string       `json:"title"`   // document.title
	Marker     string       `json:"marker"`  // set by the test: survives only without a reload
	Pwned      bool         `json:"pwned"`   // set by the hostile id's handler, if it ever ran
	Violations []string     `json:"violations"`
}

// historyRow is one row of the page's history table.
type historyRow struct {
	Seq   int      `json:"seq"`
	Kind  string   `json:"kind"`
	Cells []string `json:"cells"` // time, kind, leader, token, reason, state
}

// readPageJS builds a page from the DOM.
const readPageJS = `(() => {
  const text = (id) => document.getElementById(id).textContent;
  const cells = (tr) => Array.from(tr.cells).map((c) => c.textContent);
  const bar = document.getElementById("lease-bar");
  return {
    election: text("election"),
    conn: document.getElementById("conn").dataset.conn,
    leader: text("leader-id"),
    token: text("leader-token"),
    advertise: text("leader-advertise"),
    selfID: text("self-id"),
    role: text("self-role"),
    reason: text("self-reason"),
    state: text("self-state"),
    session: text("self-session"),
    lease: bar.value,
    leaseMax: bar.max,
    leaseText: text("lease-text"),
    queue: Array.from(document.querySelectorAll("#queue-rows tr")).map(cells),
    history: Array.from(document.querySelectorAll("#history-rows tr")).map((tr) =>
      ({seq: Number(tr.dataset.seq), kind: tr.dataset.kind, cells: cells(tr)})),
    imgs: document.getElementsByTagName("img").length,
    title: document.title,
    marker: String(window.__uitestMarker || ""),
    pwned: window.__pwned === true,
    violations: (window.__uitestViolations || []).slice(),
  };
})()`

// watchViolationsJS runs in every document the tab loads, before the
// page's own script: it records what the Content-Security-Policy blocked.
const watchViolationsJS = `window.__uitestViolations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__uitestViolations.push(e.violatedDirective + " " + e.blockedURI));`

func readPage(ctx context.Context) (page, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[page](readPageJS))
}

// waitPage reads the page until ok accepts it, failing t with the last
// reading and ok's complaint when the deadline passes first. ok returns ""
// when satisfied, else what is still missing.
func waitPage(t *testing.T, tab *Tab, timeout time.Duration, what string, ok func(page) string) page {
	t.Helper()
	read := func() (page, error) {
		ctx, cancel := context.WithTimeout(tab.Ctx, 5*time.Second)
		defer cancel()
		return readPage(ctx)
	}
	return pollPage(t, timeout, 50*time.Millisecond, what, read, ok)
}

// pollPage reads the page every so often until ok accepts it, failing t
// with the last reading and ok's complaint when timeout passes first.
func pollPage(t *testing.T, timeout, every time.Duration, what string, read func() (page, error), ok func(page) string) page {
	t.Helper()
	var last page
	err := wait.Until(context.Background(), timeout, every, func() error {
		p, err := read()
		if err != nil {
			return fmt.Errorf("reading the page: %w", err)
		}
		last = p
		if missing := ok(p); missing != "" {
			return errors.New(missing)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waited for %s: %v\nthe page showed: %s", what, err, describe(last))
	}
	return last
}

// describe renders p for a failure message.
func describe(p page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "election %q, conn %q, leader %q token %q advertise %q\n", p.Election, p.Conn, p.Leader, p.Token, p.Advertise)
	fmt.Fprintf(&b, "  self %q role %q reason %q state %q session %q lease %.0f/%.0f %q\n",
		p.SelfID, p.Role, p.Reason, p.State, p.Session, p.Lease, p.LeaseMax, p.LeaseText)
	for _, r := range p.Queue {
		fmt.Fprintf(&b, "  queue %q\n", r)
	}
	for _, h := range p.History {
		fmt.Fprintf(&b, "  history %d %q\n", h.Seq, h.Cells)
	}
	fmt.Fprintf(&b, "  imgs %d title %q marker %q pwned %v violations %q", p.Imgs, p.Title, p.Marker, p.Pwned, p.Violations)
	return b.String()
}

// queueIDs is the id column of the queue.
func (p page) queueIDs() []string {
	var ids []string
	for _, r := range p.Queue {
		if len(r) > 1 {
			ids = append(ids, r[1])
		}
	}
	return ids
}

// newestSeq is the highest history seq shown, 0 with none.
func (p page) newestSeq() int {
	n := 0
	for _, h := range p.History {
		n = max(n, h.Seq)
	}
	return n
}
