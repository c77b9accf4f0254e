package execmode

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// electd run -- CMD on a real ZooKeeper: the command runs only on the
// leader, and never on two participants at once (execScript's flock)
// across a release, SIGTERM of electd, SIGKILL of electd, and the loss of
// the lease while electd is stopped (internal/execmode's package doc).
func TestE2EExec(t *testing.T) {
	zk := zktest.Standalone(t)
	dir := t.TempDir()
	const path = "/e2e/exec"
	extra := []string{"--exec.kill_timeout", "2s", "--log.level", "debug"}
	var ps []*electdtest.Member
	for _, id := range []string{"a", "b", "c"} {
		ps = append(ps, startExecMember(t, zk, path, id, dir, extra))
	}
	electdtest.WaitOK(t, "/healthz", 30*time.Second, ps...)
	lead1 := electdtest.OneLeader(t, ps, 15*time.Second)
	first := waitStart(t, dir, 1, 10*time.Second)
	v, err := lead1.LeaderNow()
	if err != nil {
		t.Fatal(err)
	}
	if first.Name != lead1.Name || first.token != v.Leader.FencingToken {
		t.Fatalf("the first command: %+v; the leader is %s with token %d", first, lead1.Name, v.Leader.FencingToken)
	}
	if tok, _ := os.ReadFile(filepath.Join(dir, "token."+lead1.Name)); strings.TrimSpace(string(tok)) != fmt.Sprint(v.Leader.FencingToken) {
		t.Errorf("the command wrote token %q, want %d", tok, v.Leader.FencingToken)
	}
	wait.For(t, 5*time.Second, "the command's stdout in electd's output", func() bool {
		return lead1.LogHas("command of " + lead1.Name + " says hello on stdout")
	})
	electdtest.CheckAgreement(t, ps, lead1) // the HTTP API works as usual
	if n := len(starts(t, dir)); n != 1 {
		t.Fatalf("%d commands started, want the leader's alone:\n%s", n, readLog(dir))
	}

	// Release: the command stops (SIGTERM) before leadership goes.
	if code, body := lead1.Request(http.MethodPost, "/leader/release", electdtest.AdminToken); code != http.StatusAccepted {
		t.Fatalf("release: %d %s", code, body)
	}
	second := waitStart(t, dir, 2, 15*time.Second)
	if !has(t, dir, "term", first.pid) {
		t.Errorf("%s's command got no SIGTERM:\n%s", lead1.Name, readLog(dir))
	}
	noOverlap(t, dir)
	lead2 := electdtest.ByID(ps, second.Name)
	t.Logf("release: %s's command (pid %d) stopped, %s's started with token %d", lead1.Name, first.pid, lead2.Name, second.token)

	// SIGTERM to electd: the command stops, then electd releases and exits 0.
	lead2.Send(syscall.SIGTERM)
	third := waitStart(t, dir, 3, 15*time.Second)
	if err := lead2.WaitExit(15 * time.Second); err != nil {
		t.Errorf("%s exited with %v after SIGTERM, want 0", lead2.Name, err)
	}
	if !has(t, dir, "term", second.pid) || pidAlive(second.pid) {
		t.Errorf("%s's command (pid %d) did not stop on electd's SIGTERM:\n%s", lead2.Name, second.pid, readLog(dir))
	}
	noOverlap(t, dir)
	lead3 := electdtest.ByID(ps, third.Name)
	t.Logf("SIGTERM: %s and its command ended; %s's command started with token %d", lead2.Name, lead3.Name, third.token)

	// A fresh participant, so that two are left after the next step.
	d := startExecMember(t, zk, path, "d", dir, extra)
	electdtest.WaitOK(t, "/healthz", 30*time.Second, d)
	var queue []api.Participant
	wait.For(t, 10*time.Second, "d in the queue", func() bool { queue = lead3.Queue(); return len(queue) == 3 })
	// Who is next is the queue's business, not the test's: the SIGTERM's
	// hand-over above went to the participant whose session joined last
	// (docs/design/handover.md, "Handoff"), which may be the one that released.
	lead4 := electdtest.ByID(append(ps, d), queue[1].ID)
	if queue[0].ID != lead3.Name || lead4 == nil || lead4 == d {
		t.Fatalf("the queue is %+v, want %s first and an old participant next, d last", queue, lead3.Name)
	}

	// SIGKILL to electd: its command dies with it, at once (the guard sees
	// its pipe close), long before the session ends and the next leads.
	lead3.Send(syscall.SIGKILL)
	killed := time.Now()
	wait.For(t, 10*time.Second, lead3.Name+"'s command to die with it", func() bool { return !pidAlive(third.pid) })
	t.Logf("SIGKILL: %s's command (pid %d) gone %d ms after electd", lead3.Name, third.pid, time.Since(killed).Milliseconds())
	fourth := waitStart(t, dir, 4, 20*time.Second)
	noOverlap(t, dir)
	if fourth.Name != lead4.Name {
		t.Errorf("%s started after %s's SIGKILL, want %s (next in the queue)", fourth.Name, lead3.Name, lead4.Name)
	}
	t.Logf("SIGKILL: %s's command started %d ms after %s's SIGKILL (the session timeout is 4s)",
		fourth.Name, time.Since(killed).Milliseconds(), lead3.Name)

	// The lease ends while electd is stopped: the guard kills the command
	// at the lease's end, before the session can expire and d can lead.
	lead4.Send(syscall.SIGSTOP)
	stopped := time.Now()
	wait.For(t, 15*time.Second, lead4.Name+"'s command to die at the end of its lease", func() bool { return !pidAlive(fourth.pid) })
	t.Logf("lease: %s stopped; its command killed %d ms later", lead4.Name, time.Since(stopped).Milliseconds())
	fifth := waitStart(t, dir, 5, 20*time.Second)
	t.Logf("lease: %s's command started %d ms after %s stopped", fifth.Name, time.Since(stopped).Milliseconds(), lead4.Name)
	lead4.Send(syscall.SIGCONT)
	noOverlap(t, dir)
	if fifth.Name != d.Name {
		t.Errorf("%s started while %s was stopped, want %s", fifth.Name, lead4.Name, d.Name)
	}
	wait.For(t, 15*time.Second, lead4.Name+" to rejoin and log the lease's end", func() bool {
		return lead4.LogHas(`"how":"lease, killed by SIGKILL"`) && len(d.Queue()) == 2
	})
	if l := electdtest.OneLeader(t, []*electdtest.Member{lead4, d}, 10*time.Second); l != d {
		t.Errorf("%s leads after %s resumed, want %s", l.Name, lead4.Name, d.Name)
	}
	if n := len(starts(t, dir)); n != 5 {
		t.Errorf("%d commands started, want 5:\n%s", n, readLog(dir))
	}
	noOverlap(t, dir)
}

