package nodetest

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// LockPath serializes node runs on a machine: the paths a node uses are
// fixed (some by containerd and the kubelet themselves), so two at once
// would share them. The kernel drops the lock when its holder dies.
const LockPath = "/run/electd-e2e.lock"

func lockMachine(progress io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nodetest: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(progress, "nodetest: another node run holds %s; waiting for it to end\n", LockPath)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("nodetest: lock %s: %w", LockPath, err)
		}
	}
	return func() { f.Close() }, nil
}
