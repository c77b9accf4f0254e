package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/zktest"
)

// The fenced cluster's settings beside those cluster_test.go sets for
// both (session timeout, hold time, proxy idle time, patience): a crash and
// a partition end within the hold time, as there.
const (
	shutdownGrace    = time.Second // a stopping participant forwards this long while clients stop sending to it
	fencedAdminToken = "t0ken-forward"
	// fencedSlack is what a request may take past the hold time on a loaded
	// machine: the hold is the proxies' clock, the latency the client's.
	fencedSlack = time.Second
)

// fencedMember is one participant: an electd process with its proxy, its
// application, and its own way to ZooKeeper (a zktest.Proxy that can cut
// it off).
type fencedMember struct {
	name  string
	spec  electdtest.Spec
	proc  *electdtest.Proc
	proxy string // proxy.listen
	peer  string // proxy.peer_listen
	app   *proxykit.App
	zk    *zktest.Proxy
	cut   bool // zk blackholed: its view of the election stands still
	rest  invariant.Rest
}

// fencedCluster is real ZooKeeper and three members on one election path.
type fencedCluster struct {
	t   *testing.T // the running test or subtest
	top *testing.T // the test the processes live as long as

	ens     *zktest.Ensemble
	fence   *proxykit.Fence
	pool    *proxykit.Pool
	members []*fencedMember
}

// startFencedCluster starts ZooKeeper and n members, each configured by the
// defaults above and then by tune (when not nil).
func startFencedCluster(t *testing.T, n int, tune func(*electdtest.Config)) *fencedCluster {
	return startFencedClusterWith(t, n, options{tune: tune})
}

// options are what startClusterWith changes from the defaults.
type options struct {
	tune func(*electdtest.Config)
	// h2c: the applications speak HTTP/2 without TLS too, and the proxies
	// send them every request so (proxy.app_protocol h2c).
	h2c bool
}

// startFencedClusterWith is startFencedCluster with o.
func startFencedClusterWith(t *testing.T, n int, o options) *fencedCluster {
	c := &fencedCluster{t: t, top: t, ens: zktest.Start(t, zktest.Options{}), fence: proxykit.NewFence(), pool: proxykit.NewPool()}
	dir := t.TempDir()
	start := proxykit.StartApp
	if o.h2c {
		start = proxykit.StartAppH2C
	}
	for i := range n {
		m := &fencedMember{name: fmt.Sprintf("p%d", i)}
		var err error
		if m.app, err = start(m.name, c.fence); err != nil {
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
			Path: "/forward", AdminToken: fencedAdminToken, LogFormat: "json",
			ShutdownGrace: shutdownGrace, ShutdownTimeout: 10 * time.Second,
			ProxyListen: m.proxy, ProxyPeer: m.peer, ProxyApp: m.app.Addr, ProxyHoldTime: holdTime, ProxyIdle: proxyIdle,
		}}
		if o.h2c {
			m.spec.Env = append(m.spec.Env, "ELECTD_PROXY_APP_PROTOCOL=h2c")
		}
		if o.tune != nil {
			o.tune(m.spec.Config)
		}
		c.members = append(c.members, m)
		c.start(m)
	}
	c.settled(nil)
	// Each member's rest, before any traffic: what it holds and does idle.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rests, err := electdtest.Rests(ctx, proxykit.Procs(c.members), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range c.members {
		m.rest = rests[i]
	}
	return c
}

// start runs m's electd (again) and puts its proxy in the pool once it
// has joined.
func (c *fencedCluster) start(m *fencedMember) {
	c.t.Helper()
	m.proc = proxykit.StartProc(c.top, m.spec, patience)
	c.pool.Add(m.name, m.proxy)
}

// Part is m as the shared helpers see it (group.go).
func (m *fencedMember) Part() proxykit.Member {
	return proxykit.Member{Name: m.name, Proc: m.proc, Rest: m.rest, Frozen: m.cut}
}

// settled waits until one running member other than old leads and every
// running member's proxy routes to it (but one cut off from ZooKeeper,
// which cannot know), and returns it.
func (c *fencedCluster) settled(old *fencedMember) *fencedMember {
	return proxykit.Settled(c.t, patience, old, c.members)
}

// idle waits until every running member is back at its rest.
func (c *fencedCluster) idle() { proxykit.AtRest(c.t, patience, c.members) }

// load is the traffic of every scenario: 3 workers per member, each
// sending one request every 10 ms, about 300 a second in all.
func (c *fencedCluster) load() *proxykit.Load {
	return proxykit.StartLoad(c.pool, proxykit.LoadConfig{Workers: 3 * len(c.members), Pace: 10 * time.Millisecond,
		Max: 3000, Timeout: holdTime + 5*time.Second})
}

// post sends an admin POST to m's API and wants 202; a release's answer
// says what the proxy's drain did (api.Release's drain).
func (c *fencedCluster) post(m *fencedMember, path string) {
	c.t.Helper()
	body := proxykit.AdminPost(c.t, m.proc, path, fencedAdminToken, patience)
	var r api.Release
	if err := json.Unmarshal(body, &r); err != nil || r.Drain == nil || r.Drain.WaitedSeconds < 0 {
		c.t.Fatalf("POST %s to %s: %s (%v): want what the drain did", path, m.name, body, err)
	}
	c.t.Logf("%s: the drain waited %.3fs, %d requests left", path, r.Drain.WaitedSeconds, r.Drain.InFlight)
}

// leaderships counts the leaderships whose applications served requests.
func (c *fencedCluster) leaderships() int { return c.fence.Tokens() }
