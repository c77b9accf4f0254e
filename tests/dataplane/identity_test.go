package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/ledger"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Issue 37, item 11 and must have 9: one identity per election, always.
// Every participant withdraws, so the election path (a container) empties;
// an operator deletes it (ZooKeeper's container reaper would within a
// minute); they stand again and the path is made anew, with another czxid.
// Then one participant restarts and reads that czxid at start. Before the
// fix the others kept the one they read first, and each side bounced the
// other's forwards as another election's (503). Now every participant
// follows the path's incarnation: every request through every proxy is
// answered 200 by the leader's application, and every participant is idle
// again afterwards (docs/design/proxy.md, "Every forward names its election and
// its leader"). The race is run too: its followers and observers own no
// node, and see a new leader without listing the path.
func TestOneIdentityAfterThePathIsMadeAnew(t *testing.T) {
	for _, mode := range []string{"latch", "race"} {
		t.Run(mode, func(t *testing.T) { pathMadeAnew(t, mode) })
	}
}

func pathMadeAnew(t *testing.T, mode string) {
	c := startCluster(t, setup{n: 3, tune: func(cfg *electdtest.Config) { cfg.Mode = mode }})
	c.settled(nil)
	before := electionID(t, c.path)

	for _, m := range c.members {
		c.candidacy(m, false)
	}
	conn := zkAdmin(t)
	wait.For(t, patience, "the election path to empty", func() bool {
		kids, _, err := conn.Children(c.path)
		return err == nil && len(kids) == 0 || errors.Is(err, zk.ErrNoNode)
	})
	if err := conn.Delete(c.path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("delete %s: %v", c.path, err)
	}
	for _, m := range c.members {
		c.candidacy(m, true)
	}
	l := c.settled(nil)
	after := electionID(t, c.path)
	if after == before {
		t.Fatalf("the path was not made anew: %s", after)
	}
	t.Logf("the election was %s, is %s; %s leads", before, after, l.name)

	restarted := c.others(l)[0]
	if err := restarted.proc.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.start(restarted)
	l = c.settled(nil)
	for _, m := range c.others(restarted) {
		if !m.proc.LogHas("created anew") {
			t.Errorf("%s did not log the path's new incarnation", m.name)
		}
	}

	client := ledger.Client(patience)
	var reqs, bad []ledger.Request
	for _, m := range c.members {
		for i := range 20 {
			req, _ := http.NewRequest(http.MethodGet, "http://"+m.proxy+"/identity", nil)
			r := ledger.Do(client, m.name, fmt.Sprintf("identity-%s-%d", m.name, i), req)
			reqs = append(reqs, r)
			if r.Err != nil || r.Code != http.StatusOK || !strings.HasPrefix(r.Body, l.name+" ") {
				bad = append(bad, r)
			}
		}
	}
	client.CloseIdleConnections()
	report(t, "not answered 200 by the leader "+l.name+"'s application", reqs, bad)
	c.idle()
}

// candidacy makes m stand (true) or withdraw (false), with the admin token.
func (c *cluster) candidacy(m *member, stand bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	code, body, err := m.proc.DoBody(ctx, http.MethodPost, "/candidacy", adminToken, fmt.Sprintf(`{"candidate": %v}`, stand))
	if err != nil || code != http.StatusOK {
		c.t.Fatalf("%s: POST /candidacy %v: %d %s %v", m.name, stand, code, body, err)
	}
}

// zkAdmin is a ZooKeeper client of the package's server, as an operator's.
func zkAdmin(t *testing.T) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(zookeeper(t).Servers(), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
