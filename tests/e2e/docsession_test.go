package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// One bash for a page: what one command sets, the next sees; each
// command's output (both streams) and status are its own; a command that
// does not end in time is an error, and Close ends the jobs left behind.
func TestDocSessionRunsCommandsInOneShell(t *testing.T) {
	s, err := StartDocSession(exec.Command("bash", "--noprofile", "--norc"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	dir := t.TempDir()
	run := func(cmd string) ([]string, int) {
		t.Helper()
		out, status, err := s.Run(cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		return out, status
	}
	if out, status := run("X=one\ncd " + dir); status != 0 || strings.Join(out, "|") != "" {
		t.Errorf("setting: %q %d", out, status)
	}
	if out, status := run("echo $X $(pwd); echo two >&2"); status != 0 || strings.Join(out, "|") != "one "+dir+"|two" {
		t.Errorf("reading back: %q %d", out, status)
	}
	if _, status := run("false"); status != 1 {
		t.Errorf("false: status %d", status)
	}
	if out, _ := run("read line; echo \"[$line]\""); strings.Join(out, "|") != "[]" {
		t.Errorf("standard input is not closed: %q", out)
	}
	run("sleep 60 & echo $! > job.pid")
	if _, _, err := s.Run("sleep 1", 100*time.Millisecond); err == nil {
		t.Error("a command past its timeout: no error")
	}
	if out, _ := run("echo after"); strings.Join(out, "|") != "after" {
		t.Errorf("the command after a timed-out one: %q", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "job.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	s.Close()
	closed = true
	// Close has signalled the job; its death is the kernel's to finish (a
	// process still exiting shows as R with no memory), so the job must be
	// gone, or a zombie its new parent has not reaped, within a deadline.
	err = wait.Until(context.Background(), 10*time.Second, 10*time.Millisecond, func() error {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return nil
		}
		return fmt.Errorf("still there: %s", st)
	})
	if err != nil {
		t.Errorf("the background job outlived Close: %v", err)
	}
}
