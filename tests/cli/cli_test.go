package cli

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/testkit/testcert"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// rowRE matches one participant row of `electd status`.
var rowRE = regexp.MustCompile(`(?m)^\| +(\d+) \| (\S+)( \*)? +\| (\S*) +\| (Leader|Follower) +\| (\S+) +\| +(\S+) \| +(\S*) \|$`)

// TestE2EStatusAndRelease runs the real binary's commands against three
// real sidecars on a real ZooKeeper.
func TestE2EStatusAndRelease(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/cli", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	follower := electdtest.Others(ps, leader)[0]
	wait.For(t, 10*time.Second, "the full queue", func() bool { return len(follower.Queue()) == 3 })

	// status on a follower: the queue as /participants has it.
	status, stdout, stderr := electdtest.Run(t, nil, "status", "--addr", "http://"+follower.Addr).Outcome()
	t.Logf("electd status on %s:\n%s", follower.Name, stdout)
	if status != exitOK {
		t.Fatalf("status: %d, %s", status, stderr)
	}
	rows := rowRE.FindAllStringSubmatch(stdout, -1)
	parts := follower.Queue()
	if len(rows) != len(parts) {
		t.Fatalf("%d rows, /participants has %d", len(rows), len(parts))
	}
	for i, r := range rows {
		p := parts[i]
		wantRole := map[bool]string{true: "Leader", false: "Follower"}[p.IsLeader]
		if r[1] != fmt.Sprint(i+1) || r[2] != p.ID || r[4] != p.Advertise || r[5] != wantRole || r[7] != fmt.Sprint(*p.FencingToken) {
			t.Errorf("row %d %q, want %s %s %s token %d", i+1, r[0], p.ID, p.Advertise, wantRole, *p.FencingToken)
		}
		if self := r[3] != ""; self != (p.ID == follower.Name) {
			t.Errorf("row %d: marked as asked: %v", i+1, self)
		}
	}
	if rows[0][2] != leader.Name || !strings.Contains(stdout, "* "+follower.Name+" (asked): following "+leader.Name) {
		t.Errorf("the leader %s is not first, or the footer is wrong:\n%s", leader.Name, stdout)
	}

	// status on the leader shows its lease.
	_, stdout, _ = electdtest.Run(t, nil, "status", "--addr", leader.Addr).Outcome()
	if r := rowRE.FindStringSubmatch(stdout); r == nil || r[2] != leader.Name || r[3] == "" || !strings.HasSuffix(r[8], "s") {
		t.Errorf("status on the leader: no lease on its own row:\n%s", stdout)
	}

	// release on a follower: the daemon's 409, exit 1.
	tokenEnv := []string{"ELECTD_HTTP_ADMIN_TOKEN=" + electdtest.AdminToken}
	status, _, stderr = electdtest.Run(t, tokenEnv, "release", "--addr", follower.Addr).Outcome()
	if status != exitFailed || !strings.Contains(stderr, `409 Conflict: {"error":"not the leader"}`) {
		t.Errorf("release on a follower: %d %q", status, stderr)
	}
	// A wrong token: 401, exit 1.
	status, _, stderr = electdtest.Run(t, []string{"ELECTD_HTTP_ADMIN_TOKEN=wrong"}, "release", "--addr", leader.Addr).Outcome()
	if status != exitFailed || !strings.Contains(stderr, "401 Unauthorized") {
		t.Errorf("release with a wrong token: %d %q", status, stderr)
	}

	// release on the leader: the next in line leads, and says so.
	next := parts[1].ID
	status, stdout, stderr = electdtest.Run(t, tokenEnv, "release", "--addr", leader.Addr).Outcome()
	t.Logf("electd release on %s:\n%s", leader.Name, stdout)
	if status != exitOK || !strings.HasPrefix(stdout, leader.Name+" released leadership (fencing token ") ||
		!strings.Contains(stdout, "\n"+next+" leads now (fencing token ") {
		t.Errorf("release: %d, stdout %q, stderr %q; want %s to lead", status, stdout, stderr, next)
	}
	if l := electdtest.OneLeader(t, ps, 10*time.Second); l.Name != next {
		t.Errorf("%s leads after the release, want %s", l.Name, next)
	}

	// Nothing listens: exit 3.
	if status, _, _ := electdtest.Run(t, nil, "status", "--addr", electdtest.MustFreeAddr(t)).Outcome(); status != exitUnreachable {
		t.Errorf("status of nothing: %d, want 3", status)
	}
}

