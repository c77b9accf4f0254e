package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The leader hands requests to its application with its fencing token and
// id; whatever electd headers the client sent are gone (docs/DESIGN.md,
// "Forwarding": a client must not be able to forge them).
func TestHTTPLeaderHandsToApp(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("web-1", 42)), app.addr(), Config{})
	c := newClient(t)
	code, body, _ := get(t, c, tp.addr,
		HeaderFencingToken, "999", HeaderLeaderID, "evil", "Electd_Fencing_Token", "998",
		"ELECTD-hold", "5", "X-Forwarded-For", "10.9.9.9")
	if got, want := code, http.StatusOK; got != want {
		t.Fatalf("status %d, want %d (%s)", got, want, body)
	}
	if got, want := body, "a 42"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	s := app.requests()[0]
	if s.token != "42" || s.id != "web-1" || s.forged != "" || s.hop != "" || s.hold != "" {
		t.Fatalf("the application saw %+v: want token 42, id web-1, nothing forged", s)
	}
	if got, want := s.xff, "10.9.9.9, 127.0.0.1"; got != want {
		t.Fatalf("X-Forwarded-For %q, want %q", got, want)
	}
	waitFor(t, "the request counted ok", func() bool { return tp.rec.request(ResultOK) == 1 })
}

// A follower forwards to the leader's proxy, which hands the request to
// its application: the answer and the fencing token are the leader's.
func TestHTTPFollowerForwardsToLeader(t *testing.T) {
	baseline(t)
	appA, appB := newApp(t, "a", nil), newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), appA.addr(), Config{})
	c := newClient(t)
	for i := range 3 {
		code, body, _ := get(t, c, a.addr)
		if code != http.StatusOK || body != "b 7" {
			t.Fatalf("request %d: %d %q, want 200 from b with token 7", i, code, body)
		}
	}
	if n := len(appA.requests()); n != 0 {
		t.Fatalf("the follower's application got %d requests", n)
	}
	if got := a.rec.hops(1); got != 3 {
		t.Fatalf("forwards with hop 1: %d, want 3", got)
	}
}

// A proxy that no longer leads when a forwarded request arrives forwards
// it once more; one that gets a request forwarded twice never forwards it
// again, whatever it thinks: it bounces it, unprocessed, to the proxy
// before, which holds it and routes it again as its view moves on, or
// answers 503 after the hold time. Views that disagree in a ring cannot
// make a loop.
func TestHTTPForwardsAtMostTwice(t *testing.T) {
	baseline(t)
	apps := []*testApp{newApp(t, "a", nil), newApp(t, "b", nil), newApp(t, "c", nil), newApp(t, "d", nil)}
	pd := startProxy(t, newLead(leading("d", 11)), apps[3].addr(), Config{})
	lc := newLead(leading("c", 9))
	pc := startProxy(t, lc, apps[2].addr(), Config{})
	lb := newLead(following("c", 9, pc.peerAddr()))
	pb := startProxy(t, lb, apps[1].addr(), Config{})
	pa := startProxy(t, newLead(following("b", 8, pb.peerAddr())), apps[0].addr(), Config{})
	c := newClient(t)
	if code, body, _ := get(t, c, pa.addr); code != http.StatusOK || body != "c 9" {
		t.Fatalf("a -> b -> c: %d %q, want 200 from c", code, body)
	}
	if pa.rec.hops(1) != 1 || pb.rec.hops(2) != 1 {
		t.Fatalf("hops: a sent %d with hop 1, b %d with hop 2; want 1 and 1", pa.rec.hops(1), pb.rec.hops(2))
	}

	// Now c thinks a leads: a ring a -> b -> c -> a. c bounces; b holds
	// the request, and sends it to d once it learns that d leads.
	lc.set(following("a", 10, pa.peerAddr()))
	got := async(func() string { _, body := post(t, c, pa.addr); return body })
	waitFor(t, "c to bounce the twice-forwarded request", func() bool { return pc.rec.request(ResultBounced) >= 1 })
	lb.set(following("d", 11, pd.peerAddr()))
	if body := recv(t, got, "the answer"); body != "d 11" {
		t.Fatalf("answer %q, want d 11 once b's view moved on", body)
	}

	// With b's view stuck on c, the request waits at b for the hold time.
	lb.set(following("c", 9, pc.peerAddr()))
	code := async(func() int { code, _ := post(t, c, pa.addr); return code })
	waitFor(t, "b to hold the bounced request", func() bool { return pb.Held() == 1 })
	pb.clock.Advance(DefaultHoldTime)
	if got := recv(t, code, "the answer"); got != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 after the hold time", got)
	}
	if pc.rec.hops(1)+pc.rec.hops(2) != 0 {
		t.Fatal("c forwarded a request that had been forwarded twice")
	}
	for _, a := range apps[:3] {
		if n := len(a.requests()); a.name != "c" && n != 0 {
			t.Fatalf("%s's application got %d requests", a.name, n)
		}
	}
}

