package proxy

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/proxykit"
)

// The clusters' settings, fenced_cluster_test.go's too: a session timeout short
// enough that a stalled or crashed leader is replaced well within the hold
// time (ZooKeeper expires its session after the timeout plus 1.5 ticks),
// and proxies that close idle connections after a second, so that a
// participant's goroutines return to rest soon after the load.
const (
	sessionTimeout = 2 * time.Second
	holdTime       = 5 * time.Second
	proxyIdle      = 2 * time.Second // well past the clients' proxykit.ClientIdle
	// peerTimeout is proxy.peer_timeout's default (the data plane's
	// contract, issue 28): how long a peer's proxy that stopped answering
	// is believed. It is not set, so that each scenario also runs on an
	// electd that has no such key, and shows what that one does.
	peerTimeout = 2 * time.Second
	adminToken  = "t0ken-dataplane"
	patience    = 30 * time.Second // bounds every wait: it only ends a test that hangs
	// slack is what a request may take past its bound on a loaded machine:
	// the bounds are the proxies' clocks, the latency the client's. With
	// both cores kept busy by others (load average 27), the stalled
	// leader's requests ended up to 1.98 s past hold + peer_timeout.
	slack = 3 * time.Second
)

// member is one participant: an electd process with its proxy and its
// application, each a process of its own.
type member struct {
	name  string
	app   *ledger.App
	spec  electdtest.Spec
	proc  *electdtest.Proc
	proxy string // proxy.listen: where clients send
	peer  string // proxy.peer_listen: where the other proxies forward
	rest  invariant.Rest
}

// cluster is members on one election path of the package's ZooKeeper.
type cluster struct {
	t       *testing.T
	path    string
	members []*member
	plain   setup // its plain and env: how start runs electd
}

// setup says what startCluster starts.
type setup struct {
	n     int
	langs []string // the applications' languages, member by member in turn; default Go
	path  string   // the election path; default one made of the test's name
	names string   // the members' names' prefix: names0, names1, ...; default "p"
	tune  func(*electdtest.Config)
	// plain runs electd built without -race (electdtest.Plain), with env
	// added to its environment: memory figures of a -race build say
	// nothing of the real one.
	plain bool
	env   []string
}

var unsafePath = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// startCluster starts s.n members, waits until one leads and every proxy
// routes to it, and takes each member's rest.
func startCluster(t *testing.T, s setup) *cluster {
	t.Helper()
	ens := zookeeper(t)
	c := &cluster{t: t, path: s.path, plain: setup{plain: s.plain, env: s.env}}
	if c.path == "" {
		c.path = "/dataplane/" + strings.ToLower(unsafePath.ReplaceAllString(t.Name(), "-"))
	}
	if len(s.langs) == 0 {
		s.langs = []string{ledger.Go}
	}
	if s.names == "" {
		s.names = "p"
	}
	dir := t.TempDir()
	for i := range s.n {
		m := &member{name: fmt.Sprintf("%s%d", s.names, i)}
		m.app = ledger.Start(t, s.langs[i%len(s.langs)], m.name, dir)
		var err error
		if m.proxy, err = electdtest.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		if m.peer, err = electdtest.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		m.spec = electdtest.Spec{Dir: filepath.Join(dir, m.name), Config: &electdtest.Config{
			ID: m.name, Servers: ens.Servers(), SessionTimeout: sessionTimeout,
			Path: c.path, AdminToken: adminToken, LogLevel: "debug", LogFormat: "json",
			ShutdownGrace: time.Second, ShutdownTimeout: 10 * time.Second,
			ProxyListen: m.proxy, ProxyPeer: m.peer, ProxyApp: m.app.Addr, ProxyHoldTime: holdTime, ProxyIdle: proxyIdle,
		}, Env: s.env}
		if s.tune != nil {
			s.tune(m.spec.Config)
		}
		c.members = append(c.members, m)
		c.start(m)
	}
	c.settled(nil)
	c.takeRest()
	return c
}

