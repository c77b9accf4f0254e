package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

// patience bounds every wait of these tests: far above what anything takes
// with both cores busy, so that it only ever ends a test that hangs.
const patience = 10 * time.Second

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// baseline checks, when the test ends, that the goroutines it started are
// gone: after any fault the proxy returns to its idle footprint. Call it
// first, so that its check runs after every other cleanup.
func baseline(t *testing.T) {
	n := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(patience)
		for runtime.NumGoroutine() > n {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines left, %d before the test:\n%s", runtime.NumGoroutine(), n, buf)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// testProxy is a Proxy serving on loopback with a fake clock.
type testProxy struct {
	*Proxy
	addr  string // clients'
	peer  string // peers'
	lead  *fakeLead
	rec   *fakeRec
	clock *clocktest.Fake
	stop  func()
}

// startProxy serves a Proxy for app until the test ends. Fields of cfg
// left zero get the defaults; the clock is fake unless cfg has one.
func startProxy(t testing.TB, lead *fakeLead, app string, cfg Config) *testProxy {
	t.Helper()
	tp := &testProxy{lead: lead, rec: newRec()}
	cfg.Listen, cfg.PeerListen, cfg.App, cfg.Recorder = "127.0.0.1:0", "127.0.0.1:0", app, tp.rec
	if cfg.PeerKey == "" {
		cfg.PeerKey = testPeerKey
	}
	if cfg.Clock == nil {
		tp.clock = clocktest.NewFake(time.Unix(1000, 0))
		cfg.Clock = tp.clock
	}
	p, err := New(lead, cfg)
	if err != nil {
		t.Fatal(err)
	}
	client, peer, err := cfg.Listeners()
	if err != nil {
		t.Fatal(err)
	}
	tp.Proxy, tp.addr, tp.peer = p, client.Addr().String(), peer.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, client, peer) }()
	tp.stop = sync.OnceFunc(func() {
		cancel()
		// Serve's drain runs on the fake clock: move it along, slowly
		// enough that what the test does meanwhile (route a held request,
		// write a 503) happens first.
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(patience)
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
				return
			case <-tick.C:
				if tp.clock != nil {
					tp.clock.Advance(p.cfg.DrainTimeout) // let the drain end
				}
			case <-deadline:
				t.Error("Serve did not return after its context ended")
				return
			}
		}
	})
	t.Cleanup(tp.stop)
	return tp
}

// peerAddr is where peers forward to.
func (tp *testProxy) peerAddr() string { return tp.peer }

// seen is what an application saw of one request.
type seen struct {
	token, id, forged, xff, reqID, expect string
	electd                                []string // Electd-* headers other than the fencing ones
}

// testApp is an HTTP application behind a proxy; by default it answers
// "<name> <token>" and records the electd headers it was given.
type testApp struct {
	*httptest.Server
	name string
	mu   sync.Mutex
	saw  []seen
}

func newApp(t testing.TB, name string, h http.HandlerFunc) *testApp {
	t.Helper()
	return newAppProto(t, name, false, h)
}

// newAppProto is newApp, serving HTTP/2 with prior knowledge too when h2c
// is true.
func newAppProto(t testing.TB, name string, h2c bool, h http.HandlerFunc) *testApp {
	t.Helper()
	a := &testApp{name: name}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		s := seen{
			token: r.Header.Get(HeaderFencingToken), id: r.Header.Get(HeaderLeaderID),
			forged: strings.Join(r.Header.Values("Electd_fencing_token"), ","), xff: r.Header.Get("X-Forwarded-For"),
			reqID: r.Header.Get("X-Request-Id"), expect: r.Header.Get("Expect"),
		}
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "electd") && k != HeaderFencingToken && k != HeaderLeaderID {
				s.electd = append(s.electd, k)
			}
		}
		a.saw = append(a.saw, s)
		a.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		fmt.Fprintf(w, "%s %s", name, r.Header.Get(HeaderFencingToken))
	}))
	if h2c {
		var protocols http.Protocols
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		a.Config.Protocols = &protocols
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *testApp) addr() string { return strings.TrimPrefix(a.URL, "http://") }

func (a *testApp) requests() []seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seen(nil), a.saw...)
}

// newClient is an HTTP client of its own, whose idle connections go with
// the test.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: patience}
}

// get sends a GET through addr and returns the status and body.
func get(t *testing.T, c *http.Client, addr string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("reading the answer: %v", err)
	}
	return res.StatusCode, string(b), res.Header
}

// async runs f in a goroutine and returns a channel with its result.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// recv waits for a value from ch, failing the test after patience.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// closed checks that the connection under br is closed (a read deadline
// set by the caller passing is not a close).
func closed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	_, err := br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open (%v)", err)
	}
}
