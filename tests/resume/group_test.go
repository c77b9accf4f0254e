package resume

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// sessionTimeout is every participant's: a restart of the binary fits in
// it many times over, even on a loaded machine.
const sessionTimeout = 10 * time.Second

// window is how long a footprint is watched to call a participant idle.
const window = 3 * time.Second

// member is one electd with its session file, which a restart finds again
// (same Dir, same Name, same Spec).
type member struct {
	spec electdtest.Spec
	proc *electdtest.Proc
}

// sessionFile is where a member keeps its session: in its own directory,
// as each pod has its own emptyDir.
func (m *member) sessionFile() string { return filepath.Join(m.spec.Dir, "session") }

// start launches the member's process (again); the test ends it.
func (m *member) start(t *testing.T) {
	t.Helper()
	p, err := electdtest.Launch(electdtest.Binary(t), m.spec)
	if err != nil {
		t.Fatal(err)
	}
	m.proc = p
	t.Cleanup(func() {
		if !p.Alive() {
			return
		}
		if err := p.Stop(15 * time.Second); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	})
}

// newMember is a participant of path in mode on ens, keeping its session
// in file (its own directory's "session" when file is ""), with env added.
func newMember(t *testing.T, ens *zktest.Ensemble, path, mode, id string, observer bool, env ...string) *member {
	dir := t.TempDir()
	m := &member{spec: electdtest.Spec{
		Name: id, Dir: dir, Env: env,
		Config: &electdtest.Config{
			ID: id, Servers: ens.Servers(), SessionTimeout: sessionTimeout, Path: path, Mode: mode,
			Observer: observer, LogLevel: "debug", LogFormat: "text",
		},
	}}
	m.spec.Args = []string{"--zookeeper.session_file", m.sessionFile()}
	t.Cleanup(func() {
		if t.Failed() && m.proc != nil {
			t.Logf("%s's log:\n%s", id, m.proc.LogTail(80))
		}
	})
	return m
}

// group is one election of one mode: a leader, the follower next in line
// and an observer, started in that order so that each has its role.
type group struct {
	mode    string
	path    string
	members []*member // leader, follower, observer
}

func (g *group) leader() *member { return g.members[0] }

func (g *group) procs() []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, m := range g.members {
		out = append(out, m.proc)
	}
	return out
}

// startGroup starts a group; args are added to every member's flags.
func startGroup(t *testing.T, ens *zktest.Ensemble, mode string, args ...string) *group {
	t.Helper()
	g := &group{mode: mode, path: fmt.Sprintf("/resume/%s-%d", mode, time.Now().UnixNano()%1e9)}
	for i, role := range []string{"leader", "follower", "observer"} {
		m := newMember(t, ens, g.path, mode, mode+"-"+role, role == "observer")
		m.spec.Args = append(m.spec.Args, args...)
		m.start(t)
		g.members = append(g.members, m)
		// Each in turn, so the queue's order is the start order.
		wait.For(t, 60*time.Second, m.proc.Name+" joined", func() bool {
			v, err := m.proc.View(context.Background())
			return err == nil && v.LeaderID() == g.leader().proc.Name && (i != 0 || v.Self.IsLeader)
		})
	}
	return g
}

// waitSettled waits until the leader leads and every participant names it.
func (g *group) waitSettled(t *testing.T) {
	t.Helper()
	for _, m := range g.members {
		wait.For(t, 60*time.Second, m.proc.Name+" connected and naming "+g.leader().proc.Name, func() bool {
			v, err := m.proc.View(context.Background())
			return err == nil && v.Self.State == "connected" && v.LeaderID() == g.leader().proc.Name &&
				v.Self.IsLeader == (m == g.leader())
		})
	}
}

func sessionOf(t *testing.T, p *electdtest.Proc) int64 {
	t.Helper()
	s := electdtest.Bind(t, p).ViewOf().Self.Session
	id, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("%s: session %q: %v", p.Name, s, err)
	}
	return int64(id)
}

// renewals counts the lease renewals the process made (the histogram's
// samples): 0 before its first.
func renewals(t *testing.T, p *electdtest.Proc) uint64 {
	t.Helper()
	mfs, err := p.Metrics(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mf, ok := mfs["electd_lease_renewal_seconds"]
	if !ok || len(mf.GetMetric()) == 0 {
		t.Fatalf("%s: no electd_lease_renewal_seconds", p.Name)
	}
	return mf.GetMetric()[0].GetHistogram().GetSampleCount()
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
