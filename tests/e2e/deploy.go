package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

// ProbeInterval is how often the Service is asked who answers (as in the
// issue's outside measurement: every 20 ms).
const ProbeInterval = 20 * time.Millisecond

// probeTimeout is how long the prober waits for an answer, beyond a
// flavour's HoldTime: a request that takes longer counts as failed.
const probeTimeout = 2 * time.Second

// Deployment is one flavour running on the node, watched from the start:
// who leads (ZooKeeper or the Lease), the Service's endpoints, and the
// answers to requests through its ClusterIP.
type Deployment struct {
	F      Flavour
	N      *nodetest.Node
	Leader Timeline[string]
	// Births: when each participant's node was made (electd flavours).
	Births Births
	EP     *EndpointWatch
	Probe  *Prober
	URL    string // http://<ClusterIP>:<port>/
	// ZooKeeper follows the ensemble's servers' logs, through their
	// restarts, and Electd every participant's (the flavours on the
	// shipped ensemble).
	ZooKeeper, Electd *PodLogs

	cancel context.CancelFunc
}

// Deploy creates the flavour's namespace, applies its overlay with
// `kubectl apply -k` and starts watching. The watchers start before the
// pods, so everything from the first election on is recorded.
func Deploy(ctx context.Context, n *nodetest.Node, f Flavour) (*Deployment, error) {
	if _, err := n.Kubectl(ctx, "create", "namespace", f.Namespace); err != nil {
		return nil, err
	}
	// The ServiceAccount admission plugin refuses pods until the
	// namespace's default ServiceAccount exists.
	if err := wait.Until(ctx, time.Minute, pollEvery, func() error {
		var sa corev1.ServiceAccount
		return n.Get("/api/v1/namespaces/"+f.Namespace+"/serviceaccounts/default", &sa)
	}); err != nil {
		return nil, err
	}
	if f.Ensemble {
		if err := n.ProvideVolumes(ctx, f.Namespace, "2Gi", zooKeeperUser, zooKeeperClaims...); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithCancel(context.Background())
	d := &Deployment{F: f, N: n, cancel: cancel}
	if f.Elector != "electd" {
		WatchLeaseHolder(wctx, n, f.Namespace, f.LeaseName, &d.Leader)
	}
	d.EP = WatchEndpoints(wctx, n, f.Namespace, "app")
	if f.Ensemble {
		d.ZooKeeper = d.WatchPodLogs(wctx, "app.kubernetes.io/name=zookeeper", "zookeeper")
		d.Electd = d.WatchPodLogs(wctx, "app.kubernetes.io/name=app", "electd")
	}
	if _, err := n.Kubectl(ctx, "apply", "-k", f.Overlay()); err != nil {
		cancel()
		return nil, err
	}
	// The ensemble's client Service exists once apply returns, seconds
	// before any electd can join (the servers must form a quorum first).
	if f.Elector == "electd" {
		if err := WatchZooKeeperLeader(wctx, n, f.Namespace, f.ElectionPath, &d.Leader, &d.Births); err != nil {
			cancel()
			return nil, err
		}
	}
	var svc corev1.Service
	if err := n.Get("/api/v1/namespaces/"+f.Namespace+"/services/app", &svc); err != nil {
		cancel()
		return nil, err
	}
	d.URL = fmt.Sprintf("http://%s:%d/", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	d.Probe = Probe(wctx, n, d.URL, ProbeInterval, probeTimeout+f.HoldTime)
	return d, nil
}

// Close stops watching and deletes the namespace, waiting until its pods
// are gone (each electd leaves the election on SIGTERM), then the volumes
// of its ensemble.
func (d *Deployment) Close(ctx context.Context) error {
	d.cancel()
	_, err := d.N.Kubectl(ctx, "delete", "namespace", d.F.Namespace, "--timeout=3m")
	if err == nil && d.F.Ensemble {
		err = d.N.ReleaseVolumes(ctx, d.F.Namespace)
	}
	return err
}

// Pods lists the app's pods, terminating ones included.
func (d *Deployment) Pods() ([]corev1.Pod, error) {
	var list corev1.PodList
	err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/pods?labelSelector=app.kubernetes.io%2Fname%3Dapp", &list)
	return list.Items, err
}

// Pod returns one pod by name.
func (d *Deployment) Pod(name string) (corev1.Pod, error) {
	var p corev1.Pod
	err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/pods/"+name, &p)
	return p, err
}

// podReady reports the pod's Ready condition.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// running reports whether every one of the pod's containers runs: the
// app, electd and electd-hold. A plain init container (electd-wait) has
// run once and exited 0 instead.
func running(p corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	all := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range all {
		done := s.State.Terminated != nil && s.State.Terminated.ExitCode == 0 && !sidecar(p, s.Name)
		if s.State.Running == nil && !done {
			return false
		}
	}
	return len(all) >= 2
}

// sidecar reports whether the pod's init container name restarts always
// (a native sidecar), so that it must run, not have run.
func sidecar(p corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// settle is how long the leader and the Service's ready endpoints must
// have stayed unchanged before the flavour counts as at rest. A pod whose
// readiness, labels or containers just changed is still being synced by
// the kubelet: each sync waits for the next relist of its pod lifecycle
// event generator (once a second), which a deletion cannot interrupt, and
// the deletion's own sync then waits for the relist after that, so the
// app's SIGTERM comes 1-2 s after the DELETE instead of at once (the
// kubelet's pod_workers.go: "this adds ~1s of latency on all transitions
// from sync to terminating"). A pod the kubelet has let be for 5 s, as any
// leader that has led for a while, gets it within milliseconds
// (docs/bench/kubelet-late-sigterm.md).
const settle = 5 * time.Second

// WaitStable waits until the flavour is at rest: three pods, all of one
// ReplicaSet, all running, none terminating; a leader among them; the
// Service listing it alone (OneEndpoint); the leader and the ready
// endpoints unchanged for settle; and a request through the ClusterIP
// answered by the leader. It returns the leader.
func (d *Deployment) WaitStable(ctx context.Context, timeout time.Duration) (string, error) {
	var leader string
	err := wait.Until(ctx, timeout, pollEvery, func() error {
		pods, err := d.Pods()
		if err != nil {
			return err
		}
		names := map[string]bool{}
		hashes := map[string]bool{}
		for _, p := range pods {
			if !running(p) {
				return fmt.Errorf("pod %s not running (phase %s, deleting %v)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
			}
			// Where every pod serves, one that is not Ready is not at rest.
			if !d.F.OneEndpoint && !podReady(p) {
				return fmt.Errorf("pod %s not Ready", p.Name)
			}
			names[p.Name] = true
			hashes[p.Labels["pod-template-hash"]] = true
		}
		if len(pods) != 3 || len(hashes) != 1 {
			return fmt.Errorf("%d pods of %d ReplicaSets, want 3 of 1", len(pods), len(hashes))
		}
		l, _ := d.Leader.Current()
		if !names[l] {
			return fmt.Errorf("leader %q is not one of the pods", l)
		}
		if ep, _ := d.EP.Ready.Current(); d.F.OneEndpoint && ep != Endpoints(l) {
			return fmt.Errorf("the Service lists %q, want the leader %s alone", ep, l)
		}
		now := time.Now()
		if n := len(d.Leader.Between(now.Add(-settle), now)) + len(d.EP.Ready.Between(now.Add(-settle), now)); n > 2 {
			return fmt.Errorf("the leader or the ready endpoints changed in the last %v", settle)
		}
		since := time.Now()
		if !waitAnswer(ctx, d.Probe, since, l, 5*time.Second) {
			return fmt.Errorf("no request through %s answered by the leader %s", d.URL, l)
		}
		if now, _ := d.Leader.Current(); now != l {
			return fmt.Errorf("the leader changed to %s meanwhile", now)
		}
		leader = l
		return nil
	})
	return leader, err
}

func waitAnswer(ctx context.Context, p *Prober, since time.Time, pod string, timeout time.Duration) bool {
	return wait.Until(ctx, timeout, 20*time.Millisecond, func() error {
		if _, ok := p.FirstFrom(since, pod); !ok {
			return errors.New("no answer")
		}
		return nil
	}) == nil
}

// pollEvery is how often the scenarios ask the API server whether a
// condition holds (tests/harness/wait's Until).
const pollEvery = 100 * time.Millisecond

// LogLine is one line of a container's log with the runtime's timestamp.
type LogLine struct {
	At   time.Time
	Text string
}

// Written is when the program says it wrote the line (its JSON "time"),
// else At. At is when containerd read the line from the container's
// output, which can lag the write while containerd is busy stopping the
// same pod.
func (l LogLine) Written() time.Time {
	var m struct {
		Time time.Time `json:"time"`
	}
	if json.Unmarshal([]byte(l.Text), &m) != nil || m.Time.IsZero() {
		return l.At
	}
	return m.Time
}

// LogFollower collects a container's log as the kubelet serves it
// (follow, with timestamps) until the container exits.
type LogFollower struct {
	mu    sync.Mutex
	lines []LogLine
	done  chan struct{}
}

// FollowLog starts following a container of a pod.
func (d *Deployment) FollowLog(ctx context.Context, pod, container string) (*LogFollower, error) {
	return d.log(ctx, pod, container, true)
}

// Log reads a container's log so far.
func (d *Deployment) Log(ctx context.Context, pod, container string) (*LogFollower, error) {
	lf, err := d.log(ctx, pod, container, false)
	if err == nil && !lf.Wait(30*time.Second) {
		err = fmt.Errorf("the log of %s/%s did not end", pod, container)
	}
	return lf, err
}

func (d *Deployment) log(ctx context.Context, pod, container string, follow bool) (*LogFollower, error) {
	body, err := d.N.Stream(ctx, fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&follow=%v&timestamps=true", d.F.Namespace, pod, container, follow))
	if err != nil {
		return nil, err
	}
	lf := &LogFollower{done: make(chan struct{})}
	go func() {
		defer close(lf.done)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			ts, text, _ := strings.Cut(sc.Text(), " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				continue
			}
			lf.mu.Lock()
			lf.lines = append(lf.lines, LogLine{at, text})
			lf.mu.Unlock()
		}
	}()
	return lf, nil
}

// Wait waits until the log ends (the container exited) or timeout.
func (lf *LogFollower) Wait(timeout time.Duration) bool {
	select {
	case <-lf.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Find returns the first line whose JSON "msg" is one of msgs.
func (lf *LogFollower) Find(msgs ...string) (LogLine, bool) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	for _, l := range lf.lines {
		var m struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(l.Text), &m) == nil && slices.Contains(msgs, m.Msg) {
			return l, true
		}
	}
	return LogLine{}, false
}

// Lines returns every line so far.
func (lf *LogFollower) Lines() []LogLine {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return append([]LogLine(nil), lf.lines...)
}

// DeletePod deletes a pod as `kubectl delete pod` does (a DELETE with the
// pod's own grace period) and returns when the API server has accepted it.
func (d *Deployment) DeletePod(ctx context.Context, name string) error {
	code, b, err := d.N.Do(ctx, http.MethodDelete, "/api/v1/namespaces/"+d.F.Namespace+"/pods/"+name, nil)
	if err == nil && code != 200 {
		err = fmt.Errorf("DELETE pod %s: %d %s", name, code, b)
	}
	return err
}

// ContainerID returns the runtime ID of a pod's container by name.
func ContainerID(p corev1.Pod, container string) string {
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == container {
			return s.ContainerID
		}
	}
	return ""
}

// RestartCount returns a container's restart count.
func RestartCount(p corev1.Pod, container string) int32 {
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == container {
			return s.RestartCount
		}
	}
	return -1
}
