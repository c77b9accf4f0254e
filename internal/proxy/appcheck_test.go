package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkedApp is an application whose paths a test makes slow or hang:
// /slow waits for the test (or the client to go); while hung, every
// request does, the proxy's checks included. It counts the checks.
type checkedApp struct {
	*testApp
	hung, headHung atomic.Bool
	checks         atomic.Int32
	release        chan struct{}
	once           sync.Once
}

func newCheckedApp(t *testing.T) *checkedApp {
	a := &checkedApp{release: make(chan struct{})}
	t.Cleanup(func() { a.once.Do(func() { close(a.release) }) })
	a.testApp = newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		head := r.Method == http.MethodHead
		if head {
			a.checks.Add(1)
		}
		if r.URL.Path == "/slow" || a.hung.Load() || head && a.headHung.Load() {
			select {
			case <-a.release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, "ok")
	})
	return a
}

// checking reports whether checkApp runs.
func (tp *testProxy) checking() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.Proxy.checking
}

// calls sends n GETs of path at once and returns their statuses.
func calls(t *testing.T, c *http.Client, addr, path string, n int) []int {
	chs := make([]<-chan int, n)
	for i := range chs {
		chs[i] = async(func() int {
			res, err := c.Get("http://" + addr + path)
			if err != nil {
				t.Error(err)
				return 0
			}
			res.Body.Close()
			return res.StatusCode
		})
	}
	var codes []int
	for _, ch := range chs {
		codes = append(codes, recv(t, ch, "an answer"))
	}
	return codes
}

// failCheck lets the k-th check arrive at the application and time out.
func failCheck(t *testing.T, tp *testProxy, app *checkedApp, k int32) {
	t.Helper()
	waitFor(t, "a check at the application", func() bool { return app.checks.Load() >= k })
	waitFor(t, "the check's timer", func() bool { return tp.clock.PendingIn(50 * time.Millisecond) })
	tp.clock.Advance(50 * time.Millisecond)
}

// Answer timeouts are a property of requests: three clients of a slow path
// get their 504s, again and again, and leadership stays. Each round's
// timeouts start one check (HEAD / on a new connection), which the
// application answers.
func TestHTTPSlowClientsDoNotStepDown(t *testing.T) {
	baseline(t)
	app := newCheckedApp(t)
	lead := newLead(leading("a", 1))
	tp := startProxy(t, lead, app.addr(), Config{ResponseTimeout: 50 * time.Millisecond})
	c := newClient(t)
	for round := range int32(4) {
		for _, code := range calls(t, c, tp.addr, "/slow", 3) {
			if code != http.StatusGatewayTimeout {
				t.Fatalf("round %d: status %d, want 504", round, code)
			}
		}
		waitFor(t, "the round's check", func() bool { return app.checks.Load() == round+1 })
		waitFor(t, "the check's end", func() bool { return !tp.checking() })
		calls(t, c, tp.addr, "/slow", 1) // within a probe timeout of the last: no check
		tp.clock.Advance(50 * time.Millisecond)
	}
	if n := lead.stepDowns(); n != 0 || app.checks.Load() != 4 {
		t.Fatalf("%d step-downs after %d checks, want none after 4", n, app.checks.Load())
	}
	for _, s := range app.requests() {
		if s.token != "1" || s.id != "a" {
			t.Fatalf("a request with token %q and id %q, want the leader's", s.token, s.id)
		}
	}
}

// An application that takes connections and answers nothing hands
// leadership on: after an answer timeout, AppTimeoutStepDown checks in a
// row fail within their own timeout, with no answer between, and the
// proxy asks the election to step down, once. An answer from the
// application during the checks proves it alive.
func TestHTTPHungApplicationStepsDown(t *testing.T) {
	baseline(t)
	app := newCheckedApp(t)
	lead := newLead(leading("a", 1))
	tp := startProxy(t, lead, app.addr(), Config{ResponseTimeout: 50 * time.Millisecond, AppTimeoutStepDown: 3})
	c := newClient(t)

	// HEAD hangs, but a GET is answered during the second check.
	app.headHung.Store(true)
	calls(t, c, tp.addr, "/slow", 1)
	failCheck(t, tp, app, 1)
	waitFor(t, "the second check", func() bool { return app.checks.Load() == 2 })
	if code, _, _ := get(t, c, tp.addr); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	failCheck(t, tp, app, 2)
	waitFor(t, "the check's end", func() bool { return !tp.checking() })
	if n := lead.stepDowns(); n != 0 {
		t.Fatalf("%d step-downs with an answer during the checks", n)
	}

	// Now it answers nothing.
	app.hung.Store(true)
	if codes := calls(t, c, tp.addr, "/", 2); codes[0] != http.StatusGatewayTimeout {
		t.Fatalf("status %d, want 504", codes[0])
	}
	for k := int32(3); k <= 5; k++ {
		if n := lead.stepDowns(); n != 0 {
			t.Fatalf("%d step-downs before the third failed check", n)
		}
		failCheck(t, tp, app, k)
	}
	waitFor(t, "the step-down", func() bool { return lead.stepDowns() == 1 })
	waitFor(t, "the check's end", func() bool { return !tp.checking() })
	calls(t, c, tp.addr, "/", 1) // one step-down per leadership
	if n := lead.stepDowns(); n != 1 || tp.rec.stepDowns() != 1 || !strings.Contains(lead.steps[0], "nor 3 checks in a row (HEAD /") {
		t.Fatalf("%d step-downs (%q), want one, saying why", n, lead.steps)
	}
}

