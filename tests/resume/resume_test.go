package resume

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// cases are the elections a killed leader resumes in: every mode, and
// with ZooKeeper credentials, as the shipped manifests run (a resumed
// connection must add them again before it may touch its node). The -app
// cases check an application's health (app.health_url), as the shipped
// manifests do: the application never stops, so its leader stands on.
var cases = []struct{ name, mode string }{{"latch", "latch"}, {"selector", "selector"}, {"race", "race"},
	{"latch-auth", "latch"}, {"latch-app", "latch"}, {"race-app", "race"}}

const (
	resumedLine = "zookeeper session resumed"
	// standsLine says a resumed candidate stands before its first check.
	standsLine = "the session was resumed, so standing unless the first check fails"
)

// The leader's electd SIGKILLed and started again at once, in every mode:
// it resumes its session and leads on with the same node and fencing
// token; nobody saw the leader change; its first 200 comes with a lease
// proved on the resumed session; and every participant is idle again, with
// the watches it had.
func TestKilledLeaderResumes(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{})
	for _, c := range cases {
		mode := c.name
		t.Run(c.name, func(t *testing.T) {
			var args []string
			withApp := strings.HasSuffix(c.name, "-app")
			switch {
			case c.name == "latch-auth":
				args = []string{"--zookeeper.auth", "electd:s3cret"}
			case withApp:
				// One timeout long enough for a loaded machine: a failed first
				// check would rightly withdraw the resumed leader.
				args = []string{"--app.health_url", startApp(t), "--app.health_interval", "2s", "--app.health_timeout", "2s"}
			}
			g := startGroup(t, ens, c.mode, args...)
			g.waitSettled(t)
			l := g.leader()
			was := electdtest.Bind(t, l.proc).ViewOf()
			sid := sessionOf(t, l.proc)
			changes := map[string]float64{}
			for _, m := range g.members[1:] {
				changes[m.proc.Name] = electdtest.Bind(t, m.proc).MetricOf("electd_leader_changes_total")
			}
			rest, err := electdtest.Rests(ctxFor(t, 30*time.Second), g.procs(), window)
			if err != nil {
				t.Fatal(err)
			}
			watches := sessionWatches(t, ens, g)

			killed := time.Now()
			l.proc.Kill()
			l.start(t)
			first := waitLeads(t, l.proc)
			t.Logf("%s: leading again %v after the SIGKILL (lease %v ms, token %d)", mode,
				time.Since(killed).Round(time.Millisecond), first.LeaseRemainingMs, first.FencingToken)
			if first.LeaseRemainingMs <= 0 {
				t.Errorf("first 200 with lease %v ms, want a lease proved on the resumed session", first.LeaseRemainingMs)
			}
			if n := renewals(t, l.proc); n == 0 {
				t.Error("leading again with no lease renewal made by the restarted process")
			}
			if got := sessionOf(t, l.proc); got != sid {
				t.Fatalf("restarted in session %#x, was %#x", got, sid)
			}
			now := electdtest.Bind(t, l.proc).ViewOf()
			if now.Leader.Node != was.Leader.Node || now.Leader.FencingToken != was.Leader.FencingToken ||
				first.FencingToken != was.Leader.FencingToken {
				t.Errorf("leads with node %s token %d (healthz %d), was %s token %d", now.Leader.Node,
					now.Leader.FencingToken, first.FencingToken, was.Leader.Node, was.Leader.FencingToken)
			}
			if n := electdtest.Bind(t, l.proc).LogCount(resumedLine); n != 1 {
				t.Errorf("%q logged %d times, want once", resumedLine, n)
			}
			if n := electdtest.Bind(t, l.proc).LogCount(standsLine); withApp && n != 1 {
				t.Errorf("%q logged %d times, want once", standsLine, n)
			}
			g.waitSettled(t)
			for _, m := range g.members[1:] {
				if got := electdtest.Bind(t, m.proc).MetricOf("electd_leader_changes_total"); got != changes[m.proc.Name] {
					t.Errorf("%s saw %v leader changes, had seen %v: the restart changed the leader",
						m.proc.Name, got, changes[m.proc.Name])
				}
			}
			if err := electdtest.WaitIdle(ctxFor(t, 45*time.Second), g.procs(), rest, window); err != nil {
				t.Error(err)
			}
			wait.For(t, 30*time.Second, "the watches set before the restart, and no others", func() bool {
				return reflect.DeepEqual(sessionWatches(t, ens, g), watches)
			})
		})
	}
}

// startApp serves an application that is always healthy and returns its
// health URL.
func startApp(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/healthz"
}

// waitLeads polls /healthz/leader until it answers 200 and returns that
// answer; any 200 must carry a lease.
func waitLeads(t *testing.T, p *electdtest.Proc) electdtest.Health {
	t.Helper()
	var h electdtest.Health
	wait.For(t, 30*time.Second, p.Name+" leading again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		h, err = p.LeaderHealth(ctx)
		return err == nil && h.Status == http.StatusOK
	})
	return h
}

// sessionWatches reads the servers' watches of every member's session.
func sessionWatches(t *testing.T, ens *zktest.Ensemble, g *group) map[int64][]string {
	t.Helper()
	all, err := ens.Watches()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, m := range g.members {
		sid := sessionOf(t, m.proc)
		out[sid] = all[sid]
	}
	return out
}

