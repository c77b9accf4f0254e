package ledger

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/tests/harness/proxykit"
)

// Target is a proxy a Load sends to, by participant name.
type Target struct{ Name, Addr string }

// Request is what one request got.
type Request struct {
	ID         string
	Via        string // the participant whose proxy it was sent to
	Method     string
	Start, End time.Time
	Code       int
	Body       string
	Header     http.Header // the answer's
	Err        error       // no answer
}

// Latency is how long the answer took.
func (r Request) Latency() time.Duration { return r.End.Sub(r.Start) }

func (r Request) String() string {
	at := fmt.Sprintf("%s %s via %s at %s", r.Method, r.ID, r.Via, r.Start.Format("15:04:05.000"))
	if r.Err != nil {
		return fmt.Sprintf("%s: %v after %v", at, r.Err, r.Latency().Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %d %q (Retry-After %q) after %v", at, r.Code, strings.TrimSpace(r.Body),
		r.Header.Get("Retry-After"), r.Latency().Round(time.Millisecond))
}

// Do sends req (with its X-Request-Id set to id) through client and keeps
// what it got: the status, the first 4 KiB of the body, the headers.
func Do(client *http.Client, via, id string, req *http.Request) Request {
	req.Header.Set("X-Request-Id", id)
	r := Request{ID: id, Via: via, Method: req.Method, Start: time.Now()}
	res, err := client.Do(req)
	if err == nil {
		b, rerr := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		r.Code, r.Body, r.Header, err = res.StatusCode, string(b), res.Header, rerr
	}
	r.Err, r.End = err, time.Now()
	return r
}

// LoadConfig paces a Load.
type LoadConfig struct {
	// Rate is the requests sent a second, in all, whether or not those
	// before were answered: a stalled destination does not slow the load.
	Rate int
	// PostEvery makes every PostEvery-th request a POST with a small body
	// (to /w); the others are GETs (to /r). 0: GETs only.
	PostEvery int
	// Query is added to every request's URL, e.g. "sleep=20".
	Query string
	// Timeout is the client's patience with one request: longer than any
	// bound the test asserts, so that a request past its bound is seen to
	// be, and short enough to end the test.
	Timeout time.Duration
	// Prefix starts every request id (Prefix-n).
	Prefix string
	// NewConnEach sends every request on a connection of its own, so that
	// requests wait in the accept queue while the proxy is down. Default:
	// kept-alive connections, as Client.
	NewConnEach bool
}

// Client is an HTTP/1.1 client for the proxies: timeout bounds each
// request, kept-alive connections close after proxykit.ClientIdle.
func Client(timeout time.Duration) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32, IdleConnTimeout: proxykit.ClientIdle}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// Load sends requests through the proxies of its targets, in turn, until
// Stop.
type Load struct {
	cfg    LoadConfig
	client *http.Client
	stop   chan struct{}
	once   sync.Once
	sender sync.WaitGroup // the pacing goroutine
	inner  sync.WaitGroup // requests in flight

	mu      sync.Mutex
	targets []Target
	results []Request

	sent atomic.Int64 // requests started, answered or not
}

// StartLoad starts sending to targets.
func StartLoad(cfg LoadConfig, targets ...Target) *Load {
	l := &Load{cfg: cfg, client: Client(cfg.Timeout), stop: make(chan struct{}), targets: targets}
	if cfg.NewConnEach {
		l.client.Transport = &http.Transport{Proxy: nil, DisableKeepAlives: true}
	}
	l.sender.Go(l.pace)
	return l
}

func (l *Load) pace() {
	tick := time.NewTicker(time.Second / time.Duration(l.cfg.Rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		post := l.cfg.PostEvery > 0 && n%l.cfg.PostEvery == 0
		l.mu.Lock()
		var t Target
		if len(l.targets) > 0 {
			// In turn, one step further after every PostEvery: the POSTs
			// too go to every target, whatever their number.
			skip := 0
			if l.cfg.PostEvery > 0 {
				skip = n / l.cfg.PostEvery
			}
			t = l.targets[(n+skip)%len(l.targets)]
		}
		l.mu.Unlock()
		if t.Addr == "" {
			continue
		}
		id := fmt.Sprintf("%s-%d", l.cfg.Prefix, n)
		l.sent.Add(1)
		l.inner.Go(func() {
			r := Do(l.client, t.Name, id, l.request(t.Addr, post))
			l.mu.Lock()
			l.results = append(l.results, r)
			l.mu.Unlock()
		})
	}
}

func (l *Load) request(addr string, post bool) *http.Request {
	q := ""
	if l.cfg.Query != "" {
		q = "?" + l.cfg.Query
	}
	if post {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/w"+q, strings.NewReader("payload"))
		req.Header.Set("Content-Type", "text/plain")
		return req
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/r"+q, nil)
	return req
}

// Targets replaces the targets (a participant taken out, or back).
func (l *Load) Targets(ts ...Target) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets = ts
}

// Count is how many requests were answered (or given up) so far.
func (l *Load) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// Sent is how many requests were sent so far, answered or not.
func (l *Load) Sent() int { return int(l.sent.Load()) }

// Results is a copy of the requests answered (or given up) so far.
func (l *Load) Results() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.results)
}

// Stop stops sending, waits for the requests in flight (each within the
// Timeout) and returns every result. It may be called again (deferred, for
// a test that fails before it stops the load).
func (l *Load) Stop() []Request {
	l.once.Do(func() { close(l.stop) })
	l.sender.Wait()
	l.inner.Wait()
	l.client.CloseIdleConnections()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}
