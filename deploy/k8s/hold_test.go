package k8s

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// restartBudget is what a probe sent to a crashed electd must wait for:
// the kubelet's relist (1 s) sees the crash and restarts the container,
// about a second to start it, and the restarted electd's wait for its
// first view (1 s) before it answers (docs/design/kubernetes.md, "A
// crashed electd's ports").
const restartBudget = 3 * time.Second

// Every flavour keeps electd's ports open through a crash of electd: a
// native sidecar listed before electd runs `electd hold-listener` on the
// directory electd's listen_hold_dir names, a memory-backed emptyDir both
// mount there and nothing else does.
func TestElectdHoldsItsPorts(t *testing.T) { forEachFlavour(t, checkElectdHoldsItsPorts) }

func checkElectdHoldsItsPorts(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		spec := &s.w.template.Spec
		dir := s.env["ELECTD_LISTEN_HOLD_DIR"].Value
		if dir == "" {
			t.Fatalf("%s: ELECTD_LISTEN_HOLD_DIR is not set: a crashed electd's ports refuse connections until it is back", s.w.ref)
		}
		var holder *corev1.Container
		for i := range spec.InitContainers {
			c := &spec.InitContainers[i]
			if c == s.c {
				break
			}
			if isHolder(c) {
				holder = c
			}
		}
		if holder == nil {
			t.Fatalf("%s: no init container running hold-listener before electd", s.w.ref)
		}
		if holder.RestartPolicy == nil || *holder.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("%s lacks restartPolicy: Always", holder.Name)
		}
		if holder.Image != s.c.Image {
			t.Errorf("%s runs %s, electd %s: one binary", holder.Name, holder.Image, s.c.Image)
		}
		if got := strings.Join(holder.Args, " "); !strings.Contains(got, "--dir "+dir) {
			t.Errorf("%s args %q, want --dir %s", holder.Name, got, dir)
		}
		mounted := func(c *corev1.Container) string {
			for _, m := range c.VolumeMounts {
				if m.MountPath == dir {
					return m.Name
				}
			}
			return ""
		}
		vol := mounted(s.c)
		if vol == "" || mounted(holder) != vol {
			t.Fatalf("electd mounts %q at %s, %s %q: want the same volume", vol, dir, holder.Name, mounted(holder))
		}
		for _, v := range spec.Volumes {
			if v.Name == vol && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
				t.Errorf("volume %s is not an emptyDir with medium Memory", vol)
			}
		}
		for _, c := range spec.Containers {
			if mounted(&c) != "" {
				t.Errorf("container %s mounts %s too", c.Name, dir)
			}
		}
		checkProbesWaitForARestart(t, s)
	}
}

// checkProbesWaitForARestart: where the pod is the Service's one endpoint
// (no proxy), the probes that list it again after a crash of electd wait
// for the restarted electd on the held port instead of failing. A leader
// that steps down still leaves at its first 503 in the readiness flavour.
func checkProbesWaitForARestart(t *testing.T, s sidecar) {
	t.Helper()
	if _, ok := s.env["ELECTD_PROXY_LISTEN"]; ok {
		return // other pods' proxies serve while this one restarts
	}
	for _, np := range []namedProbe{{"startupProbe", s.c.StartupProbe}, {"readinessProbe", s.c.ReadinessProbe}} {
		if np.p == nil {
			continue
		}
		if got := time.Duration(np.p.TimeoutSeconds) * time.Second; got < restartBudget {
			t.Errorf("%s: electd's %s timeoutSeconds %d is shorter than a restart of electd (%v): the probe fails on the held port",
				s.w.ref, np.kind, np.p.TimeoutSeconds, restartBudget)
		}
	}
	if p := s.c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path == "/healthz/leader" && p.FailureThreshold != 1 {
		t.Errorf("%s: readinessProbe failureThreshold %d: a leader that steps down must leave at its first 503", s.w.ref, p.FailureThreshold)
	}
}
