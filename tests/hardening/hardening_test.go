package hardening

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// startBin runs bin like startElectd runs the test binary, with stderr
// (and stdout) going to out, which the caller owns, and cfg, if any, as
// its configuration file. log names a file to print when the test fails,
// or is empty.
func startBin(t *testing.T, bin, id, addr, log string, out *os.File, cfg *electdtest.Config, args, env []string) *electdtest.Member {
	t.Helper()
	ep, err := electdtest.Launch(bin, electdtest.Spec{Name: id, Addr: addr, Config: cfg, Args: args, Env: env, Dir: t.TempDir(), Output: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ep.Kill()
		if t.Failed() && log != "" {
			b, _ := os.ReadFile(log)
			t.Logf("log of %s (%s):\n%s", id, addr, b)
		}
	})
	return electdtest.Bind(t, ep)
}

func TestHardeningHelpSaysWhatEachSignalDoes(t *testing.T) {
	status, stdout, _ := electdtest.Run(t, nil, "--help").Outcome()
	if status != 0 {
		t.Fatalf("--help: status %d", status)
	}
	for _, s := range []string{"SIGTERM, SIGINT and SIGHUP all shut down gracefully", "A second of these",
		"SIGPIPE does not stop electd"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("--help does not say %q", s)
		}
	}
}

// TestHardeningSIGHUPReleases: SIGHUP on the leader deletes its node, so
// the follower takes over before the leader's session could have expired
// (it used to kill the leader without a release: 4.2 s instead of 0.02 s).
func TestHardeningSIGHUPReleases(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		// Run under nohup: a child inherits the ignored SIGHUP, and electd
		// keeps it ignored by design (docs/design/session-and-faults.md, "Process"). A handler
		// here makes exec give the children the default disposition back;
		// the channel is never read, so this process still ignores SIGHUP.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	zk := zktest.Standalone(t)
	ps := []*electdtest.Member{electdtest.StartMember(t, zk, "/hard/sighup", "p0", "latch"), electdtest.StartMember(t, zk, "/hard/sighup", "p1", "latch")}
	electdtest.WaitOK(t, "/readyz", 20*time.Second, ps...)
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	follower := electdtest.Others(ps, leader)[0]
	timeout, err := follower.MetricValue("electd_zk_session_timeout_seconds")
	if err != nil || timeout <= 0 {
		t.Fatalf("negotiated session timeout: %v %v", timeout, err)
	}
	sent := time.Now()
	leader.Send(syscall.SIGHUP)
	// Deadline: the leader's session timeout. Without a release the node
	// only goes when the ensemble expires that session.
	wait.For(t, time.Duration(timeout*float64(time.Second)), "the follower to lead before the leader's session could expire",
		follower.Leads)
	t.Logf("follower leads %d ms after SIGHUP (session timeout %v s)", time.Since(sent).Milliseconds(), timeout)
	if status := electdtest.ExitStatus(leader.WaitExit(15 * time.Second)); status != 0 {
		t.Errorf("exit status after SIGHUP = %d, want 0", status)
	}
	if !leader.LogHas(`"msg":"shutting down"`) || leader.LogHas("could not delete the own node") {
		t.Error("the leader did not shut down gracefully and delete its node on SIGHUP")
	}
}

// TestHardeningStalledBodiesDoNotHoldShutdown: a GET /healthz announcing a
// body it never sends, and a chunked POST /leader/release that stalls, are
// answered at once, and SIGTERM then exits 0 instead of waiting the whole
// shutdown_timeout and exiting 1.
func TestHardeningStalledBodiesDoNotHoldShutdown(t *testing.T) {
	zk := zktest.Standalone(t)
	p := electdtest.StartMember(t, zk, "/hard/body", "p0", "latch", "--shutdown_timeout", "30s")
	electdtest.OneLeader(t, []*electdtest.Member{p}, 15*time.Second)
	for _, req := range []string{
		"GET /healthz HTTP/1.1\r\nHost: electd\r\nContent-Length: 100\r\n\r\n",
		"POST /leader/release HTTP/1.1\r\nHost: electd\r\nAuthorization: Bearer " + electdtest.AdminToken +
			"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
	} {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // the client keeps it open
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: %v %v, want 413 at once", req[:strings.IndexByte(req, '\r')], resp, err)
		}
	}
	if !p.Leads() {
		t.Fatal("the stalled release moved leadership")
	}
	p.Send(syscall.SIGTERM)
	if status := electdtest.ExitStatus(p.WaitExit(30 * time.Second)); status != 0 {
		t.Errorf("exit status after SIGTERM with stalled clients = %d, want 0", status)
	}
}

