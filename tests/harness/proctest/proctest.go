// Package proctest starts the processes the tests run (ZooKeeper's JVMs,
// etcd and the Kubernetes binaries, Prometheus, electd) so that none
// outlives the test binary, and follows each until it exits: the tests'
// one spawner (Start) and one process type (Process).
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawnReq asks the spawner goroutine to start a command.
type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan spawnReq)
)

// Start starts cmd from one goroutine locked to its OS thread for the life
// of the process, with Pdeathsig SIGKILL on Linux (the other fields of
// cmd.SysProcAttr are kept). Linux sends a child its Pdeathsig when the
// thread that forked it exits: with a thread that never exits, that
// happens exactly when the test binary (or the bench, or the demo) dies,
// killed by a timeout included, and never earlier.
func Start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnCh {
				r.err <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	dieWithParent(cmd.SysProcAttr)
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnCh <- r
	return <-r.err
}

// Group is the SysProcAttr of a child in a process group of its own: a
// terminal's Ctrl-C reaches the test, which then stops it in order, rather
// than the child, and a signal sent to the group (Process.Signal) reaches
// everything it started (a JVM's threads, a shell's children).
func Group() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Process is one started command, waited for in the background.
type Process struct {
	Cmd *exec.Cmd
	// Log is the file its output is appended to, or "".
	Log string

	done chan struct{} // closed once it has exited and after has run
	err  error         // cmd.Wait's, set before done is closed
}

// Run starts cmd (Start) and waits for its exit in the background; after,
// when not nil, runs once it has exited, before Done is closed.
func Run(cmd *exec.Cmd, after func()) (*Process, error) {
	if err := Start(cmd); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if after != nil {
			after()
		}
		close(p.done)
	}()
	return p, nil
}

// RunLogged is Run with cmd's stdout and stderr appended to the file
// logPath.
func RunLogged(logPath string, cmd *exec.Cmd) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	p, err := Run(cmd, func() { f.Close() })
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.Log = logPath
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is cmd.Wait's result once the process has exited (nil for status
// 0), and nil before.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Signal sends sig to the process, or to its process group when it was
// started in one of its own (Setpgid).
func (p *Process) Signal(sig syscall.Signal) error {
	if a := p.Cmd.SysProcAttr; a != nil && a.Setpgid {
		return syscall.Kill(-p.Pid(), sig)
	}
	return p.Cmd.Process.Signal(sig)
}

// Stop sends SIGTERM and waits up to timeout for the exit, then SIGKILL
// (each to the group, as Signal does). It returns at once when the process
// has exited, and reports whether it exited on SIGTERM.
func (p *Process) Stop(timeout time.Duration) bool {
	if p.Exited() {
		return true
	}
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
		return false
	}
}

// Tail is the last n bytes of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	return Tail(string(b), n)
}

// Tail is the last n bytes of s, trimmed, marked "..." when cut.
func Tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
