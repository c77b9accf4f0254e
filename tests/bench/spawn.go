package bench

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// spawner starts child processes from one goroutine locked to its OS
// thread for the life of the bench: Linux sends a child its Pdeathsig when
// the thread that forked it exits, so with a thread that never exits, the
// electd processes and JVMs the bench starts die exactly when the bench
// does (killed by a timeout included), and never earlier.
type spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func (s *spawner) start(cmd *exec.Cmd) error {
	s.once.Do(func() {
		s.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: see spawner
			for r := range s.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.reqs <- r
	return <-r.err
}
