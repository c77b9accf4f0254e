package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/wait"
)

// ForwardResult is the forwarding proxy's section (issues 22 and 28): what
// a forward adds to a request on loopback, beside two floors (a bare Go
// ReverseProxy and HAProxy, one hop and two), what each path sustains at
// saturation and at what CPU per request, and how many requests a hand-over
// loses under load through every participant's proxy.
type ForwardResult struct {
	// Latency of one request at a time on a kept-alive connection, by
	// method and path (ForwardPath).
	Latency []ForwardPath
	// Saturation: each path driven by ForwardConns kept-alive clients.
	Saturation []ForwardLoad
	// Rounds of each hand-over under load, and the load's size.
	Handovers []ForwardLoss
	Rate      float64 // requests a second the load sent, all proxies together
	Session   time.Duration
	HoldTime  time.Duration
	Fenced    int // requests the applications saw that a fence would refuse (must be 0)
	// Faults is what clients saw through the proxies under each fault.
	Faults []*FaultResult
}

// ForwardLoss is one kind of hand-over, repeated: the requests of each
// round and how many of them failed.
type ForwardLoss struct {
	Kind     string
	Graceful bool
	Requests []int
	Failed   []int
	Slowest  time.Duration
}

// forwardWorkers send one request every 20 ms each: about 300 a second
// through the three proxies in turn, as issue 22 asks.
const forwardWorkers = 6

// forwardToken is the admin token of the section's electd processes.
const forwardToken = "bench-forward-token"

// forwardRig is three electd processes with their proxies, each in front
// of an application in this process, on one election.
type forwardRig struct {
	env   *env
	opts  electdOpts
	fence *proxykit.Fence
	pool  *proxykit.Pool
	ms    []*forwardMember
}

type forwardMember struct {
	id    string
	d     *daemon
	proxy string // its proxy.listen
	app   *proxykit.App
}

// newForwardRig starts n electd (ids prefix0, prefix1...) on path, each
// with its proxy in front of an application of its own, logging at info
// as deployed; close it even when it fails.
func newForwardRig(ctx context.Context, env *env, path string, session time.Duration, prefix string, n int) (*forwardRig, error) {
	r := &forwardRig{env: env, opts: env.electdOpts(path, session), fence: proxykit.NewFence(), pool: proxykit.NewPool()}
	r.opts.logLevel = "info"
	for i := range n {
		m := &forwardMember{id: fmt.Sprintf("%s%d", prefix, i)}
		var err error
		if m.app, err = proxykit.StartApp(m.id, r.fence); err != nil {
			return r, err
		}
		r.ms = append(r.ms, m)
		if err := r.start(ctx, m); err != nil {
			return r, err
		}
	}
	return r, nil
}

func runForward(ctx context.Context, env *env) (*ForwardResult, error) {
	cfg := env.cfg
	r, err := newForwardRig(ctx, env, "/bench/forward", cfg.CrashTimeout, "f", 3)
	defer r.close()
	if err != nil {
		return nil, err
	}
	// proxy.hold_time is left unset: derived from the session timeout.
	res := &ForwardResult{Session: cfg.CrashTimeout, HoldTime: config.CrashTime(cfg.CrashTimeout)}
	leader, err := r.settled(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := r.paths(ctx, leader, res); err != nil {
		return nil, err
	}
	for _, k := range forwardKinds {
		l := ForwardLoss{Kind: k.name, Graceful: k.graceful}
		for i := range cfg.ForwardRounds {
			n, failed, slowest, rate, err := r.round(ctx, k)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", k.name, i+1, err)
			}
			l.Requests, l.Failed = append(l.Requests, n), append(l.Failed, failed)
			l.Slowest = max(l.Slowest, slowest)
			res.Rate = max(res.Rate, rate)
			env.progress("forward: %s, round %d/%d: %d of %d requests failed", k.name, i+1, cfg.ForwardRounds, failed, n)
		}
		res.Handovers = append(res.Handovers, l)
	}
	res.Fenced = len(r.fence.Violations())
	return res, nil
}

// start runs m's electd with a proxy on a fresh port in front of m's
// application, and puts the proxy in the pool once it has joined.
func (r *forwardRig) start(ctx context.Context, m *forwardMember) error {
	var err error
	// Its port and the next: the data plane's peers talk on proxy.listen's
	// port + 1 (issue 28).
	if m.proxy, err = electdtest.FreeAddrPair(); err != nil {
		return err
	}
	m.d, err = startDaemon(ctx, r.opts, m.id, "--proxy.listen", m.proxy, "--proxy.app", m.app.Addr, "--proxy.peer_key", electdtest.PeerKey(r.opts.path),
		"--http.admin_token", forwardToken, "--shutdown_grace", "500ms", "--proxy.idle_timeout", "2s")
	if err != nil {
		return err
	}
	r.pool.Add(m.id, m.proxy)
	return nil
}

