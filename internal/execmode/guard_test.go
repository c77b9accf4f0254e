package execmode

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary be the guard, as electd is in production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardCommand {
		os.Exit(RunGuard(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// startGuarded runs script under sh behind a real guard (this test binary).
func startGuarded(t *testing.T, script string, deadline int64, env ...string) Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := GuardStarter{Argv: []string{"sh", "-c", script}, KillTimeout: 5 * time.Second, Exe: exe}
	c, err := s.Start(append(os.Environ(), env...), deadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Kill()
		<-c.Done()
	})
	return c
}

func far() int64 { return Mono() + int64(time.Hour) }

func wait(t *testing.T, c Child) Exit {
	t.Helper()
	select {
	case <-c.Done():
		return c.Exit()
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end")
		return Exit{}
	}
}

// alive reports whether pid exists (a zombie counts as gone: it runs no more).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc (macOS)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	eventually(t, "pid "+strconv.Itoa(pid)+" to be gone", func() bool { return !alive(pid) })
}

// readPid waits for the file that a script writes a pid into.
func readPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	eventually(t, file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestGuardStopsWithSIGTERM(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "token")
	c := startGuarded(t, `echo "$ELECTD_FENCING_TOKEN" > `+out+`; exec sleep 100`, far(), "ELECTD_FENCING_TOKEN=42")
	eventually(t, "the command's file", func() bool { b, _ := os.ReadFile(out); return string(b) == "42\n" })
	pid := c.Pid()
	c.Stop(5 * time.Second)
	ex := wait(t, c)
	if ex.Cause != CauseStopped || ex.Signal != "SIGTERM" || ex.Err != nil {
		t.Errorf("exit %+v, want stopped by SIGTERM", ex)
	}
	waitGone(t, pid)
}

// A command that ignores SIGTERM, and its children, are killed at the kill timeout.
func TestGuardKillsWhatIgnoresSIGTERM(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startGuarded(t, `trap "" TERM; sleep 100 & echo $! > `+pidFile+`; while :; do sleep 0.05; done`, far())
	grandchild := readPid(t, pidFile)
	c.Stop(200 * time.Millisecond)
	ex := wait(t, c)
	if ex.Cause != CauseStopped || ex.Signal != "SIGKILL" {
		t.Errorf("exit %+v, want stopped by SIGKILL", ex)
	}
	waitGone(t, grandchild)
}

func TestGuardKillsAtTheLeaseEnd(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// A lease renewed for a while keeps the command running...
	c := startGuarded(t, `echo $$ > `+pidFile+`; exec sleep 100`, far())
	pid := readPid(t, pidFile)
	for range 10 {
		c.Lease(Mono() + int64(2*time.Second)) // renewed 20 times as often as it lasts
		time.Sleep(100 * time.Millisecond)
	}
	if !alive(pid) {
		t.Fatal("the command died while its lease was renewed")
	}
	// ...and the end of its lease kills it, even mid-stop.
	c.Stop(time.Hour)
	ex := wait(t, c)
	if ex.Cause != CauseLease || ex.Signal != "SIGKILL" {
		// sleep dies of the SIGTERM first unless it ignores it; both are fine
		// as long as the guard says why the group went.
		if ex.Cause != CauseStopped {
			t.Errorf("exit %+v, want the lease's SIGKILL or the stop's SIGTERM", ex)
		}
	}
	waitGone(t, pid)
}

func TestGuardLeaseEndIgnoringSIGTERM(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startGuarded(t, `trap "" TERM; echo $$ > `+pidFile+`; while :; do sleep 0.05; done`, far())
	readPid(t, pidFile)                           // SIGTERM is ignored from here on
	c.Lease(Mono() + int64(200*time.Millisecond)) // a lease may also come out shorter
	c.Stop(time.Hour)
	if ex := wait(t, c); ex.Cause != CauseLease || ex.Signal != "SIGKILL" {
		t.Errorf("exit %+v, want killed at the lease's end", ex)
	}
}

func TestGuardExpiredLeaseNeverStarts(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	c := startGuarded(t, `touch `+marker, Mono()-1)
	if ex := wait(t, c); ex.Cause != CauseLease || ex.Code != -1 {
		t.Errorf("exit %+v, want lease", ex)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Error("the command ran")
	}
}

// Closing the control pipe (electd is gone) kills the group at once,
// grandchildren included.
func TestGuardOrphaned(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startGuarded(t, `sleep 100 & echo $! > `+pidFile+`; wait`, far())
	grandchild := readPid(t, pidFile)
	c.Kill()
	if ex := wait(t, c); ex.Cause != CauseOrphaned || ex.Signal != "SIGKILL" {
		t.Errorf("exit %+v, want orphaned", ex)
	}
	waitGone(t, grandchild)
}

// A command that exits leaves nothing running in its group.
func TestGuardExitReportsStatusAndCleansUp(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startGuarded(t, `sleep 100 & echo $! > `+pidFile+`; exit 7`, far())
	ex := wait(t, c)
	if ex.Cause != CauseExited || ex.Code != 7 || ex.Signal != "" || ex.String() != "exited, status 7" {
		t.Errorf("exit %+v (%s), want exited with 7", ex, ex)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestGuardCommandNotFound(t *testing.T) {
	exe, _ := os.Executable()
	s := GuardStarter{Argv: []string{"/nonexistent/electd-test-cmd"}, Exe: exe}
	c, err := s.Start(os.Environ(), far())
	if err != nil {
		t.Fatal(err)
	}
	ex := wait(t, c)
	if ex.Cause != CauseExited || ex.Err == nil || !strings.Contains(ex.Err.Error(), "no such file") {
		t.Errorf("exit %+v", ex)
	}
}

// A guard that dies takes its command with it (Pdeathsig), and electd's
// side kills what is left of the group.
func TestGuardKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startGuarded(t, `sleep 100 & echo $! > `+pidFile+`; wait`, far())
	grandchild := readPid(t, pidFile)
	pid := c.Pid()
	guard := c.(*guarded).guard.Process
	if err := guard.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ex := wait(t, c); ex.Cause != CauseGuard {
		t.Errorf("exit %+v, want guard", ex)
	}
	waitGone(t, pid)
	waitGone(t, grandchild)
}

func TestGuardArgs(t *testing.T) {
	a := guardArgs{deadline: 123, killTimeout: 1500 * time.Millisecond, argv: []string{"sh", "-c", "x -- y"}}
	got, err := parseGuardArgs(a.encode()[1:])
	if err != nil || got.deadline != 123 || got.killTimeout != a.killTimeout || strings.Join(got.argv, "|") != "sh|-c|x -- y" {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]string{nil, {"1", "1s", "x", "sh"}, {"x", "1s", "--", "sh"}, {"1", "-1s", "--", "sh"}, {"1", "1s", "--"}} {
		if _, err := parseGuardArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if RunGuard([]string{"1", "1s", "x", "true"}) != 2 {
		t.Error("RunGuard accepted bad arguments")
	}
}