// The checks GET HealthURL when it is set; a check ends with the
// leadership it runs for.
func TestHTTPCheckHealthURL(t *testing.T) {
	baseline(t)
	var hang atomic.Bool
	gets := make(chan string, 10)
	stop := make(chan struct{})
	health := newApp(t, "h", func(w http.ResponseWriter, r *http.Request) {
		gets <- r.Method + " " + r.URL.Path + " " + r.Header.Get("User-Agent")
		if hang.Load() {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}
	})
	t.Cleanup(func() { close(stop) })
	app := newCheckedApp(t)
	lead := newLead(leading("a", 1))
	tp := startProxy(t, lead, app.addr(), Config{ResponseTimeout: 50 * time.Millisecond, AppTimeoutStepDown: 2,
		HealthURL: health.URL + "/healthz"})
	c := newClient(t)
	calls(t, c, tp.addr, "/slow", 1)
	if got := recv(t, gets, "a check"); got != "GET /healthz "+probeAgent {
		t.Fatalf("check %q", got)
	}
	waitFor(t, "the check's end", func() bool { return !tp.checking() })
	tp.clock.Advance(50 * time.Millisecond)

	hang.Store(true)
	calls(t, c, tp.addr, "/slow", 1)
	recv(t, gets, "a check")
	lead.set(leading("a", 2)) // another leadership: the check ends
	waitFor(t, "the check's end", func() bool { return !tp.checking() })
	calls(t, c, tp.addr, "/slow", 1)
	for i := range 2 {
		recv(t, gets, "a check")
		waitFor(t, "the check's timer", func() bool { return tp.clock.PendingIn(50 * time.Millisecond) })
		if n := lead.stepDowns(); n != 0 {
			t.Fatalf("%d step-downs after %d failed checks", n, i)
		}
		tp.clock.Advance(50 * time.Millisecond)
	}
	waitFor(t, "the step-down", func() bool { return lead.stepDowns() == 1 })
	if !strings.Contains(lead.steps[0], "GET "+health.URL) || app.checks.Load() != 0 {
		t.Fatalf("step-down %q after %d HEADs", lead.steps[0], app.checks.Load())
	}
}

// With AppProtocol h2c the check speaks HTTP/2 with prior knowledge, as
// the application's requests do.
func TestCheckerProbeH2C(t *testing.T) {
	protos := make(chan string, 1)
	app := newAppProto(t, "a", true, func(w http.ResponseWriter, r *http.Request) { protos <- r.Proto })
	c := newChecker(Config{App: app.addr(), AppProtocol: AppH2C, ResponseTimeout: time.Minute}.withDefaults())
	if err := c.probe(t.Context(), leading("a", 1)); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, protos, "the check"); p != "HTTP/2.0" {
		t.Fatalf("the check came as %s", p)
	}
}

// What passes a check: any answer to HEAD /; 200 to 399 from HealthURL.
func TestCheckerProbe(t *testing.T) {
	var status atomic.Int32
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	for _, tc := range []struct {
		health string
		status int
		pass   bool
	}{
		{"", http.StatusNotFound, true},
		{"", http.StatusInternalServerError, true},
		{"/healthz", http.StatusOK, true},
		{"/healthz", http.StatusFound, true},
		{"/healthz", http.StatusNotFound, false},
		{"/healthz", http.StatusServiceUnavailable, false},
	} {
		cfg := Config{App: app.addr(), ResponseTimeout: time.Minute}
		if tc.health != "" {
			cfg.HealthURL = app.URL + tc.health
		}
		c := newChecker(cfg.withDefaults())
		status.Store(int32(tc.status))
		if err := c.probe(t.Context(), leading("a", 1)); (err == nil) != tc.pass {
			t.Errorf("%q answering %d: %v, want pass %v", tc.health, tc.status, err, tc.pass)
		}
		if c.timeout != maxProbeTimeout {
			t.Errorf("probe timeout %v", c.timeout)
		}
	}
}
