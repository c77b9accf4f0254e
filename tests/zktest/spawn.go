package zktest

import (
	"os/exec"
	"runtime"
	"sync"
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

// spawn starts cmd from one goroutine locked to its OS thread for the life of the process.
// On Linux the servers get SIGKILL when the thread that forked them exits (Pdeathsig): with
// a thread that never exits, that happens exactly when the test binary dies, so no JVM
// outlives it even when the binary is killed before its cleanups run.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnCh {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnCh <- r
	return <-r.err
}