// start runs m's electd (again) and waits until it is ready.
func (c *cluster) start(m *member) {
	c.t.Helper()
	if !c.plain.plain {
		m.proc = proxykit.StartProc(c.t, m.spec, patience)
		return
	}
	m.proc = electdtest.StartProgram(c.t, electdtest.Plain(c.t), m.spec)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := m.proc.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		c.t.Fatal(err)
	}
}

// Part is m as tests/harness/proxykit's helpers see it.
func (m *member) Part() proxykit.Member {
	return proxykit.Member{Name: m.name, Proc: m.proc, Rest: m.rest}
}

// takeRest sends a few requests through every proxy (so that whatever a
// proxy keeps once it has forwarded, a pool of connections to the leader
// say, is part of its rest), lets idle connections close, and takes each
// member's footprint at rest.
func (c *cluster) takeRest() {
	c.t.Helper()
	client := ledger.Client(patience)
	for _, m := range c.members {
		for i := range 3 {
			req, _ := http.NewRequest(http.MethodGet, "http://"+m.proxy+"/warm", nil)
			if r := ledger.Do(client, m.name, fmt.Sprintf("warm-%s-%d", m.name, i), req); r.Code != http.StatusOK {
				c.t.Fatalf("warming up: %v", r)
			}
		}
	}
	client.CloseIdleConnections()
	time.Sleep(proxyIdle + 500*time.Millisecond) // the warm-up's idle connections close
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rests, err := electdtest.Rests(ctx, proxykit.Procs(c.members), time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	for i, m := range c.members {
		m.rest = rests[i]
	}
}

// settled waits until one running member other than old leads and every
// running member's proxy routes to it, and returns it.
func (c *cluster) settled(old *member) *member { return c.settledWithin(old, patience) }

// settledWithin is settled, failing the test after d.
func (c *cluster) settledWithin(old *member, d time.Duration) *member {
	c.t.Helper()
	return proxykit.Settled(c.t, d, old, c.members)
}

// idle waits until every running member is back at its rest.
func (c *cluster) idle() { proxykit.AtRest(c.t, patience, c.members) }

func (c *cluster) member(name string) *member { return proxykit.Find(c.t, c.members, name) }

// others are the members other than l, in order.
func (c *cluster) others(l *member) []*member {
	var out []*member
	for _, m := range c.members {
		if m != l {
			out = append(out, m)
		}
	}
	return out
}

// targets are the members' proxies, for a Load.
func targets(ms ...*member) []ledger.Target {
	var out []ledger.Target
	for _, m := range ms {
		out = append(out, ledger.Target{Name: m.name, Addr: m.proxy})
	}
	return out
}

// entries reads every member's application's ledger.
func (c *cluster) entries() []ledger.Entry {
	c.t.Helper()
	var paths []string
	for _, m := range c.members {
		paths = append(paths, m.app.Ledger)
	}
	es, err := ledger.Read(paths...)
	if err != nil {
		c.t.Fatal(err)
	}
	return es
}

// post sends an admin POST to m's API and wants 202.
func (c *cluster) post(m *member, path string) {
	c.t.Helper()
	proxykit.AdminPost(c.t, m.proc, path, adminToken, patience)
}

// view is m's GET /leader.
func (m *member) view(t *testing.T) electdtest.LeaderView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := m.proc.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// report logs how requests ended, and fails t with the first few that
// break a rule.
func report(t *testing.T, what string, reqs []ledger.Request, bad []ledger.Request) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	var lines []string
	for i, r := range bad {
		if i == 5 {
			lines = append(lines, fmt.Sprintf("... and %d more", len(bad)-5))
			break
		}
		lines = append(lines, "  "+r.String())
	}
	t.Errorf("%d of %d requests %s:\n%s", len(bad), len(reqs), what, strings.Join(lines, "\n"))
}