func (r *forwardRig) close() {
	for _, m := range r.ms {
		if m.d != nil {
			m.d.kill()
		}
		m.app.Close()
	}
}

// settled waits until a member other than old leads and every running
// member's proxy routes to it.
func (r *forwardRig) settled(ctx context.Context, old *forwardMember) (*forwardMember, error) {
	var l *forwardMember
	err := wait.Until(ctx, time.Minute, 10*time.Millisecond, func() error {
		if l = r.leader(ctx, old); l == nil {
			return errors.New("no leader that every proxy routes to")
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	return l, ctx.Err()
}

func (r *forwardRig) leader(ctx context.Context, old *forwardMember) *forwardMember {
	views, proxies := map[string]api.Leader{}, map[string]string{}
	for _, m := range r.ms {
		select {
		case <-m.d.exited:
			continue
		default:
		}
		code, body := m.d.get(ctx, "/leader")
		var v api.Leader
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Proxy == nil {
			return nil
		}
		// Followers route to the address the leader publishes for its
		// peers, which need not be where clients send.
		views[m.id], proxies[m.id] = v, v.Proxy.Advertise
	}
	for _, m := range r.ms {
		if m.id == proxykit.Routed(views, proxies) && m != old {
			return m
		}
	}
	return nil
}

// forwardKind is one way leadership moves in a round.
type forwardKind struct {
	name     string
	graceful bool
	do       func(r *forwardRig, ctx context.Context, l *forwardMember) error
	// after restores what do stopped, once a new leader leads.
	after func(r *forwardRig, ctx context.Context, l *forwardMember) error
}

var forwardKinds = []forwardKind{
	{name: "release (POST /leader/release)", graceful: true, do: func(r *forwardRig, ctx context.Context, l *forwardMember) error {
		return l.post(ctx, "/leader/release")
	}},
	{name: "SIGTERM of the leader", graceful: true, do: func(r *forwardRig, ctx context.Context, l *forwardMember) error {
		if err := l.d.signal(syscall.SIGTERM); err != nil {
			return err
		}
		r.pool.Remove(l.id) // its endpoint goes while it forwards (shutdown_grace)
		return nil
	}, after: restartMember},
	{name: "the leader's application stops, then its electd gets SIGTERM (a pod deletion)", graceful: true,
		do: func(r *forwardRig, ctx context.Context, l *forwardMember) error {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := l.app.Stop(sctx); err != nil {
				return err
			}
			if err := l.d.signal(syscall.SIGTERM); err != nil {
				return err
			}
			r.pool.Remove(l.id)
			return nil
		}, after: func(r *forwardRig, ctx context.Context, l *forwardMember) error {
			if err := l.app.Restart(); err != nil {
				return err
			}
			return restartMember(r, ctx, l)
		}},
	{name: "SIGKILL of the leader", do: func(r *forwardRig, ctx context.Context, l *forwardMember) error {
		r.pool.Drop(l.id) // its endpoint goes with it
		return l.d.signal(syscall.SIGKILL)
	}, after: restartMember},
}

func restartMember(r *forwardRig, ctx context.Context, l *forwardMember) error {
	select {
	case <-l.d.exited:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("electd %s did not exit", l.id)
	}
	return r.start(ctx, l)
}

func (m *forwardMember) post(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.d.addr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+forwardToken)
	res, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, b)
	}
	return nil
}

// round runs the load through every proxy, moves leadership away from the
// leader as k says, lets the load go on through the new leader, and counts
// what failed.
func (r *forwardRig) round(ctx context.Context, k forwardKind) (n, failed int, slowest time.Duration, rate float64, err error) {
	l, err := r.settled(ctx, nil)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	ld := proxykit.StartLoad(r.pool, proxykit.LoadConfig{Workers: forwardWorkers, Pace: 20 * time.Millisecond, Max: 5000, Timeout: 15 * time.Second})
	start := time.Now()
	waitCount := func(want int) error {
		for ld.Count() < want {
			if err := sleep(ctx, 5*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}
	stop := func() []proxykit.Result { return ld.Stop() }
	if err := waitCount(60); err != nil {
		stop()
		return 0, 0, 0, 0, err
	}
	if err := k.do(r, ctx, l); err != nil {
		stop()
		return 0, 0, 0, 0, err
	}
	if _, err := r.settled(ctx, l); err != nil {
		stop()
		return 0, 0, 0, 0, err
	}
	if err := waitCount(ld.Count() + 60); err != nil {
		stop()
		return 0, 0, 0, 0, err
	}
	results := stop()
	rate = float64(len(results)) / time.Since(start).Seconds()
	if k.after != nil {
		if err := k.after(r, ctx, l); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return len(results), len(proxykit.Failed(results)), proxykit.Slowest(results), rate, nil
}
