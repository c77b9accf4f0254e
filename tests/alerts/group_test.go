package alerts

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
)

// restWindow is how long a footprint is watched to take a rest or call a
// participant idle again.
const restWindow = 2 * time.Second

// group is the electd sidecars of one election path, scraped by the
// suite's Prometheus as a target group of their own.
type group struct {
	s     *suite
	name  string // the target group's
	path  string
	procs []*electdtest.Proc
	rest  []invariant.Rest // per process, taken by atRest
}

// start runs one electd per configuration on path (the suite's ZooKeeper,
// sessionTimeout and adminToken unless a configuration says otherwise),
// waits until each is ready, and has Prometheus scrape them until the test
// ends.
func (s *suite) start(t *testing.T, name, path string, cfgs ...*electdtest.Config) *group {
	t.Helper()
	g := &group{s: s, name: name, path: path}
	for _, c := range cfgs {
		g.add(t, c)
	}
	t.Cleanup(func() {
		if err := s.prom.SetTargets(name, nil); err != nil {
			t.Error(err)
		}
	})
	return g
}

// add runs one more sidecar in g and adds it to g's targets.
func (g *group) add(t *testing.T, c *electdtest.Config) *electdtest.Proc {
	t.Helper()
	c.Path = g.path
	if c.Servers == nil {
		c.Servers = g.s.zk.Servers()
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = sessionTimeout
	}
	if c.AdminToken == "" {
		c.AdminToken = adminToken
	}
	p := electdtest.Start(t, electdtest.Spec{Config: c})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := p.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		t.Fatal(err)
	}
	g.procs = append(g.procs, p)
	g.targets(t)
	return p
}

// remove stops p (SIGTERM) and takes it out of g and its targets.
func (g *group) remove(t *testing.T, p *electdtest.Proc) {
	t.Helper()
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping %s: %v", p.Name, err)
	}
	for i, q := range g.procs {
		if q == p {
			g.procs = append(g.procs[:i], g.procs[i+1:]...)
			break
		}
	}
	g.targets(t)
}

func (g *group) targets(t *testing.T) {
	t.Helper()
	var addrs []string
	for _, p := range g.procs {
		addrs = append(addrs, p.Addr)
	}
	if err := g.s.prom.SetTargets(g.name, addrs); err != nil {
		t.Fatal(err)
	}
}

func (g *group) addrs() []string {
	var out []string
	for _, p := range g.procs {
		out = append(out, p.Addr)
	}
	return out
}

// leaders returns the sidecars answering 200 on /healthz/leader.
func (g *group) leaders(ctx context.Context) []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, p := range g.procs {
		if p.IsLeader(ctx) {
			out = append(out, p)
		}
	}
	return out
}

// leader waits until exactly one sidecar of g leads, other than not (when
// not nil), and returns it.
func (g *group) leader(t *testing.T, not *electdtest.Proc) *electdtest.Proc {
	t.Helper()
	var l *electdtest.Proc
	wait.For(t, patience, fmt.Sprintf("one leader of %s", g.path), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ls := g.leaders(ctx)
		if len(ls) != 1 || ls[0] == not {
			return false
		}
		l = ls[0]
		return true
	})
	return l
}

// settled waits until one sidecar of g leads, takes every sidecar's
// footprint at rest, and waits until Prometheus has scraped every sidecar,
// seen that one leader, and evaluated the rules since without an alert for
// g's election: the moment to begin a fault.
func (g *group) settled(t *testing.T) *electdtest.Proc {
	t.Helper()
	l := g.leader(t, nil)
	g.atRest(t)
	g.s.quiet(t, g)
	return l
}

// release asks l to give up leadership (POST /leader/release).
func release(ctx context.Context, l *electdtest.Proc) error {
	st, body, err := l.Do(ctx, http.MethodPost, "/leader/release", adminToken)
	if err != nil {
		return err
	}
	if st != http.StatusAccepted {
		return fmt.Errorf("POST /leader/release to %s: %d %s", l.Name, st, body)
	}
	return nil
}

// atRest takes each sidecar's footprint at rest.
func (g *group) atRest(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, err := electdtest.FootprintWindow(ctx, g.procs, restWindow)
	if err != nil {
		t.Fatal(err)
	}
	g.rest = g.rest[:0]
	for i, w := range ws {
		g.rest = append(g.rest, invariant.RestOf(w))
		t.Logf("%s at rest: %d goroutines, %d re-checks, %d requests", g.procs[i].Name,
			w.End.Goroutines, w.End.Rechecks, w.End.Requests)
	}
}

// idleAgain waits until every sidecar is back to its footprint at rest:
// after any fault a participant holds and does what it did before.
func (g *group) idleAgain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := electdtest.WaitIdle(ctx, g.procs, g.rest, restWindow); err != nil {
		t.Fatal(err)
	}
}
