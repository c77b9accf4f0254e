package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/zktest"
)

// load sends requests through every target, paced, until stopped: GETs
// and POSTs with a body, so that both the retry of an unsent request and
// the rule "a body read is never sent again" are exercised.
type load struct {
	mu      sync.Mutex
	results []result
	stop    chan struct{}
	wg      sync.WaitGroup
}

type result struct {
	via     string
	post    bool
	code    int
	body    string
	err     error
	latency time.Duration
}

// Load's pace: workers per target, and the pause between one worker's
// requests (3 targets x 2 workers at 15 ms: about 400 requests a second).
const (
	workersPerTarget = 2
	pace             = 15 * time.Millisecond
	maxPerWorker     = 2000 // a bound on the count whatever the timing
)

// pool is the proxies clients send to; a proxy is taken out of it before
// it stops, as a Service's endpoint is, and only once no client is about
// to send to it.
type pool struct {
	mu    sync.Mutex
	ms    []*member
	using map[*member]int
	idle  *sync.Cond
}

func newPool(ms []*member) *pool {
	p := &pool{ms: slices.Clone(ms), using: map[*member]int{}}
	p.idle = sync.NewCond(&p.mu)
	return p
}

func (p *pool) members() []*member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ms)
}

func (p *pool) pick(i int) *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ms) == 0 {
		return nil
	}
	m := p.ms[i%len(p.ms)]
	p.using[m]++
	return m
}

func (p *pool) done(m *member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.using[m]--
	p.idle.Broadcast()
}

// remove takes m out and waits until no request is being sent to it.
func (p *pool) remove(m *member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ms = slices.DeleteFunc(p.ms, func(o *member) bool { return o == m })
	for p.using[m] > 0 {
		p.idle.Wait()
	}
}

func startLoad(targets *pool) *load {
	l := &load{stop: make(chan struct{})}
	for i := range 3 * workersPerTarget {
		l.wg.Go(func() {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 15 * time.Second}
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for n := 0; n < maxPerWorker; n++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				m := targets.pick(i + n)
				if m == nil {
					continue
				}
				l.add(send(c, m, n%2 == 0))
				targets.done(m)
			}
		})
	}
	return l
}

func send(c *http.Client, m *member, post bool) result {
	start := time.Now()
	var res *http.Response
	var err error
	if post {
		res, err = c.Post("http://"+m.addr+"/w", "text/plain", strings.NewReader("payload"))
	} else {
		res, err = c.Get("http://" + m.addr + "/r")
	}
	r := result{via: m.name, post: post, err: err}
	if err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r.code, r.body = res.StatusCode, string(b)
	}
	r.latency = time.Since(start)
	return r
}

func (l *load) add(r result) {
	l.mu.Lock()
	l.results = append(l.results, r)
	l.mu.Unlock()
}

func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

func (l *load) end() []result {
	close(l.stop)
	l.wg.Wait()
	return l.results
}

// TestZKHandoffsFailNoRequest runs three participants, each an elector
// with a proxy in front of its application, and sends a few hundred
// requests a second through all three proxies while leadership moves:
// released; handed over before the leader's application stops (a pod
// deletion whose application asks electd to hand over first); lost
// because the leader's application stops taking connections on its own
// (the pod deletion electd cannot see coming: the application stops
// before its electd); and handed over by a leader that shuts down. No
// request fails, every one is answered
// within the hold time, and every one was served by the application whose
// elector led at that moment, with its fencing token (checked by the
// applications, at arrival, against their electors and a fence that
// refuses a token lower than one seen).
func TestZKHandoffsFailNoRequest(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{})
	f := &fence{}
	var ms []*member
	for i := range 4 {
		m := startMember(t, ens, "/proxy/handoffs", fmt.Sprintf("p%d", i), f)
		ms = append(ms, m)
		waitUntil(t, m.name+" to join", func() bool { return m.el.Status().Joined })
	}
	targets := newPool(ms)
	// leader waits for a leader other than old that every proxy routes to.
	leader := func(old *member) *member {
		var l *member
		waitUntil(t, "one new leader that every proxy routes to", func() bool {
			l = nil
			for _, m := range targets.members() {
				if m.leads() {
					l = m
				}
			}
			if l == nil || l == old {
				return false
			}
			for _, m := range targets.members() {
				if st := m.px.State(); m != l && st.To != l.addr {
					return false
				}
			}
			return true
		})
		return l
	}
	stopApp := func(l *member) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return l.app.Config.Shutdown(ctx) // stops listening, closes idle connections, finishes what it has
	}

	for _, step := range []struct {
		name string
		do   func(l *member) error
	}{
		{name: "release", do: func(l *member) error { return l.release() }},
		{name: "hand-over, then the application stops", do: func(l *member) error {
			if err := l.handOver(); err != nil {
				return err
			}
			return stopApp(l)
		}},
		{name: "the application stops first", do: stopApp},
		{name: "leader shuts down", do: func(l *member) error { return l.shutDown(t, targets) }},
	} {
		l := leader(nil)
		ld := startLoad(targets)
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		if err := step.do(l); err != nil {
			t.Fatalf("%s of %s: %v", step.name, l.name, err)
		}
		nl := leader(l)
		took := time.Since(start)
		time.Sleep(300 * time.Millisecond)
		waitUntil(t, "200 requests through this step", func() bool { return ld.count() >= 200 })
		results := ld.end()
		judge(t, step.name, results)
		t.Logf("%s: %s -> %s in %v; %d requests, slowest %v",
			step.name, l.name, nl.name, took.Round(time.Millisecond), len(results), slowest(results).Round(time.Millisecond))
	}
	if p := f.problems(); len(p) > 0 {
		t.Fatalf("%d fencing violations, first: %s", len(p), p[0])
	}
}

// judge fails the test for any request that failed or took longer than
// the hold time.
func judge(t *testing.T, step string, results []result) {
	t.Helper()
	if len(results) < 200 {
		t.Fatalf("%s: only %d requests were sent", step, len(results))
	}
	var failed []string
	for _, r := range results {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("via %s: %v", r.via, r.err))
		case r.code != http.StatusOK:
			failed = append(failed, fmt.Sprintf("via %s (post %v): %d %s", r.via, r.post, r.code, strings.TrimSpace(r.body)))
		case r.latency > proxy.DefaultHoldTime:
			failed = append(failed, fmt.Sprintf("via %s: answered after %v, past the hold time", r.via, r.latency))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%s: %d of %d requests failed; first: %s", step, len(failed), len(results), failed[0])
	}
}

func slowest(results []result) time.Duration {
	var d time.Duration
	for _, r := range results {
		d = max(d, r.latency)
	}
	return d
}
