package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/forward"
)

// ForwardResult is the forwarding proxy's section (issue 22): what a
// forward adds to a request on loopback, and how many requests a hand-over
// loses under load through every participant's proxy.
type ForwardResult struct {
	// Latency of one request at a time on a kept-alive connection, by
	// method and path: "direct" to the leader's application, through the
	// leader's proxy, through a follower's proxy (and then the leader's);
	// "direct, new connection" dials for every request.
	Latency []ForwardPath
	// Rounds of each hand-over under load, and the load's size.
	Handovers []ForwardLoss
	Rate      float64 // requests a second the load sent, all proxies together
	Session   time.Duration
	HoldTime  time.Duration
	Fenced    int // requests the applications saw that a fence would refuse (must be 0)
}

// ForwardPath is the latency of one way of sending a request.
type ForwardPath struct {
	Method, Path string
	Took         Dist
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

// floorPath names the floor's path in the report: what any proxy process
// adds on this machine.
const floorPath = "bare ReverseProxy process"

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
	fence *forward.Fence
	pool  *forward.Pool
	ms    []*forwardMember
}

type forwardMember struct {
	id    string
	d     *daemon
	proxy string // its proxy.listen
	peer  string // its proxy.peer_listen
	app   *forward.App
}

func runForward(ctx context.Context, env *env) (*ForwardResult, error) {
	cfg := env.cfg
	r := &forwardRig{env: env, opts: env.electdOpts("/bench/forward", cfg.CrashTimeout), fence: forward.NewFence(), pool: forward.NewPool()}
	r.opts.logLevel = "info"
	defer r.close()
	for i := range 3 {
		m := &forwardMember{id: fmt.Sprintf("f%d", i)}
		var err error
		if m.app, err = forward.StartApp(m.id, r.fence); err != nil {
			return nil, err
		}
		r.ms = append(r.ms, m)
		if err := r.start(ctx, m); err != nil {
			return nil, err
		}
	}
	res := &ForwardResult{Session: cfg.CrashTimeout, HoldTime: 5 * time.Second}
	leader, err := r.settled(ctx, nil)
	if err != nil {
		return nil, err
	}
	// "direct" goes to an application of the same kind that is no
	// participant's: a request without a fencing token is what the fence
	// would refuse.
	direct, err := forward.StartApp("direct", forward.NewFence())
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	floor, stopFloor, err := startFloorProxy(env, direct.Addr)
	if err != nil {
		return nil, err
	}
	defer stopFloor()
	if res.Latency, err = r.latency(ctx, leader, direct.Addr, floor, cfg.ForwardRequests); err != nil {
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
	if m.proxy, err = freeAddr(); err != nil {
		return err
	}
	if m.peer, err = freeAddr(); err != nil {
		return err
	}
	m.d, err = startDaemon(ctx, r.opts, m.id, "--proxy.listen", m.proxy, "--proxy.peer_listen", m.peer, "--proxy.app", m.app.Addr,
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
	deadline := time.Now().Add(time.Minute)
	for {
		if l := r.leader(ctx, old); l != nil {
			return l, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.New("forward: no leader that every proxy routes to within a minute")
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
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
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
			return nil
		}
		views[m.id], proxies[m.id] = v, m.peer
	}
	for _, m := range r.ms {
		if m.id == forward.Routed(views, proxies) && m != old {
			return m
		}
	}
	return nil
}

// startFloorProxy runs tests/bench/floorproxy in front of target and
// returns its address, and a function that stops it.
func startFloorProxy(env *env, target string) (string, func(), error) {
	bin, err := buildGo(env.dir, "floorproxy", "github.com/electd/electd/tests/bench/floorproxy")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, target)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := env.spawn.start(cmd); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("floorproxy printed no address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// latency sends n requests one at a time along each path: direct to an
// application (at direct), through a bare reverse proxy's process (floor),
// through the leader's proxy, through a follower's.
func (r *forwardRig) latency(ctx context.Context, leader *forwardMember, direct, floor string, n int) ([]ForwardPath, error) {
	var follower *forwardMember
	for _, m := range r.ms {
		if m != leader {
			follower = m
			break
		}
	}
	paths := []struct{ name, addr string }{
		{"direct", direct}, {floorPath, floor}, {"leader's proxy", leader.proxy}, {"follower's proxy", follower.proxy},
	}
	var out []ForwardPath
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, p := range paths {
			took, err := timeRequests(ctx, method, p.addr, n, false)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, p.name, err)
			}
			out = append(out, ForwardPath{Method: method, Path: p.name, Took: took})
		}
	}
	took, err := timeRequests(ctx, http.MethodPost, direct, n, true)
	if err != nil {
		return nil, err
	}
	return append(out, ForwardPath{Method: http.MethodPost, Path: "direct, a new connection each", Took: took}), nil
}

// timeRequests sends n requests to addr one after the other, after a
// warm-up, and times each; fresh dials a connection for every one.
func timeRequests(ctx context.Context, method, addr string, n int, fresh bool) (Dist, error) {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableKeepAlives: fresh}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	send := func() error {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"op":"write","value":42}`)
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/x", body)
		if err != nil {
			return err
		}
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	for range min(n, 100) {
		if err := send(); err != nil {
			return nil, err
		}
	}
	d := make(Dist, 0, n)
	for range n {
		start := time.Now()
		if err := send(); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
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
	ld := forward.StartLoad(r.pool, forward.LoadConfig{Workers: forwardWorkers, Pace: 20 * time.Millisecond, Max: 5000, Timeout: 15 * time.Second})
	start := time.Now()
	waitCount := func(want int) error {
		for ld.Count() < want {
			if err := sleep(ctx, 5*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}
	stop := func() []forward.Result { return ld.Stop() }
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
	return len(results), len(forward.Failed(results)), forward.Slowest(results), rate, nil
}