// `release --to` with an id nobody has exits 1 whatever the daemon does
// with it: a daemon with switchover refuses, one without releases to the
// next in line, who is not the one asked for.
func TestE2EReleaseToNobodyFails(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/cli-to", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_HTTP_ADMIN_TOKEN=" + electdtest.AdminToken}, "release", "--addr", leader.Addr, "--to", "nobody").Outcome()
	t.Logf("release --to nobody: %d\n%s%s", status, stdout, stderr)
	if status != exitFailed || !strings.Contains(stderr, "nobody") {
		t.Errorf("release --to nobody: status %d, stderr %q; want 1 naming nobody", status, stderr)
	}
	electdtest.OneLeader(t, ps, 10*time.Second) // and the election still has one leader
}

// TestE2EStatusWatch follows a release through --watch, then interrupts it.
func TestE2EStatusWatch(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/cli-watch", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	follower := electdtest.Others(ps, leader)[0]

	w := startWatch(t, follower.Addr)
	wait.For(t, 10*time.Second, "the first table", func() bool { return strings.Contains(w.output(), "following "+leader.Name) })
	if st, _ := leader.Request("POST", "/leader/release", electdtest.AdminToken); st != 202 {
		t.Fatalf("release: %d", st)
	}
	newLeader := electdtest.OneLeader(t, ps, 10*time.Second)
	wait.For(t, 10*time.Second, "a redraw naming "+newLeader.Name, func() bool {
		return strings.Contains(w.output(), "following "+newLeader.Name) || strings.Contains(w.output(), "* "+follower.Name+" (asked): leader")
	})
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		if status := electdtest.ExitStatus(err); status != exitOK {
			t.Errorf("watch exited %d on SIGINT, want 0", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not exit on SIGINT")
	}
	t.Logf("electd status --watch on %s:\n%s", follower.Name, w.output())
}

// watchProc is a running `electd status --watch`. Process handling stays
// in this helper so that a shared test harness can replace it.
type watchProc struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	out  strings.Builder
}

func startWatch(t *testing.T, addr string) *watchProc {
	t.Helper()
	w := &watchProc{done: make(chan error, 1)}
	w.cmd = exec.Command(electdtest.Binary(t), "status", "--watch", "--addr", addr)
	w.cmd.Env = electdtest.CleanEnviron()
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = w.cmd.Stdout
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.mu.Lock()
			w.out.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		w.done <- w.cmd.Wait()
	}()
	t.Cleanup(func() { _ = w.cmd.Process.Kill() })
	return w
}

func (w *watchProc) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// TestE2ECLIOverTLS: against an electd serving HTTPS with a certificate of
// a private CA, electd status and electd release trust it through
// --cacert, and without it refuse the certificate (no answer: 3).
func TestE2ECLIOverTLS(t *testing.T) {
	zk := zktest.Standalone(t)
	ca := testcert.NewCA(t, "electd test CA")
	leaf := ca.Issue(t, "electd", "127.0.0.1")
	dir := t.TempDir()
	cert := testcert.Write(t, dir, "tls.crt", leaf.CertPEM)
	key := testcert.Write(t, dir, "tls.key", leaf.KeyPEM)
	caFile := testcert.Write(t, dir, "ca.pem", ca.CertPEM)
	addr := electdtest.MustFreeAddr(t)
	electdtest.StartArgs(t, "secure", addr, electdtest.MemberArgs(zk, "/e2e/tls", "secure", "latch", addr,
		"--http.tls_cert_file", cert, "--http.tls_key_file", key), nil)
	url := "https://" + addr

	var stdout, stderr string
	wait.For(t, 30*time.Second, "electd status over TLS", func() bool {
		var status int
		status, stdout, stderr = electdtest.Run(t, nil, "status", "--addr", url, "--cacert", caFile).Outcome()
		return status == exitOK
	})
	if rows := rowRE.FindAllStringSubmatch(stdout, -1); len(rows) != 1 || rows[0][2] != "secure" || rows[0][5] != "Leader" {
		t.Errorf("status over TLS:\n%s%s", stdout, stderr)
	}
	if status, _, stderr := electdtest.Run(t, nil, "status", "--addr", url).Outcome(); status != exitUnreachable || !strings.Contains(stderr, "certificate") {
		t.Errorf("status without --cacert: %d %q; want 3 and the certificate refused", status, stderr)
	}
	status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_HTTP_ADMIN_TOKEN=" + electdtest.AdminToken}, "release", "--addr", url, "--cacert", caFile).Outcome()
	if status != exitOK || !strings.HasPrefix(stdout, "secure released leadership") || !strings.Contains(stdout, "secure leads now") {
		t.Errorf("release over TLS: %d\n%s%s", status, stdout, stderr)
	}
}
