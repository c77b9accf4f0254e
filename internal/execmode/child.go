package execmode

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Exit is how a command ended.
type Exit struct {
	Code   int    // exit status; -1 when a signal ended it or it never ran
	Signal string // e.g. "SIGKILL"; empty when it exited
	Cause  Cause
	Err    error // set when it could not start, or the guard failed
}

func (e Exit) String() string {
	switch {
	case e.Err != nil:
		return string(e.Cause) + ": " + e.Err.Error()
	case e.Signal != "":
		return string(e.Cause) + ", killed by " + e.Signal
	}
	return string(e.Cause) + ", status " + strconv.Itoa(e.Code)
}

// Child is one run of the command, behind its guard.
type Child interface {
	// Lease moves the deadline (on Mono's clock) at which the guard
	// SIGKILLs the command unless told a later one.
	Lease(deadline int64)
	// Stop sends SIGTERM to the command's group now and SIGKILL after
	// killTimeout. It does not wait; Done does.
	Stop(killTimeout time.Duration)
	// Kill makes the guard SIGKILL the group at once.
	Kill()
	// Pid is the command's process id (and its group's).
	Pid() int
	// Done is closed once the command's group is gone; Exit says how.
	Done() <-chan struct{}
	Exit() Exit
}

// Starter starts the command with env, to be killed at deadline unless
// leased further.
type Starter interface {
	Start(env []string, deadline int64) (Child, error)
}

// GuardStarter starts each run of Argv behind a guard process: the running
// binary (electd) with GuardCommand. Its Exe and Prefix, when set, name
// another guard binary (tests).
type GuardStarter struct {
	Argv        []string
	KillTimeout time.Duration // for a stop the guard starts on a signal
	Exe         string        // default: this binary
	Prefix      []string      // arguments before GuardCommand's
}

// Start implements Starter. The guard inherits stdout and stderr, which the
// command then writes to directly, and gets /dev/null as stdin.
func (s GuardStarter) Start(env []string, deadline int64) (Child, error) {
	exe := s.Exe
	if exe == "" {
		var err error
		if exe, err = selfExe(); err != nil {
			return nil, err
		}
	}
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctrlR.Close()
		ctrlW.Close()
		return nil, err
	}
	args := append(append([]string{}, s.Prefix...), guardArgs{deadline: deadline, killTimeout: s.KillTimeout, argv: s.Argv}.encode()...)
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{ctrlR, repW} // fds 3 and 4
	// A group of its own: a terminal's ^C reaches electd, which stops the
	// command in order, not the guard.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	ctrlR.Close()
	repW.Close()
	if err != nil {
		ctrlW.Close()
		repR.Close()
		return nil, fmt.Errorf("cannot start the guard %s: %w", exe, err)
	}
	g := &guarded{ctrl: ctrlW, guard: cmd, done: make(chan struct{}), started: make(chan struct{})}
	go g.watch(repR)
	select {
	case <-g.started:
	case <-g.done: // it never ran
	}
	return g, nil
}

// guarded is a Child behind a guard process.
type guarded struct {
	guard *exec.Cmd
	done  chan struct{}
	exit  Exit // set before done is closed

	mu      sync.Mutex
	ctrl    *os.File // nil once closed
	pid     int
	started chan struct{}
}

func (g *guarded) Pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pid
}

func (g *guarded) Done() <-chan struct{} { return g.done }
func (g *guarded) Exit() Exit            { return g.exit }

func (g *guarded) send(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctrl != nil {
		_, _ = g.ctrl.WriteString(line + "\n") // EPIPE: the guard is gone, and watch reports it
	}
}

func (g *guarded) Lease(deadline int64) { g.send("lease " + strconv.FormatInt(deadline, 10)) }
func (g *guarded) Stop(killTimeout time.Duration) {
	g.send("stop " + strconv.FormatInt(int64(killTimeout), 10))
}

// Kill closes the control pipe: the guard SIGKILLs the group at once.
func (g *guarded) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctrl != nil {
		g.ctrl.Close()
		g.ctrl = nil
	}
}

// watch reads the guard's reports until it exits, then delivers the Exit.
func (g *guarded) watch(reports *os.File) {
	defer reports.Close()
	ex := Exit{Code: -1, Cause: CauseGuard, Err: errors.New("the guard ended without a report")}
	sc := bufio.NewScanner(reports)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		switch verb {
		case "started":
			pid, _ := strconv.Atoi(arg)
			g.mu.Lock()
			g.pid = pid
			g.mu.Unlock()
			close(g.started)
		case "error":
			ex = Exit{Code: -1, Cause: CauseExited, Err: errors.New(arg)}
		case "exit":
			ex = parseExit(arg)
		}
	}
	_ = g.guard.Wait()
	if ex.Cause == CauseGuard {
		// The guard died before reporting the command's end: kill the
		// group from here. Pdeathsig took the command itself.
		if pid := g.Pid(); pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	g.Kill()
	g.exit = ex
	close(g.done)
}

// parseExit reads "<code> <signal> <cause>".
func parseExit(s string) Exit {
	f := strings.Fields(s)
	if len(f) != 3 {
		return Exit{Code: -1, Cause: CauseGuard, Err: fmt.Errorf("bad report %q", s)}
	}
	code, err := strconv.Atoi(f[0])
	if err != nil {
		code = -1
	}
	ex := Exit{Code: code, Cause: Cause(f[2])}
	if f[1] != "-" {
		ex.Signal = f[1]
	}
	return ex
}