// pipe returns a pipe whose write end electd gets as stderr.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestHardeningClosedLogPipe is `electd 2>&1 | head -n 3`: the reader of
// stderr goes away after three lines. electd keeps leading and serving,
// counts the lines it could not write, and releases and exits 0 on
// SIGTERM (it used to die of SIGPIPE at start, without a release).
func TestHardeningClosedLogPipe(t *testing.T) {
	zk := zktest.Standalone(t)
	r, w := pipe(t)
	addr := electdtest.MustFreeAddr(t)
	p := startBin(t, electdtest.Binary(t), "p0", addr, "", w, nil, electdtest.MemberArgs(zk, "/hard/pipe", "p0", "latch", addr, "--log.level", "debug"), nil)
	w.Close() // electd holds the only write end
	br := bufio.NewReader(r)
	for i := range 3 {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	r.Close() // head exits
	electdtest.OneLeader(t, []*electdtest.Member{p}, 15*time.Second)
	for range 3 { // each logs a warning that cannot be written
		if st, _ := p.Request(http.MethodPost, "/leader/release", "wrong"); st != http.StatusUnauthorized {
			t.Fatalf("release with a wrong token: %d", st)
		}
	}
	wait.For(t, 10*time.Second, "dropped log lines to be counted", func() bool {
		n, err := p.MetricValue("electd_log_lines_dropped_total")
		return err == nil && n > 0
	})
	if !p.Alive() || !p.Leads() {
		t.Fatal("electd stopped leading after its log reader went away")
	}
	p.Send(syscall.SIGTERM)
	if status := electdtest.ExitStatus(p.WaitExit(15 * time.Second)); status != 0 {
		t.Errorf("exit status after SIGTERM = %d, want 0", status)
	}
}

// fillPipe writes into w until the pipe is full, so that the next write by
// anyone blocks: a log reader that stalls.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	fd := int(w.Fd())
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatalf("F_SETPIPE_SZ: %v", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	filler := []byte(strings.Repeat("#", 512))
	for {
		if _, err := unix.Write(fd, filler); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
}

// TestHardeningStalledLogPipe: stderr is a pipe nobody reads, full. A
// line logged meanwhile reaches the reader once it reads again; SIGTERM
// still releases and exits 0 (it used to block on the first log write),
// and with a long shutdown_grace a second SIGTERM exits at once.
func TestHardeningStalledLogPipe(t *testing.T) {
	zk := zktest.Standalone(t)
	for _, second := range []bool{false, true} {
		t.Run(fmt.Sprintf("second signal %v", second), func(t *testing.T) {
			r, w := pipe(t)
			addr := electdtest.MustFreeAddr(t)
			grace := "0s"
			if second {
				grace = "60s"
			}
			path := fmt.Sprintf("/hard/stall/%v", second)
			p := startBin(t, electdtest.Binary(t), "p0", addr, "", w, nil,
				electdtest.MemberArgs(zk, path, "p0", "latch", addr, "--shutdown_grace", grace, "--shutdown_timeout", "90s"), nil)
			electdtest.OneLeader(t, []*electdtest.Member{p}, 15*time.Second)

			fillPipe(t, w) // from here on every write to stderr blocks
			if st, _ := p.Request(http.MethodPost, "/leader/release", "wrong"); st != http.StatusUnauthorized {
				t.Fatalf("release with a wrong token while stderr is stuck: %d, want 401 at once", st)
			}
			readUntil(t, r, `"msg":"POST /leader/release refused"`)

			fillPipe(t, w)
			p.Send(syscall.SIGTERM)
			wait.For(t, 10*time.Second, "/healthz/leader to answer 503 after SIGTERM", func() bool { return !p.Leads() })
			want := 0
			if second {
				p.Send(syscall.SIGTERM)
				want = 1
			}
			if status := electdtest.ExitStatus(p.WaitExit(30 * time.Second)); status != want {
				t.Errorf("exit status with stderr stuck = %d, want %d", status, want)
			}
		})
	}
}

// readUntil reads r until a line holds s, failing after a deadline.
func readUntil(t *testing.T, r *os.File, s string) {
	t.Helper()
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("the log ended without %s", s)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s never reached the log reader", s)
	}
}

// memoryLimit is the electd container's memory limit in deploy/k8s/app.yaml,
// which the manifest also gives the process as GOMEMLIMIT.
func memoryLimit(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return parseElectdMemoryLimit(t, b)
}