// The leader SIGKILLed and started again only after ZooKeeper expired its
// session: it says so, joins anew behind the new leader, and keeps the new
// session in its file.
func TestRestartAfterExpiryJoinsAnew(t *testing.T) {
	t.Parallel()
	g := settledLatch(t)
	l, next := g.leader(), g.members[1]
	old := sessionOf(t, l.proc)
	l.proc.Kill()
	wait.For(t, 60*time.Second, next.proc.Name+" leading after the session expired", func() bool {
		return next.proc.IsLeader(context.Background())
	})
	l.start(t)
	wait.For(t, 60*time.Second, l.proc.Name+" following "+next.proc.Name, func() bool {
		v, err := l.proc.View(context.Background())
		return err == nil && v.LeaderID() == next.proc.Name && v.Self.State == "connected"
	})
	sid := sessionOf(t, l.proc)
	if sid == old {
		t.Fatalf("still in session %#x, which expired", old)
	}
	if !l.proc.LogHas("zookeeper session not resumed: zookeeper answered that it expired") || l.proc.LogHas(resumedLine) {
		t.Errorf("the restart did not say that the session had expired")
	}
	wait.For(t, 30*time.Second, "the new session kept in the file", func() bool {
		return keptSession(t, l.sessionFile()) == sid
	})
}

// settledLatch starts a latch group on a fresh ensemble and waits until
// every member names its leader.
func settledLatch(t *testing.T) *group {
	t.Helper()
	g := startGroup(t, zktest.Start(t, zktest.Options{}), "latch")
	g.waitSettled(t)
	return g
}

// keptLeader starts web-1 alone on path with env, waits until it leads and
// its session file holds its session, and returns it and that session.
func keptLeader(t *testing.T, ens *zktest.Ensemble, path string, env ...string) (*member, int64) {
	t.Helper()
	a := newMember(t, ens, path, "latch", "web-1", false, env...)
	a.start(t)
	wait.For(t, 60*time.Second, "web-1 leading", func() bool { return a.proc.IsLeader(context.Background()) })
	sid := sessionOf(t, a.proc)
	wait.For(t, 30*time.Second, "the session kept", func() bool { return keptSession(t, a.sessionFile()) == sid })
	return a, sid
}

// keptSession is the session a session file holds, 0 when none.
func keptSession(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Session int64 }
	if len(b) > 0 {
		if err := json.Unmarshal(b, &r); err != nil {
			return 0 // being written
		}
	}
	return r.Session
}

// A file written by another pod (a copied volume: another POD_UID) is not
// resumed: the process takes a session of its own.
func TestFileOfAnotherPodIgnored(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{})
	a, old := keptLeader(t, ens, "/resume/pod", "POD_UID=pod-a")
	a.proc.Kill()
	a.spec.Env = []string{"POD_UID=pod-b"}
	a.start(t)
	// The old session still holds the id: the new one waits as a duplicate.
	v := connected(t, a.proc)
	if sid := electdtest.SessionID(v.Self.Session); sid == old {
		t.Fatalf("resumed session %#x from another pod's file", old)
	}
	if !a.proc.LogHas("zookeeper session not resumed: the session file belongs to another pod or configuration") ||
		a.proc.LogHas(resumedLine) {
		t.Error("the restart did not say why it did not resume")
	}
}

// Two processes on one session file: the second neither resumes nor
// writes it, and the first keeps its session and leadership.
func TestSecondProcessOnOneFile(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.Options{})
	const path = "/resume/two"
	a, sid := keptLeader(t, ens, path)

	b := newMember(t, ens, path, "latch", "web-1", false)
	b.spec.Name = "web-1-second"
	b.spec.Args = []string{"--zookeeper.session_file", a.sessionFile()}
	b.start(t)
	// Its id is the first's: it stays out as a duplicate, /leader answers 503.
	v := connected(t, b.proc)
	if got := v.Self.Session; electdtest.SessionID(got) == sid {
		t.Fatalf("the second process took session %#x", sid)
	}
	if !b.proc.LogHas("zookeeper session not resumed, nor kept for a restart: another process holds the session file") {
		t.Error("the second process did not say why it did not resume")
	}
	if got := sessionOf(t, a.proc); got != sid || !a.proc.IsLeader(context.Background()) {
		t.Errorf("the first process is in session %#x (was %#x), leading %v", got, sid, a.proc.IsLeader(context.Background()))
	}
	if got := keptSession(t, a.sessionFile()); got != sid {
		t.Errorf("the file holds session %#x, want the first process's %#x", got, sid)
	}
}

// connected waits until p's /leader, 200 or 503 (a duplicate id knows no
// leader), says it is connected, and returns that answer.
func connected(t *testing.T, p *electdtest.Proc) api.Leader {
	t.Helper()
	m := electdtest.Bind(t, p)
	var v api.Leader
	wait.For(t, 60*time.Second, p.Name+" connected", func() bool {
		st, body := m.Fetch("/leader")
		return st != 0 && json.Unmarshal(body, &v) == nil && v.Self.State == "connected"
	})
	return v
}

// The follower next in line SIGKILLed and restarted at once keeps its
// session and its node, so its place: nobody moves up, nobody sees a change.
func TestKilledFollowerKeepsItsPlace(t *testing.T) {
	t.Parallel()
	g := settledLatch(t)
	f := g.members[1]
	sid := sessionOf(t, f.proc)
	queue := electdtest.Bind(t, g.leader().proc).Queue()
	f.proc.Kill()
	f.start(t)
	g.waitSettled(t)
	if got := sessionOf(t, f.proc); got != sid {
		t.Fatalf("restarted in session %#x, was %#x", got, sid)
	}
	if got := electdtest.Bind(t, g.leader().proc).Queue(); !reflect.DeepEqual(got, queue) {
		t.Errorf("queue %+v after the restart, was %+v", got, queue)
	}
	if !f.proc.LogHas("adopted the own node of the resumed session") {
		t.Error("the follower did not adopt its node")
	}
}
