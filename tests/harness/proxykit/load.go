package proxykit

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ClientIdle is how long the loads' clients (Load, tests/harness/ledger's) keep an
// idle connection: shorter than the proxies' proxy.idle_timeout (2 s in the
// tests, 1 s or more in the bench) by
// more than a loaded machine may keep a process from running, as a
// keep-alive client's must be. Otherwise a request sent on a connection the
// proxy closes as idle at that instant reaches no handler at all, and the
// client sees its connection end (EOF or a reset; net/http sends again a
// GET, not a POST): HTTP/1.1's keep-alive race, which the chaos suite met
// with 500 ms against 1 s while three ZooKeeper JVMs started on two cores
// (no proxy logged those requests, no application got them).
const ClientIdle = 200 * time.Millisecond

// Pool is the proxies clients send to, by participant name, as a Service's
// endpoints are: a participant is taken out before it stops, and Remove
// waits until no client is sending to it any more.
type Pool struct {
	mu    sync.Mutex
	names []string
	addrs map[string]string
	using map[string]int
	idle  *sync.Cond
}

// NewPool returns an empty Pool.
func NewPool() *Pool {
	p := &Pool{addrs: map[string]string{}, using: map[string]int{}}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// Add puts the proxy at addr in the pool as name (again).
func (p *Pool) Add(name, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.addrs[name]; !ok {
		p.names = append(p.names, name)
	}
	p.addrs[name] = addr
}

// Remove takes name out and waits until no request is being sent to it.
func (p *Pool) Remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names = slices.DeleteFunc(p.names, func(n string) bool { return n == name })
	delete(p.addrs, name)
	for p.using[name] > 0 {
		p.idle.Wait()
	}
}

// Drop takes name out at once, whatever is being sent to it (a crash).
func (p *Pool) Drop(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names = slices.DeleteFunc(p.names, func(n string) bool { return n == name })
	delete(p.addrs, name)
}

func (p *Pool) pick(i int) (name, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.names) == 0 {
		return "", ""
	}
	name = p.names[i%len(p.names)]
	p.using[name]++
	return name, p.addrs[name]
}

func (p *Pool) done(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.using[name]--
	p.idle.Broadcast()
}

// Result is one request of a Load.
type Result struct {
	ID         string // its X-Request-Id, which the proxies keep and the applications' ledger records
	Via        string // the participant whose proxy it was sent to
	Post       bool   // a POST with a body, else a GET
	Start, End time.Time
	Code       int
	Body       string
	RetryAfter string // the answer's Retry-After
	Err        error
}

// OK reports a 200.
func (r Result) OK() bool { return r.Err == nil && r.Code == http.StatusOK }

// Latency is how long the answer took.
func (r Result) Latency() time.Duration { return r.End.Sub(r.Start) }

func (r Result) String() string {
	what := "GET"
	if r.Post {
		what = "POST"
	}
	if r.Err != nil {
		return fmt.Sprintf("%s via %s at %s: %v after %v", what, r.Via, r.Start.Format("15:04:05.000"), r.Err, r.Latency().Round(time.Millisecond))
	}
	return fmt.Sprintf("%s via %s at %s: %d %q after %v", what, r.Via, r.Start.Format("15:04:05.000"), r.Code,
		strings.TrimSpace(r.Body), r.Latency().Round(time.Millisecond))
}

// LoadConfig sizes a Load.
type LoadConfig struct {
	// Workers send one request at a time each, one every Pace, through the
	// pool's proxies in turn; each sends at most Max (a bound whatever the
	// timing).
	Workers int
	Pace    time.Duration
	Max     int
	// Timeout bounds one request: longer than the hold time.
	Timeout time.Duration
}

// Load sends requests through a Pool until Stop: GETs and POSTs with a
// body in turn, so that both what may be sent twice and what may not are
// exercised.
type Load struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	results []Result
}

// StartLoad starts cfg.Workers workers on pool.
func StartLoad(pool *Pool, cfg LoadConfig) *Load {
	l := &Load{stop: make(chan struct{})}
	load := time.Now().UnixNano() // ids unique across the loads of one fence
	for i := range cfg.Workers {
		l.wg.Go(func() {
			tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: ClientIdle}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: cfg.Timeout}
			tick := time.NewTicker(cfg.Pace)
			defer tick.Stop()
			for n := 0; n < cfg.Max; n++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				name, addr := pool.pick(i + n)
				if name == "" {
					continue
				}
				r := send(c, fmt.Sprintf("%x-%d-%d", load, i, n), name, addr, n%2 == 0)
				pool.done(name)
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
			}
		})
	}
	return l
}

func send(c *http.Client, id, name, addr string, post bool) Result {
	r := Result{ID: id, Via: name, Post: post, Start: time.Now()}
	method, path, body := http.MethodGet, "/r", io.Reader(nil)
	if post {
		method, path, body = http.MethodPost, "/w", strings.NewReader("payload")
	}
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	if err != nil {
		r.Err, r.End = err, time.Now()
		return r
	}
	req.Header.Set("X-Request-Id", id)
	if post {
		req.Header.Set("Content-Type", "text/plain")
	}
	res, err := c.Do(req)
	r.Err = err
	if r.Err == nil {
		b, err := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		r.Code, r.Body, r.Err = res.StatusCode, string(b), err
		r.RetryAfter = res.Header.Get("Retry-After")
	}
	r.End = time.Now()
	return r
}

// Count is how many requests were answered so far.
func (l *Load) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// Stop ends the load and returns every result.
func (l *Load) Stop() []Result {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}

// Failed are the results that are not a 200.
func Failed(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if !r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// Clean503 reports a 503 with Retry-After as the proxy answers when no
// leader took the request within the hold time.
func Clean503(r Result) bool {
	return r.Err == nil && r.Code == http.StatusServiceUnavailable && r.RetryAfter != ""
}

// Slowest is the longest latency.
func Slowest(results []Result) time.Duration {
	var d time.Duration
	for _, r := range results {
		d = max(d, r.Latency())
	}
	return d
}
