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
// id; whatever electd headers the client sent are gone (docs/design/proxy-app.md,
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
	if s.token != "42" || s.id != "web-1" || s.forged != "" || len(s.electd) != 0 {
		t.Fatalf("the application saw %+v: want token 42, id web-1, nothing forged", s)
	}
	// The client is no trusted front proxy: its X-Forwarded-For goes.
	if got, want := s.xff, "127.0.0.1"; got != want {
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

// A forward names the election and the leadership it is meant for; a
// proxy that is not that leadership bounces it at once with its own view
// (421), and never forwards it again. The sender routes at once to a
// newer leadership the view names, holds on an older one until its own
// view moves (views that disagree cannot make a loop), and answers 503
// for another election's proxy. No application sees a bounced request.
func TestHTTPForwardIsBouncedWithView(t *testing.T) {
	baseline(t)
	apps := []*testApp{newApp(t, "a", nil), newApp(t, "b", nil), newApp(t, "c", nil), newApp(t, "d", nil)}
	pd := startProxy(t, newLead(leading("d", 11)), apps[3].addr(), Config{})
	pc := startProxy(t, newLead(leading("c", 9)), apps[2].addr(), Config{})
	lb := newLead(leading("b", 7))
	pb := startProxy(t, lb, apps[1].addr(), Config{})
	la := newLead(following("b", 7, pb.peerAddr()))
	pa := startProxy(t, la, apps[0].addr(), Config{})
	c := newClient(t)
	if code, body := post(t, c, pa.addr); code != http.StatusOK || body != "b 7" {
		t.Fatalf("a -> b: %d %q, want 200 from b", code, body)
	}

	// b hands over to c; a has not heard yet: b bounces with its view,
	// and a sends the POST to c at once.
	lb.set(following("c", 9, pc.peerAddr()))
	if code, body := post(t, c, pa.addr); code != http.StatusOK || body != "c 9" {
		t.Fatalf("a -> b (bounced) -> c: %d %q, want 200 from c", code, body)
	}
	if pb.rec.request(ResultBounced) != 1 || pa.rec.resends(ResendUnprocessed) != 1 {
		t.Fatalf("b bounced %d, a resent %d unprocessed; want 1 and 1", pb.rec.request(ResultBounced), pa.rec.resends(ResendUnprocessed))
	}

	// b's view is older than a's (b follows a leader that a knows was
	// succeeded): a holds the request until its own view moves on.
	lb.set(following("old", 5, pc.peerAddr()))
	la.set(following("b", 12, pb.peerAddr()))
	got := async(func() string { _, body := post(t, c, pa.addr); return body })
	waitFor(t, "a to hold the bounced request", func() bool { return pa.Held() == 1 })
	pd.lead.set(leading("d", 13))
	la.set(following("d", 13, pd.peerAddr()))
	if body := recv(t, got, "the answer"); body != "d 13" {
		t.Fatalf("answer %q, want d 13 once a's view moved on", body)
	}

	// With a's view stuck on b, the request waits for the hold time.
	la.set(following("b", 12, pb.peerAddr()))
	code := async(func() int { code, _ := post(t, c, pa.addr); return code })
	waitFor(t, "a to hold the bounced request", func() bool { return pa.Held() == 1 })
	pa.clock.Advance(DefaultHoldTime)
	if got := recv(t, code, "the answer"); got != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 after the hold time", got)
	}

	// A proxy of another election refuses the forward: a misconfiguration.
	la.set(Route{ID: "c", Token: 9, Addr: pc.peerAddr(), Election: "/other@0x2"})
	if code, body := post(t, c, pa.addr); code != http.StatusServiceUnavailable || !strings.Contains(body, "another election") {
		t.Fatalf("to another election: %d %q, want 503 naming the election", code, body)
	}
	if pa.rec.request(ResultMisdirected) != 1 {
		t.Fatalf("misdirected: %d, want 1", pa.rec.request(ResultMisdirected))
	}
	if pb.rec.hops(1)+pc.rec.hops(1)+pd.rec.hops(1) != 0 {
		t.Fatal("a proxy forwarded a forward")
	}
	for _, a := range apps {
		want := map[string]int{"a": 0, "b": 1, "c": 1, "d": 1}[a.name]
		if n := len(a.requests()); n != want {
			t.Fatalf("%s's application got %d requests, want %d", a.name, n, want)
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

// What a client sends that the proxy cannot take is a 4xx JSON error; a
// client's Electd-* headers are its own and go. The peer port takes only
// well-formed forwards.
func TestHTTPBadInput(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	c, pc := newClient(t), newPeerClient(t)
	fw := func(kv ...string) []string {
		h := map[string]string{HeaderElection: testElection, HeaderLeaderToken: "1", HeaderHold: "1000", HeaderClientProto: "1.1"}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		var out []string
		for k, v := range h {
			if v != "-" {
				out = append(out, k, v)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		peer   bool
		method string
		header []string
		code   int
	}{
		{"connect", false, "CONNECT", nil, http.StatusMethodNotAllowed},
		{"a client's forwarding headers", false, "GET", fw(), http.StatusOK},
		{"a well-formed forward", true, "GET", fw(), http.StatusOK},
		{"a forward without its election", true, "GET", fw(HeaderElection, "-"), http.StatusBadRequest},
		{"a forward without its leader", true, "GET", fw(HeaderLeaderToken, "-"), http.StatusBadRequest},
		{"a token that is no number", true, "GET", fw(HeaderLeaderToken, "x"), http.StatusBadRequest},
		{"a hold that is no number", true, "GET", fw(HeaderHold, "1e3"), http.StatusBadRequest},
		{"a hold past 32 bits", true, "GET", fw(HeaderHold, "4294967296"), http.StatusBadRequest},
		{"an unknown protocol", true, "GET", fw(HeaderClientProto, "3"), http.StatusBadRequest},
		{"another leadership's forward", true, "GET", fw(HeaderLeaderToken, "2"), http.StatusMisdirectedRequest},
		{"another election's forward", true, "GET", fw(HeaderElection, "/x@0x9"), http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, c := tp.addr, c
			if tc.peer {
				addr, c = tp.peerAddr(), pc
			}
			req, _ := http.NewRequest(tc.method, "http://"+addr+"/", nil)
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
	for _, s := range app.requests() {
		if len(s.electd) != 0 {
			t.Fatalf("the application saw %q", s.electd)
		}
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

// A view that names this proxy's own peer port as the leader's (a stale
// view of itself) bounces every forward back: each goes round again, and
// the hold time still bounds the request, which then gets its 503.
func TestHTTPBouncedRoundAndRoundEndsWithinHold(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	const hold = time.Second
	lead := newLead(Route{Election: testElection})
	tp := startProxy(t, lead, app.addr(), Config{HoldTime: hold})
	lead.set(following("a", 3, tp.peerAddr()))
	c := newClient(t)
	type answer struct {
		code int
		h    http.Header
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		start := tp.clock.Now()
		got := async(func() answer {
			req, _ := http.NewRequest(method, "http://"+tp.addr+"/x", strings.NewReader("payload"))
			res, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return answer{}
			}
			res.Body.Close()
			return answer{res.StatusCode, res.Header}
		})
		var a answer
	steps:
		for {
			select {
			case a = <-got:
				break steps
			case <-time.After(time.Millisecond):
				if tp.clock.Now().Sub(start) > 10*hold {
					t.Fatalf("%s: no answer 10 hold times on", method)
				}
				tp.clock.Advance(probeFirst)
			}
		}
		if took := tp.clock.Now().Sub(start); a.code != http.StatusServiceUnavailable || a.h.Get("Retry-After") == "" || took > hold+hold/2 {
			t.Fatalf("%s: %d (Retry-After %q) after %v of the proxy's clock, want 503 within the hold time (%v)", method, a.code,
				a.h.Get("Retry-After"), took, hold)
		}
	}
	if tp.rec.request(ResultBounced) == 0 {
		t.Fatal("no forward was bounced")
	}
	if n := len(app.requests()); n != 0 {
		t.Fatalf("the application got %d requests", n)
	}
}
