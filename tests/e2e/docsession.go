package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DocSession runs the docs' commands one after another in one bash, as a
// reader types them into one terminal: variables, the working directory
// and background jobs carry over from one command to the next.
type DocSession struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan string // "<exit status> <command number>" from bash's fd 3
	dir  string      // where each command's output goes
	n    int
}

// StartDocSession starts cmd, a bash reading commands on its standard
// input, in a process group of its own (Close ends its background jobs
// too); each command's output is kept in dir.
func StartDocSession(cmd *exec.Cmd, dir string) (*DocSession, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	in, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	s := &DocSession{cmd: cmd, in: in, done: make(chan string), dir: dir}
	go func() {
		defer r.Close()
		defer close(s.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.done <- sc.Text()
		}
	}()
	return s, nil
}

// Run runs one command (several lines are one command: a block) with its
// standard input closed, and returns the lines it printed, standard output
// and error together as a terminal shows them, and its exit status. A
// command still running after timeout is an error, and so is a shell that
// is gone.
func (s *DocSession) Run(command string, timeout time.Duration) ([]string, int, error) {
	s.n++
	out := filepath.Join(s.dir, fmt.Sprintf("command-%d.out", s.n))
	if _, err := fmt.Fprintf(s.in, "{\n%s\n} > %s 2>&1 < /dev/null; echo \"$? %d\" >&3\n", command, strconv.Quote(out), s.n); err != nil {
		return nil, 0, fmt.Errorf("the shell: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-s.done:
			if !ok {
				return nil, 0, errors.New("the shell exited")
			}
			status, n, _ := strings.Cut(line, " ")
			if n != strconv.Itoa(s.n) {
				continue // an earlier command's, which timed out
			}
			code, _ := strconv.Atoi(status)
			b, err := os.ReadFile(out)
			return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), code, err
		case <-t.C:
			b, _ := os.ReadFile(out)
			return strings.Split(string(b), "\n"), 0, fmt.Errorf("still running after %v", timeout)
		}
	}
}

// Close ends the shell and everything it started (its process group).
func (s *DocSession) Close() {
	s.in.Close()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}