// While no leader is known a request waits; it goes to the leader as soon
// as one is known.
func TestHTTPHoldThenServe(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	lead := newLead(Route{})
	tp := startProxy(t, lead, app.addr(), Config{})
	c := newClient(t)
	got := async(func() string { _, body, _ := get(t, c, tp.addr); return body })
	waitFor(t, "the request to be held", func() bool { return tp.Held() == 1 })
	if st := tp.State(); st.Route != "hold" || st.Held != 1 {
		t.Fatalf("state %+v, want holding one request", st)
	}
	lead.set(leading("a", 3))
	if body := recv(t, got, "the answer"); body != "a 3" {
		t.Fatalf("body %q, want a 3", body)
	}
	waitFor(t, "the hold to end and be observed", func() bool { return tp.Held() == 0 && tp.rec.holds() == 1 })
}

// A request that finds no leader within the hold time gets a clean 503
// with Retry-After and a JSON error that says why; past MaxHeld, at once.
func TestHTTPHoldExpiresAndCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route Route
		why   string
	}{
		{"no leader", Route{}, "no leader is known"},
		{"leader without a proxy", following("java-1", 5, ""), `the leader "java-1" publishes no proxy address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseline(t)
			app := newApp(t, "a", nil)
			tp := startProxy(t, newLead(tc.route), app.addr(), Config{MaxHeld: 1, HoldTime: 3 * time.Second})
			c := newClient(t)
			type answer struct {
				code int
				body string
				h    http.Header
			}
			first := async(func() answer { code, body, h := get(t, c, tp.addr); return answer{code, body, h} })
			waitFor(t, "the first request to be held", func() bool { return tp.Held() == 1 })
			code, body, h := get(t, c, tp.addr)
			if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "too many requests wait") {
				t.Fatalf("past the cap: %d %q (Retry-After %q), want 503 at once", code, body, h.Get("Retry-After"))
			}
			tp.clock.Advance(3 * time.Second)
			a := recv(t, first, "the held request's answer")
			var e struct{ Error string }
			if err := json.Unmarshal([]byte(a.body), &e); err != nil {
				t.Fatalf("body %q is not a JSON error: %v", a.body, err)
			}
			if a.code != http.StatusServiceUnavailable || a.h.Get("Retry-After") != retryAfter || !strings.Contains(e.Error, tc.why) {
				t.Fatalf("after the hold: %d %q (Retry-After %q), want 503 saying %q", a.code, e.Error, a.h.Get("Retry-After"), tc.why)
			}
			waitFor(t, "one no_leader and one held_cap counted", func() bool {
				return tp.rec.request(ResultNoLeader) == 1 && tp.rec.request(ResultHeldCap) == 1
			})
		})
	}
}

// What a client sends that the proxy cannot take is a 4xx JSON error.
func TestHTTPBadInput(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	c := newClient(t)
	for _, tc := range []struct {
		name   string
		method string
		header []string
		code   int
	}{
		{"hop past the limit", "GET", []string{HeaderHop, "3"}, http.StatusBadRequest},
		{"hop not a number", "GET", []string{HeaderHop, "x"}, http.StatusBadRequest},
		{"negative hop", "GET", []string{HeaderHop, "-1"}, http.StatusBadRequest},
		{"two hops", "GET", []string{HeaderHop, "1", HeaderHop, "1"}, http.StatusBadRequest},
		{"hold not a number", "GET", []string{HeaderHold, "1e3"}, http.StatusBadRequest},
		{"hold past 32 bits", "GET", []string{HeaderHold, "4294967296"}, http.StatusBadRequest},
		{"connect", "CONNECT", nil, http.StatusMethodNotAllowed},
		{"hop 0 is a client's", "GET", []string{HeaderHop, "0"}, http.StatusOK},
		{"hop 2 on the leader", "GET", []string{HeaderHop, "2"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://"+tp.addr+"/", nil)
			if tc.method == "CONNECT" {
				req.URL.Opaque, req.Host = "", "example.com:443"
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Add(tc.header[i], tc.header[i+1])
			}
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if got := res.StatusCode; got != tc.code {
				t.Fatalf("status %d, want %d", got, tc.code)
			}
			if tc.code >= 400 {
				var e struct{ Error string }
				if err := json.NewDecoder(res.Body).Decode(&e); err != nil || e.Error == "" {
					t.Fatalf("not a JSON error: %v", err)
				}
			}
		})
	}
}

// The application refuses connections (a pod being deleted stops it
// before its electd): the leader's proxy asks the election to step down,
// once, holds the requests, and hands them to the new leader. None fails.
func TestHTTPAppRefusedStepsDown(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", nil)
	dead := newApp(t, "a", nil)
	deadAddr := dead.addr()
	dead.Close() // the port refuses connections now
	b := startProxy(t, newLead(leading("b", 8)), appB.addr(), Config{})
	la := newLead(leading("a", 7))
	a := startProxy(t, la, deadAddr, Config{})
	la.onStepDown(func() { la.set(following("b", 8, b.peerAddr())) })
	c := newClient(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if code, body, _ := get(t, c, a.addr); code != http.StatusOK || body != "b 8" {
				t.Errorf("request %d: %d %q, want 200 from the new leader", i, code, body)
			}
		})
	}
	wg.Wait()
	if got := la.stepDowns(); got != 1 {
		t.Fatalf("step-downs asked: %d, want 1", got)
	}
	if got := a.rec.stepDowns(); got != 1 {
		t.Fatalf("step-downs counted: %d, want 1", got)
	}
}
