package nodetest

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

// process is one component of the node: its output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// spawner starts every component from one goroutine locked to its OS thread
// for the life of the test binary. The components get SIGKILL when the
// thread that forked them exits (Pdeathsig): with a thread that never
// exits, that happens exactly when the test binary dies, so no control
// plane outlives it. Containers do (they belong to containerd's shims):
// the next run's cleanup removes them (cleanup.go).
type spawner struct {
	once sync.Once
	ch   chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func (s *spawner) start(cmd *exec.Cmd) error {
	s.once.Do(func() {
		s.ch = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range s.ch {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.ch <- r
	return <-r.err
}

// startProcess starts cmd with its output appended to logPath.
func (s *spawner) startProcess(name, logPath string, cmd *exec.Cmd) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nodetest: %w", err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.start(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("nodetest: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL to the process group after timeout.
func (p *process) stop(timeout time.Duration) {
	if p == nil || p.exited() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	return tail(string(b), n)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
