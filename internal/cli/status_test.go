package cli

import (
	"context"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/testkit"
)

func TestStatusTableFromAFollower(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2", "web-3"}, 0, 1)
	status, stdout, stderr := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if status != exitOK || stderr != "" {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	want := `
| # | Member  | Advertise     | Role     | State     | Token | Lease |
+---+---------+---------------+----------+-----------+-------+-------+
| 1 | web-1   | 10.0.0.7:8080 | Leader   | joined    |     7 |       |
| 2 | web-2 * | 10.0.0.8:8080 | Follower | connected |    10 |       |
| 3 | web-3   | 10.0.0.9:8080 | Follower | joined    |    13 |       |
+---+---------+---------------+----------+-----------+-------+-------+
* web-2 (asked): following web-1
`
	if !strings.HasPrefix(stdout, "+ Election: /services/web (latch) at "+srv.URL+" -") || !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout:\n%s\nwant the title in the top border, then:%s", stdout, want)
	}
}

func TestStatusTableFromTheLeader(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 0)
	status, stdout, _ := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if status != exitOK {
		t.Fatalf("status %d", status)
	}
	for _, s := range []string{
		"| 1 | web-1 * | 10.0.0.7:8080 | Leader   | connected |     7 | 6.26s |",
		"| 2 | web-2   | 10.0.0.8:8080 | Follower | joined    |    10 |       |",
		"* web-1 (asked): leader\n",
	} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
}

func TestStatusNoLeaderExits4(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1"}, -1, 0)
	status, stdout, _ := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if status != exitNoLeader || !strings.HasSuffix(stdout, "no leader known\n") {
		t.Errorf("status %d, stdout:\n%s\nwant 4 and 'no leader known'", status, stdout)
	}
}

// /participants reads ZooKeeper; when it cannot, the daemon's error is
// shown with what /leader still says, and status exits 1.
func TestStatusParticipantsUnavailableExits1(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 1)
	f.participants, f.partsErr = nil, `{"error":"cannot read the participants from ZooKeeper: zk: could not connect to a server"}`
	status, stdout, stderr := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if status != exitFailed {
		t.Errorf("status %d, want 1", status)
	}
	if !strings.Contains(stdout, "Election: /services/web (latch)") || !strings.Contains(stdout, "503 Service Unavailable") ||
		!strings.Contains(stderr, `{"error":"cannot read the participants from ZooKeeper`) {
		t.Errorf("stdout:\n%s\nstderr: %s", stdout, stderr)
	}
}

func TestStatusUnreachableExits3(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	status, stdout, stderr := runCLI(t, context.Background(), nil, "status", "--addr", addr)
	if status != exitUnreachable || stdout != "" || !strings.Contains(stderr, "connection refused") {
		t.Errorf("status %d, stdout %q, stderr %q; want 3 and the reason", status, stdout, stderr)
	}
}

func TestStatusUsageExits2(t *testing.T) {
	for _, args := range [][]string{
		{"status", "--bogus"},
		{"status", "extra"},
		{"status", "--addr", "ftp://x:1"},
		{"status", "--addr", "http://x:1/path"},
		{"status", "--timeout", "0s"},
		{"release", "--to", ""},
		{"release", "--wait", "-1s"},
	} {
		status, stdout, stderr := runCLI(t, context.Background(), map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t"}, args...)
		if status != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--help") {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want 2 and one line", args, status, stdout, stderr)
		}
	}
}

// A long flag may have one dash, as Go's flag package takes it, like the
// daemon's (issue 40); a value with a dash stays a value.
func TestOneDashFlags(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1"}, 0, 0)
	if status, stdout, stderr := runCLI(t, context.Background(), nil, "status", "-addr", srv.URL, "-timeout=5s"); status != exitOK || !strings.Contains(stdout, "web-1 (asked): leader") {
		t.Errorf("status -addr -timeout=: %d %q %q", status, stdout, stderr)
	}
	if status, stdout, _ := runCLI(t, context.Background(), nil, "release", "-help"); status != exitOK || !strings.HasPrefix(stdout, "Usage: electd release") {
		t.Errorf("release -help: %d %q", status, stdout)
	}
	if status, _, stderr := runCLI(t, context.Background(), nil, "status", "--timeout", "-watch"); status != exitUsage || !strings.Contains(stderr, `"-watch" for "--timeout"`) {
		t.Errorf("status --timeout -watch: %d %q; want -watch taken as the timeout", status, stderr)
	}
}

func TestHelpDocumentsExitStatuses(t *testing.T) {
	for _, cmd := range []string{"status", "release"} {
		status, stdout, _ := runCLI(t, context.Background(), nil, cmd, "--help")
		if status != exitOK || !strings.HasPrefix(stdout, "Usage: electd "+cmd) || !strings.Contains(stdout, "Exit status: 0") {
			t.Errorf("%s --help: %d\n%s", cmd, status, stdout)
		}
	}
}

func TestDefaultAddrFromHTTPAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":               "http://localhost:4040",
		":4040":          "http://localhost:4040",
		"0.0.0.0:4041":   "http://localhost:4041",
		"[::]:4042":      "http://localhost:4042",
		"127.0.0.1:4043": "http://127.0.0.1:4043",
		"[::1]:4044":     "http://[::1]:4044",
		"nonsense":       "http://localhost:4040",
		"127.0.0.1:0":    "http://127.0.0.1:0",
	} {
		if got := defaultAddr(in); got != want {
			t.Errorf("defaultAddr(%q) = %q, want %q", in, got, want)
		}
	}
	// The environment's http.addr is the default --addr.
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1"}, 0, 0)
	env := map[string]string{"ELECTD_HTTP_ADDR": strings.TrimPrefix(srv.URL, "http://")}
	if status, stdout, _ := runCLI(t, context.Background(), env, "status"); status != exitOK || !strings.Contains(stdout, "web-1 *") {
		t.Errorf("status with ELECTD_HTTP_ADDR: %d\n%s", status, stdout)
	}
}

// http.addr with port 0 (any free port) says nothing of the port bound: the
// command asks for --addr rather than dialling port 0.
func TestDefaultAddrWithPortZeroAsksForAddr(t *testing.T) {
	env := map[string]string{"ELECTD_HTTP_ADDR": "127.0.0.1:0"}
	status, stdout, stderr := runCLI(t, context.Background(), env, "status")
	if status != exitUsage || stdout != "" || !strings.Contains(stderr, "--addr: ELECTD_HTTP_ADDR has port 0") {
		t.Errorf("status %d, stdout %q, stderr %q; want 2 and a word about --addr", status, stdout, stderr)
	}
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1"}, 0, 0)
	if status, _, stderr := runCLI(t, context.Background(), env, "status", "--addr", srv.URL); status != exitOK {
		t.Errorf("with --addr: status %d, stderr %q", status, stderr)
	}
}

// --cacert trusts a private CA for an https:// daemon; without it the
// system's roots do not, and the daemon is unreachable (3).
func TestCACert(t *testing.T) {
	f, srv := newUnstartedFakeDaemon(t)
	srv.StartTLS()
	f.set([]string{"web-1"}, 0, 0)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if status, stdout, stderr := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL, "--cacert", ca); status != exitOK || !strings.Contains(stdout, "web-1 *") {
		t.Errorf("--cacert: status %d, stderr %q\n%s", status, stderr, stdout)
	}
	if status, _, stderr := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL); status != exitUnreachable || !strings.Contains(stderr, "certificate") {
		t.Errorf("without --cacert: status %d, stderr %q; want 3 and the certificate error", status, stderr)
	}
	for _, args := range [][]string{
		{"status", "--addr", srv.URL, "--cacert", "/nonexistent/ca.pem"},
		{"status", "--addr", srv.URL, "--cacert", "/etc/hostname"},
		{"status", "--addr", "http://127.0.0.1:1", "--cacert", ca},
	} {
		if status, _, stderr := runCLI(t, context.Background(), nil, args...); status != exitUsage || !strings.Contains(stderr, "--cacert: ") {
			t.Errorf("%v: status %d, stderr %q; want 2 naming --cacert", args, status, stderr)
		}
	}
}

// What participants publish reaches the operator's terminal: control
// characters must not.
func TestStatusCleansControlCharacters(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"evil\x1b[2J", "web-2"}, 1, 1)
	_, stdout, _ := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if strings.ContainsRune(stdout, '\x1b') || !strings.Contains(stdout, "evil\uFFFD[2J") {
		t.Errorf("stdout holds the escape sequence:\n%q", stdout)
	}
}

