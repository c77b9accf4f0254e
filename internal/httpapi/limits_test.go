package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/testkit"
)

// heldCounter is an Options.Held and Options.Refused that counts.
type heldCounter struct {
	mu      sync.Mutex
	held    int
	refused map[string]int
}

func (h *heldCounter) hold(*http.Request) func() {
	h.mu.Lock()
	h.held++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.held--
		h.mu.Unlock()
	}
}

func (h *heldCounter) refuse(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refused == nil {
		h.refused = map[string]int{}
	}
	h.refused[reason]++
}

func (h *heldCounter) counts() (held int, refused map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.refused {
		out[k] = v
	}
	return h.held, out
}

// fetch sends one GET to srv on a new connection and returns status,
// Retry-After and body.
func fetch(t *testing.T, srv *httptest.Server, path string) (int, string, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// probesAnswer checks that the probe endpoints answer as they should for a
// follower, whatever the caps: none of them ever waits or counts.
func probesAnswer(t *testing.T, srv *httptest.Server) {
	t.Helper()
	for path, want := range map[string]int{"/healthz": 200, "/healthz/leader": 503, "/readyz": 200, "/metrics": 200} {
		code, _, body := fetch(t, srv, path)
		if code != want || strings.Contains(body, "too many") {
			t.Errorf("probe %s = %d %s, want %d", path, code, body, want)
		}
	}
}

func newCappedServer(t *testing.T, f *electiontest.Fake, opts Options) (*httptest.Server, *heldCounter) {
	t.Helper()
	hc := &heldCounter{}
	opts.Held, opts.Refused = hc.hold, hc.refuse
	opts.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	srv := httptest.NewServer(newTestRouter(f, opts))
	t.Cleanup(srv.Close)
	return srv, hc
}

func checkRefusal(t *testing.T, code int, retry, body, what string) {
	t.Helper()
	if code != http.StatusServiceUnavailable || retry != "5" {
		t.Errorf("past the cap: %d, Retry-After %q; want 503 and 5", code, retry)
	}
	var e api.Error
	if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.Contains(e.Error, what) {
		t.Errorf("past the cap: body %q, want a JSON error naming %s", body, what)
	}
}

func TestEventsCapped(t *testing.T) {
	f := electiontest.New(followerSt)
	srv, hc := newCappedServer(t, f, Options{MaxStreams: 2, KeepAlive: time.Hour})
	var streams []*http.Response
	for i := range 2 {
		resp, err := srv.Client().Get(srv.URL + "/events")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the cap: %v %v", resp, err)
		}
		testkit.For(t, 10*time.Second, "the stream to observe", func() bool { return f.Observers() == i+1 })
		streams = append(streams, resp)
	}
	code, retry, body := fetch(t, srv, "/events")
	checkRefusal(t, code, retry, body, "/events clients (the limit is 2)")
	if code, _, _ := fetch(t, srv, "/events"); code != http.StatusServiceUnavailable {
		t.Errorf("second refusal: %d", code)
	}
	resp, _ := serve(t, newTestRouter(f, Options{MaxStreams: 1}), newRequest(http.MethodHead, "/events", ""))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /events = %d: it holds no stream and must not be capped", resp.StatusCode)
	}
	probesAnswer(t, srv)
	if held, refused := hc.counts(); held != 2 || refused["streams"] != 2 {
		t.Errorf("held %d, refused %v; want 2 held streams and 2 refusals", held, refused)
	}

	// A stream that ends gives its slot back.
	streams[0].Body.Close()
	testkit.For(t, 10*time.Second, "the slot of a closed stream to come back", func() bool {
		resp, err := srv.Client().Get(srv.URL + "/events")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	streams[1].Body.Close()
}

func TestWaitersCapped(t *testing.T) {
	f := electiontest.New(followerSt)
	awaits := contexts(f, "await")
	srv, hc := newCappedServer(t, f, Options{MaxWaiters: 1})
	first := make(chan int, 1)
	go func() {
		code, _, _ := fetch(t, srv, "/healthz/leader?wait=5m")
		first <- code
	}()
	select {
	case <-awaits:
	case <-time.After(10 * time.Second):
		t.Fatal("the first waiter never waited")
	}
	code, retry, body := fetch(t, srv, "/healthz/leader?wait=1m")
	checkRefusal(t, code, retry, body, "waiters on /healthz/leader (the limit is 1)")
	// A wait of 0 does not wait, so it is no waiter.
	if code, _, body := fetch(t, srv, "/healthz/leader?wait=0s"); code != 503 || strings.Contains(body, "too many") {
		t.Errorf("wait=0s at the cap = %d %s, want the plain 503 answer", code, body)
	}
	probesAnswer(t, srv)
	if held, refused := hc.counts(); held != 1 || refused["waiters"] != 1 {
		t.Errorf("held %d, refused %v; want 1 held waiter and 1 refusal", held, refused)
	}

	leading := leaderSt
	f.Set(leading)
	select {
	case code := <-first:
		if code != http.StatusOK {
			t.Errorf("the waiter answered %d once leading, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not answer once leading")
	}
	if held, _ := hc.counts(); held != 0 {
		t.Errorf("held %d after the wait ended, want 0", held)
	}
}

func TestSlots(t *testing.T) {
	s := newSlots(2)
	if !s.take() || !s.take() {
		t.Fatal("two slots of two were not taken")
	}
	if s.take() {
		t.Fatal("a third slot of two was taken")
	}
	s.give()
	if !s.take() {
		t.Fatal("a slot given back could not be taken again")
	}
}

// A request that announces a body and never sends it is answered at once
// (no endpoint takes a body) and its connection closed, and a graceful
// shutdown does not wait for it. These are the exact requests that held a
// goroutine for minutes and made SIGTERM run out its shutdown_timeout.
func TestBodyThatNeverArrives(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newTestRouter(electiontest.New(leaderSt), Options{AdminToken: "t"}), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	stalled := []string{
		"GET /healthz HTTP/1.1\r\nHost: electd\r\nContent-Length: 100\r\n\r\n",
		"POST /leader/release HTTP/1.1\r\nHost: electd\r\nAuthorization: Bearer t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"GET /nope HTTP/1.1\r\nHost: electd\r\nContent-Length: 5\r\n\r\n",
	}
	for _, req := range stalled {
		name := req[:strings.IndexByte(req, '\r')]
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close() // held open by the client: the server must let go
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close || !strings.Contains(string(b), `"error":"`) {
			t.Errorf("%s: %d close=%v %s; want 413, Connection: close, a JSON error", name, resp.StatusCode, resp.Close, b)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the server did not close the connection: %v", name, err)
		}
	}
	// An empty body is no body.
	if resp, _ := serve(t, srv.Handler, httptest.NewRequest(http.MethodPost, "/leader/release", strings.NewReader(""))); resp.StatusCode == http.StatusRequestEntityTooLarge {
		t.Error("POST with Content-Length: 0 refused")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (a stalled request body held it)", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
}
