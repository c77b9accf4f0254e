package reconnect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// group is one election of one mode: a leader, the follower next in line
// and an observer, started in that order so that each has its role.
type group struct {
	mode     string
	path     string
	procs    []*electdtest.Proc // leader, follower, observer
	sessions map[*electdtest.Proc]string
}

func (g *group) leader() *electdtest.Proc { return g.procs[0] }

func startGroup(t *testing.T, ens *zktest.Ensemble, mode string) *group {
	t.Helper()
	g := &group{mode: mode, path: fmt.Sprintf("/reconnect/%s-%d", mode, time.Now().UnixNano()%1e9),
		sessions: map[*electdtest.Proc]string{}}
	bin := electdtest.Binary(t)
	for i, role := range []string{"leader", "follower", "observer"} {
		cfg := &electdtest.Config{
			ID: mode + "-" + role, Servers: ens.Servers(), SessionTimeout: sessionTimeout,
			Path: g.path, Mode: mode, Observer: role == "observer", LogLevel: "debug", LogFormat: "text",
		}
		p, err := electdtest.Launch(bin, electdtest.Spec{Config: cfg, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Stop(15 * time.Second); err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
			if t.Failed() {
				t.Logf("%s's log:\n%s", p.Name, p.LogTail(60))
			}
		})
		g.procs = append(g.procs, p)
		// Each in turn, so the queue's order is the start order.
		wait.For(t, 60*time.Second, p.Name+" joined", func() bool {
			v, err := p.View(context.Background())
			return err == nil && v.LeaderID() == g.leader().Name && (i != 0 || v.Self.IsLeader)
		})
		v := electdtest.Bind(t, p).ViewOf()
		g.sessions[p] = v.Self.Session
	}
	return g
}

// waitSettled waits until the leader leads and every participant names it.
func (g *group) waitSettled(t *testing.T) {
	t.Helper()
	for _, p := range g.procs {
		wait.For(t, 60*time.Second, p.Name+" connected and naming "+g.leader().Name, func() bool {
			v, err := p.View(context.Background())
			return err == nil && v.Self.State == "connected" && v.LeaderID() == g.leader().Name &&
				v.Self.IsLeader == (p == g.leader())
		})
	}
}

func (g *group) session(t *testing.T, p *electdtest.Proc) int64 {
	t.Helper()
	id, err := strconv.ParseUint(strings.TrimPrefix(g.sessions[p], "0x"), 16, 64)
	if err != nil {
		t.Fatalf("%s: session %q: %v", p.Name, g.sessions[p], err)
	}
	return int64(id)
}