// A command that ignores SIGTERM is SIGKILLed at exec.kill_timeout; a
// withdrawal waits for it before it lets go.
func TestE2EExecKillTimeout(t *testing.T) {
	zk := zktest.Standalone(t)
	dir := t.TempDir()
	p := startExecMember(t, zk, "/e2e/exec-kill", "p", dir, []string{"--exec.kill_timeout", "1s"}, "EXEC_IGNORE_TERM=1")
	electdtest.WaitOK(t, "/healthz", 30*time.Second, p)
	electdtest.OneLeader(t, []*electdtest.Member{p}, 15*time.Second)
	s := waitStart(t, dir, 1, 10*time.Second)
	code, b := p.Post("/candidacy", electdtest.AdminToken, `{"candidate": false}`)
	if code != http.StatusOK {
		t.Fatalf("POST /candidacy: %d %s", code, b)
	}
	if pidAlive(s.pid) || !has(t, dir, "ignored", s.pid) {
		t.Errorf("after the withdrawal the command (pid %d) runs, or got no SIGTERM:\n%s", s.pid, readLog(dir))
	}
	if !p.LogHasWithin(`"how":"stopped, killed by SIGKILL"`, 5*time.Second) {
		t.Error("electd did not log the SIGKILL")
	}
	if p.Leads() {
		t.Error("still leads after the withdrawal")
	}
}