func TestWatchRedrawsOnEveryEvent(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testkit.Buffer
	done := make(chan int, 1)
	go func() { done <- runCLIWith(ctx, nil, &stdout, &stderr, "status", "--addr", srv.URL, "--watch") }()

	f.events <- "leader" // the view the daemon sends on connect
	testkit.For(t, 5*time.Second, "the first table", func() bool { return strings.Contains(stdout.String(), "* web-2 (asked): following web-1") })
	f.set([]string{"web-2", "web-1"}, 0, 0)
	f.events <- "leader"
	testkit.For(t, 5*time.Second, "a redraw with web-2 leading", func() bool { return strings.Contains(stdout.String(), "* web-2 (asked): leader") })
	frames := strings.Count(stdout.String(), "2026-11-23T11:09:08Z  (leader; every change, Ctrl-C to stop)")
	if frames < 2 {
		t.Errorf("%d frames, want one per event:\n%s", frames, stdout.String())
	}
	if strings.Contains(stdout.String(), clearScreen) {
		t.Error("cleared the screen of something that is not a terminal")
	}

	cancel() // Ctrl-C
	select {
	case status := <-done:
		if status != exitOK {
			t.Errorf("watch exited %d after an interrupt, want 0; stderr %q", status, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not stop after an interrupt")
	}
}

// A daemon that goes away is reconnected to; one that is not there at the
// start ends the command with 3.
func TestWatchReconnects(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1"}, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testkit.Buffer
	done := make(chan int, 1)
	go func() { done <- runCLIWith(ctx, nil, &stdout, &stderr, "status", "--addr", srv.URL, "--watch") }()
	f.events <- "leader"
	testkit.For(t, 5*time.Second, "the first table", func() bool { return strings.Contains(stdout.String(), "web-1 *") })
	close(f.events) // the stream ends
	testkit.For(t, 5*time.Second, "the reconnect message", func() bool { return strings.Contains(stderr.String(), "reconnecting") })
	cancel()
	if status := <-done; status != exitOK {
		t.Errorf("status %d after an interrupt, want 0", status)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if status, _, stderr := runCLI(t, context.Background(), nil, "status", "--addr", addr, "--watch"); status != exitUnreachable {
		t.Errorf("watch of nothing: status %d (%s), want 3", status, stderr)
	}
}

// Without --addr, a daemon that does not answer gets a hint that says
// which address was asked and how to ask another; with --addr it does not.
func TestStatusUnreachableWithoutAddrHints(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		hint string
	}{
		{"from ELECTD_HTTP_ADDR", map[string]string{"ELECTD_HTTP_ADDR": addr}, nil, "(from ELECTD_HTTP_ADDR, no --addr given); ask the one you started with --addr"},
		{"--addr", nil, []string{"--addr", addr}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, stderr := runCLI(t, context.Background(), tc.env, append([]string{"status"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			switch {
			case status != exitUnreachable || !strings.Contains(lines[0], "connection refused"):
				t.Errorf("status %d, stderr %q; want 3 and the reason", status, stderr)
			case tc.hint == "" && len(lines) != 1:
				t.Errorf("a hint after an --addr that was given: %q", stderr)
			case tc.hint != "" && (len(lines) != 2 || !strings.Contains(lines[1], "no electd answers at http://"+addr+" "+tc.hint)):
				t.Errorf("stderr %q; want a second line with %q", stderr, tc.hint)
			}
		})
	}
}

// Two participants with one id: only the asked one (by its session) is
// marked *, both are flagged !, and the footer says what to do.
func TestStatusMarksTheAskedBySessionAndFlagsDuplicates(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2", "web-2"}, 0, 2)
	status, stdout, _ := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if status != exitOK {
		t.Fatalf("status %d", status)
	}
	want := `
| 1 | web-1     | 10.0.0.7:8080 | Leader   | joined    |     7 |       |
| 2 | web-2 !   | 10.0.0.8:8080 | Follower | joined    |    10 |       |
| 3 | web-2 ! * | 10.0.0.9:8080 | Follower | connected |    13 |       |
+---+-----------+---------------+----------+-----------+-------+-------+
* web-2 (asked): following web-1
! duplicate id web-2: 2 participants have it, so /leader is ambiguous: give each sidecar a unique id, e.g. the pod name
`
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout:\n%s\nwant it to end with:%s", stdout, want)
	}
}

// A newer participant whose id another live one holds is not in the
// queue: no row is marked *, and the footer gives its reason.
func TestStatusAskedDuplicateIsNotInTheQueue(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 1)
	f.mu.Lock()
	f.leader = strings.Replace(f.leader, `"session":"0x11"`, `"session":"0x99"`, 1)
	reason := `duplicate id: another live participant (session 0x11) has id \"web-2\"; this one does not stand until it leaves: give each sidecar a unique id, e.g. the pod name`
	f.health = `{"is_leader":false,"reason":"` + reason + `","lease_remaining_ms":0,"fencing_token":null}`
	f.mu.Unlock()
	_, stdout, _ := runCLI(t, context.Background(), nil, "status", "--addr", srv.URL)
	if strings.Contains(stdout, " * ") {
		t.Errorf("a row is marked as the asked one:\n%s", stdout)
	}
	if want := "web-2 (asked) is not in the queue: " + strings.ReplaceAll(reason, `\"`, `"`) + "\n"; !strings.Contains(stdout, want) {
		t.Errorf("stdout:\n%s\nlacks %q", stdout, want)
	}
}
