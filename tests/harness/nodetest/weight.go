package nodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// podsCPUShares is the CPU weight of the cgroup every container of the node
// runs in (containerd's k8s.io, cgroup v1's cpu controller). A kubelet that
// enforces node allocatable gives its pods' cgroup (kubepods) 1024 shares
// per allocatable core, against systemd's system.slice, which weighs 1024
// for every system service together: under contention the pods get two
// thirds of a 2-core machine. This node runs without QoS cgroups or that
// enforcement (kubeletYAML), so k8s.io would keep cgroup v1's default 1024
// and weigh as much as one busy process of the machine's other work (other
// test suites, builds): at a load of 20 the whole node got a tenth of the
// machine, and a sidecar's threads waited seconds for a CPU. With this
// weight the pods keep two thirds of the machine against up to 32 busy
// processes, as they would against the system on a real node; contention
// between the node's own containers (weighted by their CPU requests) is
// unchanged.
const podsCPUShares = 2 * 32 * 1024

// weighPods creates the containers' cgroup under the cpu controller, if
// containerd has not yet, and sets its weight. teardown removes it with the
// rest when it did not exist before the run.
func weighPods() error {
	d := filepath.Join("/sys/fs/cgroup", "cpu", "k8s.io")
	if _, err := os.Stat(filepath.Dir(d)); err != nil {
		return fmt.Errorf("nodetest: the cpu controller (cgroup v1): %w", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("nodetest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d, "cpu.shares"), []byte(strconv.Itoa(podsCPUShares)), 0o644); err != nil {
		return fmt.Errorf("nodetest: the pods' CPU weight: %w", err)
	}
	return nil
}