// exec.on_exit: what electd does when the command exits on its own.
func TestE2EExecOnExit(t *testing.T) {
	zk := zktest.Standalone(t)

	t.Run("release", func(t *testing.T) {
		dir := t.TempDir()
		a := startExecMember(t, zk, "/e2e/exec-release", "a", dir, nil, "EXEC_EXIT=0")
		electdtest.WaitOK(t, "/healthz", 30*time.Second, a)
		electdtest.OneLeader(t, []*electdtest.Member{a}, 15*time.Second)
		b := startExecMember(t, zk, "/e2e/exec-release", "b", dir, nil, "EXEC_EXIT=0")
		electdtest.WaitOK(t, "/healthz", 30*time.Second, b)
		// a's command exits (at once, and again after each backoff) and a
		// releases: b leads and runs its own.
		wait.For(t, 20*time.Second, "b's command", func() bool {
			for _, e := range starts(t, dir) {
				if e.Name == "b" {
					return true
				}
			}
			return false
		})
		if !a.LogHasWithin(`"msg":"exec.on_exit: released leadership"`, 5*time.Second) {
			t.Error("a did not release")
		}
		noOverlap(t, dir)
	})

	t.Run("restart", func(t *testing.T) {
		dir := t.TempDir()
		p := startExecMember(t, zk, "/e2e/exec-restart", "p", dir, []string{"--exec.on_exit", "restart"}, "EXEC_EXIT=0")
		electdtest.WaitOK(t, "/healthz", 30*time.Second, p)
		s := waitStart(t, dir, 2, 20*time.Second) // after a 1s backoff
		if first := starts(t, dir)[0]; s.Name != "p" || s.token != first.token {
			t.Errorf("restart: %+v after %+v, want the same leadership", s, first)
		}
		if !p.Leads() {
			t.Error("a restart gave leadership up")
		}
	})

	t.Run("exit", func(t *testing.T) {
		for _, c := range []struct {
			code, want int
		}{{0, 0}, {3, 1}} {
			dir := t.TempDir()
			p := startExecMember(t, zk, "/e2e/exec-exit", "p", dir, []string{"--exec.on_exit", "exit"}, fmt.Sprintf("EXEC_EXIT=%d", c.code))
			if got := electdtest.ExitStatus(p.WaitExit(30 * time.Second)); got != c.want {
				t.Errorf("the command exited %d: electd exited %d, want %d", c.code, got, c.want)
			}
			if !p.LogHas(`"msg":"shut down"`) {
				t.Error("electd did not shut down gracefully")
			}
		}
	})
}

// electd run refuses what it cannot do, before it connects.
func TestBinaryExecBadUsage(t *testing.T) {
	base := []string{"--zookeeper.servers", "127.0.0.1:1", "--election.path", "/x"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append([]string{"run"}, base...), "--"), "electd: run: give the command after --"},
		{append([]string{"run"}, base...), "electd: run: give the command after --"},
		{append(append([]string{"run"}, base...), "--", "/nonexistent/cmd"), "electd: run: exec: \"/nonexistent/cmd\""},
		{append(append([]string{"run"}, base...), "--exec.kill_timeout", "10s", "--shutdown_timeout", "10s", "--", "true"), "electd: exec.kill_timeout: 10s must be shorter than shutdown_timeout (10s)"},
		{append(append([]string{"run"}, base...), "--election.mode", "selector", "--election.term", "1m", "--", "true"), "electd: election.term: electd run cannot stop"},
		{append(append([]string{"run"}, base...), "--exec.on_exit", "again", "--", "true"), "electd: exec.on_exit:"},
	} {
		status, _, stderr := electdtest.Run(t, nil, c.args...).Outcome()
		if status != 2 || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", c.args, status, stderr, c.want)
		}
	}
	status, stdout, _ := electdtest.Run(t, nil, "run", "--help").Outcome()
	if status != 0 || !strings.Contains(stdout, "Exec mode: electd run") || !strings.Contains(stdout, "ELECTD_FENCING_TOKEN") {
		t.Errorf("electd run --help: %d\n%s", status, stdout)
	}
}
