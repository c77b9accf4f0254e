package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/invariant"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// The cluster's settings. The session timeout is short so that a crash
// and a partition end within the hold time: ZooKeeper expires the dead
// leader's session after it (plus 1.5 ticks), and the held requests then
// go to the new leader. The proxies close idle connections after a second,
// so that a participant's goroutines return to rest soon after the load.
const (
	sessionTimeout = 2 * time.Second
	holdTime       = 5 * time.Second
	shutdownGrace  = time.Second     // a stopping participant forwards this long while clients stop sending to it
	proxyIdle      = 2 * time.Second // well past the clients' forward.ClientIdle
	adminToken     = "t0ken-forward"
	patience       = 30 * time.Second // bounds every wait: it only ends a test that hangs
	// slack is what a request may take past the hold time on a loaded
	// machine: the hold is the proxies' clock, the latency the client's.
	slack = time.Second
)

// member is one participant: an electd process with its proxy, its
// application, and its own way to ZooKeeper (a zktest.Proxy that can cut
// it off).
type member struct {
	name  string
	spec  electdtest.Spec
	proc  *electdtest.Proc
	proxy string // proxy.listen
	peer  string // proxy.peer_listen
	app   *App
	zk    *zktest.Proxy
	cut   bool // zk blackholed: its view of the election stands still
	rest  invariant.Rest
}

// cluster is real ZooKeeper and three members on one election path.
type cluster struct {
	t   *testing.T // the running test or subtest
	top *testing.T // the test the processes live as long as

	ens     *zktest.Ensemble
	fence   *Fence
	pool    *Pool
	members []*member
}

// startCluster starts ZooKeeper and n members, each configured by the
// defaults above and then by tune (when not nil).
func startCluster(t *testing.T, n int, tune func(*electdtest.Config)) *cluster {
	c := &cluster{t: t, top: t, ens: zktest.Start(t, zktest.Options{}), fence: NewFence(), pool: NewPool()}
	dir := t.TempDir()
	for i := range n {
		m := &member{name: fmt.Sprintf("p%d", i)}
		var err error
		if m.app, err = StartApp(m.name, c.fence); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.app.Close)
		if m.zk, err = zktest.NewProxy(c.ens.Servers()[0]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.zk.Close)
		if m.proxy, err = electdtest.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		if m.peer, err = electdtest.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		m.spec = electdtest.Spec{Dir: filepath.Join(dir, m.name), Config: &electdtest.Config{
			ID: m.name, Servers: []string{m.zk.Addr()}, SessionTimeout: sessionTimeout,
			Path: "/forward", AdminToken: adminToken, LogFormat: "json",
			ShutdownGrace: shutdownGrace, ShutdownTimeout: 10 * time.Second,
			ProxyListen: m.proxy, ProxyPeer: m.peer, ProxyApp: m.app.Addr, ProxyHoldTime: holdTime, ProxyIdle: proxyIdle,
		}}
		if tune != nil {
			tune(m.spec.Config)
		}
		c.members = append(c.members, m)
		c.start(m)
	}
	c.settled(nil)
	// Each member's rest, before any traffic: what it holds and does idle.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, err := electdtest.FootprintWindow(ctx, c.procs(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range c.members {
		m.rest = invariant.RestOf(ws[i])
	}
	return c
}

// start runs m's electd (again) and puts its proxy in the pool once it
// has joined.
func (c *cluster) start(m *member) {
	c.t.Helper()
	m.proc = electdtest.Start(c.top, m.spec)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := m.proc.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		c.t.Fatal(err)
	}
	c.pool.Add(m.name, m.proxy)
}

func (c *cluster) procs() []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, m := range c.members {
		out = append(out, m.proc)
	}
	return out
}

// settled waits until one running member other than old leads and every
// running member's proxy routes to it (but one cut off from ZooKeeper,
// which cannot know), and returns it.
func (c *cluster) settled(old *member) *member {
	c.t.Helper()
	var l *member
	wait.For(c.t, patience, "one new leader that every proxy routes to", func() bool {
		l = nil
		views, proxies := map[string]electdtest.LeaderView{}, map[string]string{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, m := range c.members {
			if !m.proc.Alive() || m.cut {
				continue
			}
			v, err := m.proc.View(ctx)
			if err != nil {
				return false
			}
			views[m.name], proxies[m.name] = v, m.peer
		}
		if name := Routed(views, proxies); name != "" {
			l = c.member(name)
		}
		return l != nil && l != old
	})
	return l
}

// idle waits until every running member is back at its rest: no more
// goroutines than then, and its election settled (tests/invariant's Idle).
func (c *cluster) idle() {
	c.t.Helper()
	var procs []*electdtest.Proc
	var rests []invariant.Rest
	for _, m := range c.members {
		if m.proc.Alive() {
			procs, rests = append(procs, m.proc), append(rests, m.rest)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := electdtest.WaitIdle(ctx, procs, rests, time.Second); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) member(name string) *member {
	for _, m := range c.members {
		if m.name == name {
			return m
		}
	}
	c.t.Fatalf("no member %s", name)
	return nil
}

// load is the traffic of every scenario: 3 workers per member, each
// sending one request every 10 ms, about 300 a second in all.
func (c *cluster) load() *Load {
	return StartLoad(c.pool, LoadConfig{Workers: 3 * len(c.members), Pace: 10 * time.Millisecond,
		Max: 3000, Timeout: holdTime + 5*time.Second})
}

// post sends an admin POST to m's API and wants 202; a release's answer
// says what the proxy's drain did (api.Release's drain).
func (c *cluster) post(m *member, path string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	code, body, err := m.proc.Do(ctx, http.MethodPost, path, adminToken)
	if err != nil || code != http.StatusAccepted {
		c.t.Fatalf("POST %s to %s: %d %s %v", path, m.name, code, body, err)
	}
	var r api.Release
	if err := json.Unmarshal(body, &r); err != nil || r.Drain == nil || r.Drain.WaitedSeconds < 0 {
		c.t.Fatalf("POST %s to %s: %s (%v): want what the drain did", path, m.name, body, err)
	}
	c.t.Logf("%s: the drain waited %.3fs, %d requests left", path, r.Drain.WaitedSeconds, r.Drain.InFlight)
}

// leaderships counts the leaderships whose applications served requests.
func (c *cluster) leaderships() int { return c.fence.Tokens() }
