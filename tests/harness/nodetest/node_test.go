//go:build e2e

package nodetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// machineState lists what a node run may leave on the machine: network
// namespaces, mounts under the paths a node uses, shims, the node's
// directories and the fixed paths, the k8s.io cgroups and the kubelet's
// sysctls. Two equal states mean a run left nothing.
func machineState(t *testing.T) []string {
	t.Helper()
	var s []string
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		s = append(s, "netns "+e.Name())
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 {
			for _, p := range []string{StateDir, RunDir, "/run/containerd", "/run/netns", "/var/lib/kubelet"} {
				if strings.HasPrefix(f[4], p) {
					s = append(s, "mount "+f[4])
				}
			}
		}
	}
	for pid, p := range procs() {
		if strings.Contains(p.cmd, RunDir) || strings.Contains(p.cmd, StateDir) {
			s = append(s, fmt.Sprintf("process %d %s", pid, p.cmd))
		}
	}
	for _, p := range append([]string{StateDir, RunDir}, append(fixedPaths, cgroupDirs()...)...) {
		if _, err := os.Lstat(p); err == nil {
			s = append(s, "exists "+p)
		}
	}
	for _, k := range kernelTunables {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", k))
		s = append(s, "sysctl "+k+"="+strings.TrimSpace(string(v)))
	}
	slices.Sort(s)
	return s
}

func diffStates(t *testing.T, before, after []string) {
	t.Helper()
	for _, x := range after {
		if !slices.Contains(before, x) {
			t.Errorf("left behind: %s", x)
		}
	}
	for _, x := range before {
		if !slices.Contains(after, x) {
			t.Errorf("removed although it was there before: %s", x)
		}
	}
}

// runPod runs the example app as a pod behind a Service and returns what
// a request through the ClusterIP answered.
func runPod(ctx context.Context, n *Node) (string, error) {
	if _, err := n.Kubectl(ctx, "run", "web", "--image="+AppImage, "--port=8080", "--expose", "--image-pull-policy=Never"); err != nil {
		return "", err
	}
	if _, err := n.Kubectl(ctx, "wait", "--for=condition=Ready", "pod/web", "--timeout=3m"); err != nil {
		return "", err
	}
	ip, err := n.Kubectl(ctx, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return "", err
	}
	var last error
	for range 100 {
		resp, err := n.HTTPClient(2 * time.Second).Get("http://" + ip + ":8080/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.TrimSpace(string(b)), nil
		}
		last = err
		time.Sleep(100 * time.Millisecond) // kube-proxy syncs at most once a second
	}
	return "", last
}

// A node starts, runs a pod from an imported image behind a Service that
// answers through its ClusterIP, and Close leaves the machine as it was.
func TestNodeRunsAPodAndLeavesNothing(t *testing.T) {
	var before []string
	n, err := newNode(testWriter{t}, func() { before = machineState(t) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got, err := runPod(ctx, n)
	if err != nil {
		t.Error(err)
		t.Log(n.LogTails(2000))
	} else if got != "web" {
		t.Errorf("the Service answered %q, want the pod's name", got)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	diffStates(t, before, machineState(t))
}

// A run killed with SIGKILL leaves its containers, shims, mounts and
// namespaces; the next run's cleanup removes all of them.
func TestKilledRunIsCleanedUp(t *testing.T) {
	if os.Getenv("NODETEST_CHILD") == "1" {
		n, err := New(os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := runPod(ctx, n); err != nil {
			t.Fatal(err)
		}
		fmt.Println("NODETEST READY")
		select {} // until killed
	}
	// The state before, under the lock, once an earlier run's leftovers
	// are gone; the child waits for the lock until then.
	unlock, err := lockMachine(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if err := teardown(); err != nil {
		t.Fatal(err)
	}
	before := machineState(t)
	unlock()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunIsCleanedUp$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "NODETEST_CHILD=1")
	cmd.Stderr = testWriter{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "NODETEST READY" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatal("the child run ended before its pod ran")
		}
	case <-time.After(8 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the child run did not get its pod running")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	left := machineState(t)
	shims := 0
	for _, x := range left {
		if strings.Contains(x, "containerd-shim") {
			shims++
		}
	}
	if shims == 0 {
		t.Errorf("no shim outlived the killed run: this test shows nothing; state:\n%s", strings.Join(left, "\n"))
	}
	unlock, err = lockMachine(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := teardown(); err != nil {
		t.Error(err)
	}
	diffStates(t, before, machineState(t))
}
