package execmode

// The command the tests of exec mode run, and how they read what it did.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// The command of the exec mode tests: a shell script that takes an
// exclusive flock on one lock file shared by all participants' commands
// and holds it as long as it (or anything it started) runs. The kernel
// drops the lock only when the last process holding it is gone, SIGKILL
// included, so a command that starts while another one of the election
// still runs cannot take it, and writes OVERLAP: that is the check that
// never two run at once, exact rather than sampled. The token file is
// written before the "start" line, so a test that has seen the line can
// read the file.
const execScript = `exec 9>>"$EXEC_DIR/lock"
if ! flock -n 9; then echo "OVERLAP $ELECTD_LEADER_ID $ELECTD_FENCING_TOKEN $$" >> "$EXEC_DIR/log"; fi
echo "$ELECTD_FENCING_TOKEN" > "$EXEC_DIR/token.$ELECTD_LEADER_ID"
echo "start $ELECTD_LEADER_ID $ELECTD_FENCING_TOKEN $$" >> "$EXEC_DIR/log"
echo "command of $ELECTD_LEADER_ID says hello on stdout (token $ELECTD_FENCING_TOKEN)"
trap 'echo "term $ELECTD_LEADER_ID $$" >> "$EXEC_DIR/log"; exit 0' TERM
[ -n "$EXEC_IGNORE_TERM" ] && trap 'echo "ignored $ELECTD_LEADER_ID $$" >> "$EXEC_DIR/log"' TERM
[ -n "$EXEC_EXIT" ] && exit "$EXEC_EXIT"
while :; do sleep 0.05; done
`

// execEvent is one line of the commands' log.
type execEvent struct {
	what  string
	Name  string // the participant's id, as electdtest.Member.Name
	token int64
	pid   int
}

func execLog(t *testing.T, dir string) []execEvent {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []execEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue // a line being written
		}
		e := execEvent{what: fs[0], Name: fs[1]}
		if len(fs) == 4 {
			e.token, _ = strconv.ParseInt(fs[2], 10, 64)
			e.pid, _ = strconv.Atoi(fs[3])
		} else {
			e.pid, _ = strconv.Atoi(fs[2])
		}
		out = append(out, e)
	}
	return out
}

// noOverlap fails the test when a command ever found another running.
func noOverlap(t *testing.T, dir string) {
	t.Helper()
	for _, e := range execLog(t, dir) {
		if e.what == "OVERLAP" {
			t.Fatalf("%s's command (token %d) started while another participant's command still ran:\n%s", e.Name, e.token, readLog(dir))
		}
	}
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	return string(b)
}

// starts returns the "start" events, in order.
func starts(t *testing.T, dir string) []execEvent {
	var out []execEvent
	for _, e := range execLog(t, dir) {
		if e.what == "start" {
			out = append(out, e)
		}
	}
	return out
}

// waitStart waits for the n-th start (1-based) of any command and returns it.
func waitStart(t *testing.T, dir string, n int, timeout time.Duration) execEvent {
	t.Helper()
	var e execEvent
	wait.For(t, timeout, fmt.Sprintf("start number %d of a command", n), func() bool {
		s := starts(t, dir)
		if len(s) < n {
			return false
		}
		e = s[n-1]
		return true
	})
	return e
}

// has reports whether the log holds what for pid.
func has(t *testing.T, dir, what string, pid int) bool {
	for _, e := range execLog(t, dir) {
		if e.what == what && e.pid == pid {
			return true
		}
	}
	return false
}

// pidAlive reports whether pid runs (a zombie does not).
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// startExecMember runs `electd run ... -- sh -c execScript` as a participant.
func startExecMember(t *testing.T, zk, path, id, dir string, extra []string, env ...string) *electdtest.Member {
	t.Helper()
	addr := electdtest.MustFreeAddr(t)
	args := append([]string{"run"}, electdtest.MemberArgs(zk, path, id, "latch", addr, extra...)...)
	args = append(args, "--", "sh", "-c", execScript)
	return electdtest.StartArgs(t, id, addr, args, append([]string{"EXEC_DIR=" + dir}, env...))
}
