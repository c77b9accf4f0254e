//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSecurity reads, from the kernel's view of the leader pod's container
// processes (/proc on the node), that they run as the manifests say: user
// 65532, no new privileges, the RuntimeDefault seccomp filter, no
// capabilities, a read-only root filesystem and read-only Secret mounts;
// the API token only in electd's container where a flavour mounts one;
// and electd's GOMEMLIMIT taken from its memory limit, which its Go runtime
// reports on /metrics.
func testSecurity(t *testing.T, ctx context.Context, d *Deployment, leader string, rep *Report) {
	// GOMEMLIMIT: the memory limit (deploy/k8s/app.yaml's 64Mi, as bytes
	// from resourceFieldRef), or the flavour's own value below its limit.
	wantLimit, wantEnv := int64(64<<20), "67108864"
	if d.F.GoMemLimit != 0 {
		wantLimit, wantEnv = d.F.GoMemLimit, fmt.Sprintf("%dMiB", d.F.GoMemLimit>>20)
	}
	pod, err := d.Pod(leader)
	if err != nil {
		t.Fatal(err)
	}
	const token = "/var/run/secrets/kubernetes.io/serviceaccount"
	var lines []string
	for _, c := range []string{"electd", "app"} {
		pid, err := d.N.ContainerPID(ContainerID(pod, c))
		if err != nil {
			t.Fatal(err)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		fields := map[string]string{}
		for _, l := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(l, ":")
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
		for k, want := range map[string]string{
			"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532",
			"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000", "CapPrm": "0000000000000000",
		} {
			if fields[k] != want {
				t.Errorf("%s: %s is %q, want %q", c, k, fields[k], want)
			}
		}
		mounts := mountOptions(t, pid)
		if !hasOpt(mounts["/"], "ro") {
			t.Errorf("%s: the root filesystem is mounted %q, want read-only", c, mounts["/"])
		}
		_, hasToken := mounts[token]
		wantToken := c == "electd" && d.F.SidecarToken
		if hasToken != wantToken {
			t.Errorf("%s: API token mounted: %v, want %v", c, hasToken, wantToken)
		}
		if hasToken && !hasOpt(mounts[token], "ro") {
			t.Errorf("%s: the token is mounted %q, want read-only", c, mounts[token])
		}
		if c == "electd" {
			if o, ok := mounts["/etc/electd/zookeeper"]; !ok || !hasOpt(o, "ro") {
				t.Errorf("electd: the ZooKeeper credentials are mounted %q (present %v), want read-only", o, ok)
			}
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if !strings.Contains("\x00"+string(env)+"\x00", "\x00GOMEMLIMIT="+wantEnv+"\x00") {
				t.Errorf("electd: GOMEMLIMIT is not %s in its environment", wantEnv)
			}
			// enableServiceLinks: false: no variables for the namespace's
			// Services (here the Service app would give APP_SERVICE_HOST).
			if strings.Contains(string(env), "APP_SERVICE_HOST=") {
				t.Errorf("electd: Service variables were injected (APP_SERVICE_HOST)")
			}
		} else if _, ok := mounts["/etc/electd/zookeeper"]; ok {
			t.Errorf("app: the ZooKeeper credentials are mounted in the app container")
		}
		lines = append(lines, fmt.Sprintf("%s: Uid %s, NoNewPrivs %s, Seccomp %s, CapEff %s, / %s, token %v",
			c, fields["Uid"], fields["NoNewPrivs"], fields["Seccomp"], fields["CapEff"], firstOpt(mounts["/"]), hasToken))
	}
	limit := metric(t, d, pod.Status.PodIP, "go_gc_gomemlimit_bytes")
	if got, err := strconv.ParseFloat(limit, 64); err != nil || int64(got) != wantLimit {
		t.Errorf("electd's go_gc_gomemlimit_bytes = %q, want %d", limit, wantLimit)
	}
	lines = append(lines, "electd /metrics: go_gc_gomemlimit_bytes "+limit)
	rep.Add(d.F.Name, "The leader pod's processes, as the node's kernel sees them (/proc):\n```text\n"+strings.Join(lines, "\n")+"\n```")
}

// mountOptions maps each mount point of a process to its options.
func mountOptions(t *testing.T, pid int) map[string]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 5 {
			m[f[4]] = f[5]
		}
	}
	return m
}

func hasOpt(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

func firstOpt(opts string) string { return strings.Split(opts, ",")[0] }

// metric reads one value from electd's /metrics on the pod's address.
func metric(t *testing.T, d *Deployment, ip, name string) string {
	resp, err := d.N.HTTPClient(5 * time.Second).Get("http://" + ip + ":4040/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}
