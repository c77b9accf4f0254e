package nodetest

import (
	"fmt"
	"io"

	"github.com/electd/electd/tests/harness/buildcache"
)

// LockPath serializes node runs on a machine: the paths a node uses are
// fixed (some by containerd and the kubelet themselves), so two at once
// would share them. The kernel drops the lock when its holder dies.
const LockPath = "/run/electd-e2e.lock"

func lockMachine(progress io.Writer) (unlock func(), err error) {
	return buildcache.Lock(LockPath, func() {
		fmt.Fprintf(progress, "nodetest: another node run holds %s; waiting for it to end\n", LockPath)
	})
}
