package doctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/electd/electd/tests/harness/proctest"
)

// Shell is one bash, as a user's terminal is: the commands of a session
// run in it one after another, so that variables, the working directory
// and background jobs carry over from one block to the next. It is not
// interactive, so it prints no job numbers ("[1] 4242") and no prompts.
type Shell struct {
	proc   *proctest.Process
	stdin  io.WriteCloser
	out    *output
	nonce  string
	n      int
	closed bool
}

// output is what the shell and everything it started printed, stdout and
// stderr together in the order written, as a terminal shows them.
type output struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	update chan struct{} // a token when buf grows
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	select {
	case o.update <- struct{}{}:
	default:
	}
	return len(p), nil
}

// StartShell starts bash in dir with env (os.Environ's form), in a process
// group of its own: Close stops it and every job it started.
func StartShell(dir string, env []string) (*Shell, error) {
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = proctest.Group()
	out := &output{update: make(chan struct{}, 1)}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p, err := proctest.Run(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("doctest: start bash: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Shell{proc: p, stdin: stdin, out: out, nonce: hex.EncodeToString(b)}, nil
}

// ErrTimeout is Run's error for a command still running at its deadline.
var ErrTimeout = errors.New("doctest: the command did not end in time")

// Run runs command and returns what it printed (and what background jobs
// printed meanwhile) and its exit status. A command that does not end
// within timeout fails Run with ErrTimeout; the shell is of no further use.
func (s *Shell) Run(command string, timeout time.Duration) (string, int, error) {
	s.n++
	marker := fmt.Sprintf("__doctest_%s_%d__", s.nonce, s.n)
	s.out.mu.Lock()
	start := s.out.buf.Len()
	s.out.mu.Unlock()
	// The marker follows the command on a line of its own; printf's status
	// is the command's, read from $? before anything else runs.
	script := command + "\nprintf '%s %d\\n' " + marker + " \"$?\"\n"
	if _, err := io.WriteString(s.stdin, script); err != nil {
		return "", 0, fmt.Errorf("doctest: bash's input: %w", err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.out.mu.Lock()
		text := s.out.buf.String()[start:]
		s.out.mu.Unlock()
		if i := strings.Index(text, marker+" "); i >= 0 {
			if rest, _, ok := strings.Cut(text[i+len(marker)+1:], "\n"); ok {
				status, err := strconv.Atoi(rest)
				return text[:i], status, err
			}
		}
		select {
		case <-s.out.update:
		case <-s.proc.Done():
			return text, 0, fmt.Errorf("doctest: bash exited (%v)", s.proc.Err())
		case <-deadline.C:
			return text, 0, ErrTimeout
		}
	}
}

// Close stops the shell and whatever it still runs: SIGTERM to its process
// group, SIGKILL after grace. Background jobs that a session leaves
// running (a doc that forgot to stop them) are stopped here too.
func (s *Shell) Close(grace time.Duration) {
	if s.closed {
		return
	}
	s.closed = true
	s.stdin.Close()
	_ = syscall.Kill(-s.proc.Pid(), syscall.SIGTERM)
	select {
	case <-s.proc.Done():
	case <-time.After(grace):
	}
	_ = syscall.Kill(-s.proc.Pid(), syscall.SIGKILL)
	<-s.proc.Done()
}

// Output is everything printed so far (for a failure's report).
func (s *Shell) Output() string {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return s.out.buf.String()
}

// Env is os.Environ without the variables a user's shell would not have
// set for these commands (the test's own ELECTD_*), plus extra.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_") && !strings.HasPrefix(kv, "KUBERNETES_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
