package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/testkit"
)

// Issue 37, item 11: the election path was created anew, and one side of a
// forward still names the older incarnation. The leader's proxy bounces
// it; the sender holds the request, as for an older leadership, until the
// views agree, whichever side lags, and the request is answered by the
// leader. With a view that never moves, the hold time ends it (503), as
// for any bounce. The line saying so is logged once, not per request.
func TestHTTPForwardToAnotherIncarnationIsHeld(t *testing.T) {
	baseline(t)
	const newer = "/test@0x9"
	appA, appB := newApp(t, "a", nil), newApp(t, "b", nil)
	lb := newLead(Route{Leading: true, ID: "b", Token: 7, Election: newer})
	pb := startProxy(t, lb, appB.addr(), Config{})
	la := newLead(following("b", 7, pb.peerAddr()))
	logs := &testkit.Buffer{}
	pa := startProxy(t, la, appA.addr(), Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	c := newClient(t)
	answer := func() <-chan string {
		return async(func() string { code, body := post(t, c, pa.addr); return fmt.Sprint(code, " ", body) })
	}

	// a lags: it names the older incarnation.
	got := answer()
	waitFor(t, "a to hold the bounced request", func() bool { return pa.Held() == 1 })
	la.set(Route{ID: "b", Token: 7, Addr: pb.peerAddr(), Election: newer})
	if body := recv(t, got, "the answer"); body != "200 b 7" {
		t.Fatalf("once a's view moved: %q, want 200 from b", body)
	}

	// b lags: the leader names the older incarnation.
	lb.set(leading("b", 7))
	got = answer()
	waitFor(t, "a to hold the bounced request", func() bool { return pa.Held() == 1 })
	lb.set(Route{Leading: true, ID: "b", Token: 7, Election: newer})
	// a's own view did not move: it looks again at its next retry.
	waitFor(t, "a's retry to be due", func() bool { return pa.clock.PendingIn(probeFirst) })
	pa.clock.Advance(probeFirst)
	if body := recv(t, got, "the answer"); body != "200 b 7" {
		t.Fatalf("once b's view moved: %q, want 200 from b", body)
	}

	// A view that never moves: the hold time ends the wait.
	la.set(following("b", 7, pb.peerAddr()))
	got = answer()
	waitFor(t, "a to hold the bounced request", func() bool { return pa.Held() == 1 })
	pa.clock.Advance(DefaultHoldTime)
	if body := recv(t, got, "the answer"); !strings.HasPrefix(body, "503 ") || !strings.Contains(body, "another incarnation") {
		t.Fatalf("with a's view stuck: %q, want 503 naming the other incarnation", body)
	}
	if n := pa.rec.request(ResultMisdirected); n != 0 {
		t.Fatalf("%d requests answered as misdirected, want 0: the same election", n)
	}
	if n := len(appA.requests()); n != 0 {
		t.Fatalf("a's application got %d requests, want 0", n)
	}
	if n := len(appB.requests()); n != 2 {
		t.Fatalf("b's application got %d requests, want 2", n)
	}
	if n := strings.Count(logs.String(), "another incarnation"); n < 1 || n > 2 {
		t.Fatalf("the other incarnation logged %d times, want once (twice once the clock passed 10 s):\n%s", n, logs)
	}
}

// A forward to another election's proxy (another path) is a
// misconfiguration: 503 at once, and one line per 10 s with a count of
// the others, not one per request (5,462 lines in two minutes on a real
// node, issue 37).
func TestHTTPMisdirectedLogsOncePerInterval(t *testing.T) {
	baseline(t)
	pb := startProxy(t, newLead(Route{Leading: true, ID: "b", Token: 7, Election: "/other@0x2"}), newApp(t, "b", nil).addr(), Config{})
	logs := &testkit.Buffer{}
	pa := startProxy(t, newLead(following("b", 7, pb.peerAddr())), newApp(t, "a", nil).addr(),
		Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	c := newClient(t)
	for i := range 5 {
		if code, body := post(t, c, pa.addr); code != http.StatusServiceUnavailable || !strings.Contains(body, "another election") {
			t.Fatalf("request %d: %d %q, want 503 naming another election", i, code, body)
		}
	}
	if n := strings.Count(logs.String(), "another election"); n != 1 {
		t.Fatalf("%d lines for 5 misdirected requests, want 1:\n%s", n, logs)
	}
	pa.clock.Advance(logging.RequestLogEvery)
	if code, _ := post(t, c, pa.addr); code != http.StatusServiceUnavailable {
		t.Fatalf("%d, want 503", code)
	}
	if !strings.Contains(logs.String(), "suppressed=4") {
		t.Fatalf("the next line does not count the 4 not logged:\n%s", logs)
	}
	if n := pa.rec.request(ResultMisdirected); n != 6 {
		t.Fatalf("misdirected: %d, want 6", n)
	}
}
