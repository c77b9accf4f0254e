package httpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/metrics"

	"github.com/electd/electd/internal/testkit"
)

// stubElection is a follower that knows its leader and never changes: the
// election side of the in-process server tests, which are about the
// server's wiring (the binary tests run the real election).
type stubElection struct{ st election.Status }

func newStubElection() *stubElection {
	return &stubElection{st: election.Status{
		Mode: election.ModeLatch, Path: "/stub", ID: "me", Node: "_c_b-latch-0000000001",
		State: zksession.StateConnected, Joined: true, Reason: "following other",
		Leader: &election.Participant{ID: "other", Node: "_c_a-latch-0000000000"},
	}}
}

func (s *stubElection) Status() election.Status { return s.st }

func (s *stubElection) Observe(ctx context.Context) <-chan election.Status {
	ch := make(chan election.Status, 1)
	ch <- s.st
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch
}

func (s *stubElection) Await(ctx context.Context) (<-chan struct{}, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *stubElection) Release(context.Context) error { return election.ErrNotLeader }

func (s *stubElection) Participants(context.Context) ([]election.Participant, error) {
	return nil, nil
}

// caps are the HTTP server's caps (http.max_*).
type caps struct{ MaxConnections, MaxStreams, MaxWaiters int }

// defaultOptions are the caps' defaults (internal/config).
var defaultOptions = caps{MaxConnections: 256, MaxStreams: 64, MaxWaiters: 64}

// apiUnderTest is the daemon's HTTP server, wired as the daemon wires it,
// on a stub election.
type apiUnderTest struct {
	addr string
	srv  *Server
	reg  *prometheus.Registry
}

func startAPI(t *testing.T, opts caps, certs *config.KeyPair) *apiUnderTest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &apiUnderTest{addr: ln.Addr().String(), reg: prometheus.NewRegistry()}
	base, cancel := context.WithCancel(context.Background())
	c := Config{
		MaxConnections: opts.MaxConnections, Evicted: metrics.NewServer(a.reg, "/stub").ConnectionEvicted,
		Logger: slog.New(slog.DiscardHandler),
	}
	if certs != nil {
		c.GetCertificate = certs.GetCertificate
	}
	router := httpapi.NewRouter(newStubElection(), httpapi.Options{
		Metrics:    promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}),
		MaxStreams: opts.MaxStreams, MaxWaiters: opts.MaxWaiters,
		Held: Held, Refused: metrics.NewAPI(a.reg, "/stub").RequestRefused,
	})
	a.srv = New(base, ln, router, c)
	served := make(chan error, 1)
	go func() { served <- a.srv.Serve() }()
	t.Cleanup(func() {
		cancel()
		a.srv.Stop(context.Background())
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return a
}

// probe GETs path on a new connection, as the kubelet does.
func (a *apiUnderTest) probe(path string) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + a.addr + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// checkProbes asserts what each probe of a follower answers.
func (a *apiUnderTest) checkProbes(t *testing.T, when string) {
	t.Helper()
	for _, p := range []struct {
		path string
		code int
	}{{"/healthz", 200}, {"/healthz/leader", 503}, {"/readyz", 200}, {"/metrics", 200}} {
		if code, err := a.probe(p.path); code != p.code {
			t.Errorf("%s: probe %s = %d %v, want %d", when, p.path, code, err, p.code)
		}
	}
}

// held opens a request that the server holds: its connection and reader.
func (a *apiUnderTest) held(t *testing.T, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: electd\r\n\r\n", path)
	return c, bufio.NewReader(c)
}

// stillOpen reports whether the server kept c open: no EOF within a moment
// (a closed connection shows EOF at once, so this cannot miss one often).
func stillOpen(c net.Conn, r *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	for {
		if _, err := r.ReadByte(); err != nil {
			return errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

func dialMany(t *testing.T, addr string, n int, send string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if send != "" {
			_, _ = io.WriteString(c, send) // the server may have evicted it already
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

// TestAPIServerKeepsProbesAndHeldRequestsThroughAFlood: with every cap
// reached (streams, waiters) and ten times max_connections of slowloris
// and idle connections, the probes answer as they should, the streams
// and waiters admitted are never evicted, open connections stay at the cap,
// and a request past a cap gets 503 with Retry-After.
func TestAPIServerKeepsProbesAndHeldRequestsThroughAFlood(t *testing.T) {
	opts := caps{MaxConnections: 24, MaxStreams: 2, MaxWaiters: 2}
	a := startAPI(t, opts, nil)
	a.checkProbes(t, "before the flood")

	type heldReq struct {
		c net.Conn
		r *bufio.Reader
	}
	var helds []heldReq
	for _, path := range []string{"/events", "/events", "/healthz/leader?wait=5m", "/healthz/leader?wait=5m"} {
		c, r := a.held(t, path)
		helds = append(helds, heldReq{c, r})
	}
	// Both streams answered their headers; both waiters wait.
	for _, h := range helds[:2] {
		_ = h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(h.r, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		_ = h.c.SetReadDeadline(time.Time{})
	}
	testkit.For(t, 10*time.Second, "both streams and both waiters held", func() bool {
		return a.heldConns() == 4
	})

	dialMany(t, a.addr, 10*opts.MaxConnections, "GET /healthz HTTP/1.1\r\nHost: electd\r\nX-Slow: ")
	dialMany(t, a.addr, 10*opts.MaxConnections, "")
	a.checkProbes(t, "during the flood")
	if got := int(a.srv.limit.Open()); got > opts.MaxConnections {
		t.Errorf("%d connections open, cap %d", got, opts.MaxConnections)
	}
	for i, h := range helds {
		if !stillOpen(h.c, h.r) {
			t.Errorf("held request %d was evicted", i)
		}
	}
	if got := evictions(t, a); got < float64(20*opts.MaxConnections-opts.MaxConnections) {
		t.Errorf("evictions = %v, want every flood connection past the cap", got)
	}

	for _, path := range []string{"/events", "/healthz/leader?wait=1m"} {
		c, r := a.held(t, path)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s past its cap: %v %v, want 503 with Retry-After", path, resp, err)
		}
	}
}

// TestAPIServerHeaderLimit: a request with more header bytes than the
// limit is answered 431 and closed, whatever it would have sent.
func TestAPIServerHeaderLimit(t *testing.T) {
	a := startAPI(t, defaultOptions, nil)
	c, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: electd\r\nX-Huge: ")
		_, _ = io.WriteString(c, strings.Repeat("a", 1<<20)) // fails once the server closes
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("1 MiB of headers: %v %v, want 431", resp, err)
	}
}

// heldConns counts the connections the limit holds (never evicts).
func (a *apiUnderTest) heldConns() int {
	l := a.srv.limit
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.open
	for _, p := range l.peers {
		n -= p.evictable()
	}
	return n
}

// evictions reads electd_http_connections_evicted_total.
func evictions(t *testing.T, a *apiUnderTest) float64 {
	t.Helper()
	mfs, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "electd_http_connections_evicted_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no electd_http_connections_evicted_total")
	return 0
}
