package nodetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// trimID takes the runtime's prefix off a container ID as the kubelet
// reports it (containerd://<id>).
func trimID(id string) string {
	_, after, ok := strings.Cut(id, "://")
	if ok {
		return after
	}
	return id
}

func (n *Node) ctr(args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", n.lay.containerdSock, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nodetest: ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Signal sends sig (e.g. "SIGKILL") to a container's main process through
// containerd, as a crash or the OOM killer would hit it: the kubelet sees
// the container exit and applies the pod's restart policy.
func (n *Node) Signal(containerID, sig string) error {
	_, err := n.ctr("tasks", "kill", "--signal", sig, trimID(containerID))
	return err
}

// ContainerPID is the host PID of a container's main process, for reading
// what the kernel says of it under /proc.
func (n *Node) ContainerPID(containerID string) (int, error) {
	id := trimID(containerID)
	out, err := n.ctr("tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("nodetest: no task for container %s", id)
}

// ProcessGone waits up to timeout until the host process pid has exited
// and returns when it saw so: its /proc entry gone, or a zombie, whose
// sockets the kernel has already closed. It looks every millisecond, so
// the time is the exit's to within about that.
func ProcessGone(ctx context.Context, pid int, timeout time.Duration) (time.Time, error) {
	var gone time.Time
	err := wait.Until(ctx, timeout, time.Millisecond, func() error {
		f, err := procStat(strconv.Itoa(pid))
		if errors.Is(err, fs.ErrNotExist) || err == nil && (f[0] == "Z" || f[0] == "X") {
			gone = time.Now()
			return nil
		}
		return fmt.Errorf("nodetest: process %d still there", pid)
	})
	return gone, err
}

// TagImage gives an image the node has another reference, as a push to the
// registry the cluster pulls from would (dst in full, docker.io/library/...).
func (n *Node) TagImage(src, dst string) error {
	_, err := n.ctr("images", "tag", "--force", src, dst)
	return err
}

// Ctr is the ctr command line that reaches the node's containerd and the
// kubelet's images, for a script to run (ctr's own arguments follow).
func (n *Node) Ctr() []string {
	return []string{"ctr", "--address", n.lay.containerdSock, "-n", "k8s.io"}
}
