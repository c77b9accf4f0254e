//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

// The ensemble under the flavour's load (requests through its Service
// every 20 ms), as an operator would disturb it (deploy/k8s/zookeeper.yaml,
// three servers behind their budget). What docs/design/session-and-faults.md ("Failure
// semantics", "election.on_suspend") promises there: a ZooKeeper server's
// restart, or its leader's, costs no leadership change while the
// connection comes back within the lease; no request is answered by a pod
// that does not lead; electd's liveness (/healthz) stays 200 while
// ZooKeeper is away, so the kubelet restarts no electd; and once a quorum
// is back, some participant leads again.
const (
	// zkOutage is how long all of ZooKeeper stays stopped: longer than
	// electd's session timeout (the manifests leave the default, 10 s).
	zkOutage = 15 * time.Second
	// leadBackBound bounds the time from a quorum's return to a leader:
	// a reconnect, and at worst a new session and a rejoin. A correctness
	// bound (leadership comes back), far above what it takes.
	leadBackBound = time.Minute
)

func testZooKeeper(t *testing.T, d *Deployment, rep *Report) {
	t.Run("rollout", func(t *testing.T) {
		zkScenario(t, d, rep, "`kubectl rollout restart statefulset/zookeeper`", true, func(ctx context.Context) error {
			if _, err := d.N.Kubectl(ctx, "rollout", "restart", "statefulset/zookeeper", "-n", d.F.Namespace); err != nil {
				return err
			}
			_, err := d.N.Kubectl(ctx, "rollout", "status", "statefulset/zookeeper", "-n", d.F.Namespace, "--timeout=10m")
			return err
		})
	})
	t.Run("leader", func(t *testing.T) {
		zkScenario(t, d, rep, "`kubectl delete pod` of the ensemble's leader", true, func(ctx context.Context) error {
			leader, err := zkLeader(ctx, d)
			if err != nil {
				return err
			}
			old, err := d.Pod(leader)
			if err != nil {
				return err
			}
			if err := d.DeletePod(ctx, leader); err != nil {
				return err
			}
			return wait.Until(ctx, 5*time.Minute, pollEvery, func() error {
				if p, err := d.Pod(leader); err != nil || p.UID == old.UID {
					return fmt.Errorf("%s not replaced yet", leader)
				}
				return zkReady(d, 3)
			})
		})
	})
	t.Run("stop", func(t *testing.T) { testZooKeeperStop(t, d, rep) })
}

// zkScenario runs disturb under load and checks what every scenario must
// keep: the flavour settles with a leader, no request answered by a pod
// that did not lead, no electd or app restarted, and, for a flavour that
// promises it through graceful hand-overs (the proxy), no request failed
// when graceful is set (the servers were stopped with SIGTERM, one at a
// time).
func zkScenario(t *testing.T, d *Deployment, rep *Report, what string, graceful bool, disturb func(context.Context) error) (Failover, time.Time) {
	ctx := context.Background()
	leader := d.atRest(t, ctx, 3*time.Minute, "not at rest")
	restarts, err := d.restarts()
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopCPU := context.WithCancel(ctx)
	defer stopCPU()
	cpu := WatchCPU(cctx, d.F.ElectionPath)
	t0 := time.Now()
	if err := disturb(ctx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	newLeader := d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("%s: never settled", what))
	end := time.Now()
	f := d.Measure(t0, end, leader, newLeader)
	for _, v := range d.Violations(t0, end) {
		t.Errorf("%s: %s", what, v)
	}
	after, err := d.restarts()
	if err != nil {
		t.Fatal(err)
	}
	if after != restarts {
		t.Errorf("%s: containers of the app's pods restarted (liveness): before %s, after %s", what, restarts, after)
	}
	if graceful {
		failedGraceful(t, d, what, f, t0, end)
	}
	if f.Failed > 0 {
		rep.Add(d.F.Name, zkEvidence(ctx, d, newLeader, t0, end))
	}
	zkKeepLogs(t, d, cpu, t0, end)
	s := fmt.Sprintf("ZooKeeper: %s under load: at rest again after %s; leader %s -> %s, %d leader changes, longest time with no leader in the election %s, "+
		"longest time with no ready endpoint %s; %d requests failed, %d answered, %d by a pod that was not leading; restarts of the app's containers: %s.",
		what, secs(end.Sub(t0)), leader, newLeader, f.Changes, secs(f.Leaderless), secs(f.NoEndpoint), f.Failed, f.Answered, f.NonLeader, after)
	t.Log(s)
	rep.Add(d.F.Name, s)
	return f, t0
}

// testZooKeeperStop stops every server for longer than the session
// timeout and starts them again: electd answers 503 on /healthz/leader once
// its lease ends and stays alive, and once two servers are back (a quorum)
// a participant leads within leadBackBound.
func testZooKeeperStop(t *testing.T, d *Deployment, rep *Report) {
	var quorum, leads time.Time
	var outage time.Duration
	zkScenario(t, d, rep, fmt.Sprintf("every server stopped (`kubectl scale statefulset/zookeeper --replicas=0`) for %s, then started", zkOutage), false, func(ctx context.Context) error {
		if _, err := d.N.Kubectl(ctx, "scale", "statefulset/zookeeper", "-n", d.F.Namespace, "--replicas=0"); err != nil {
			return err
		}
		if err := wait.Until(ctx, 3*time.Minute, pollEvery, func() error {
			if pods, err := d.zkPods(); err != nil || len(pods) > 0 {
				return fmt.Errorf("%d ZooKeeper pods left (%v)", len(pods), err)
			}
			return nil
		}); err != nil {
			return err
		}
		down := time.Now()
		time.Sleep(zkOutage) // the outage itself, not a wait for a condition
		if _, err := d.N.Kubectl(ctx, "scale", "statefulset/zookeeper", "-n", d.F.Namespace, "--replicas=3"); err != nil {
			return err
		}
		if err := wait.Until(ctx, 5*time.Minute, pollEvery, func() error { return zkReady(d, 2) }); err != nil {
			return err
		}
		quorum = time.Now()
		outage = quorum.Sub(down)
		return wait.Until(ctx, leadBackBound+time.Minute, pollEvery, func() error {
			at, err := d.someoneLeads(ctx)
			leads = at
			return err
		})
	})
	if quorum.IsZero() {
		return
	}
	back := leads.Sub(quorum)
	if back > leadBackBound {
		t.Errorf("a participant led %s after a quorum was back, more than %s", secs(back), leadBackBound)
	}
	s := fmt.Sprintf("ZooKeeper away (no server running) for %s; a quorum Ready again, then a participant's `/healthz/leader` 200 %s later.", secs(outage), secs(back))
	t.Log(s)
	rep.Add(d.F.Name, s)
}

// zkEvidence is what the servers and the participants logged of a
// scenario that failed requests, between t0 and end: each server's state
// changes (who led the ensemble when), its own replaced instances
// included, and every electd's connection and leadership events (a
// follower's proxy holds requests while its electd is cut off), times
// from t0.
func zkEvidence(ctx context.Context, d *Deployment, leader string, t0, end time.Time) string {
	var lines []string
	add := func(l PodLine, keep ...string) {
		if line, ok := excerpt(l, t0, 220, keep...); ok {
			lines = append(lines, line)
		}
	}
	for _, l := range d.ZooKeeper.Between(t0, end) {
		add(l, "Peer state changed")
	}
	for _, l := range d.Electd.Between(t0, end) {
		add(l, `"suspended"`, "reconnected", `"revoked"`, `"elected"`, "cannot reach", "does not resolve", "session established")
	}
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(a, b) })
	return fmt.Sprintf("What the ensemble's servers (their state changes) and the participants' electd (their connections; %s leads) logged meanwhile, from the scenario's start:\n```text\n", leader) + strings.Join(lines, "\n") + "\n```"
}

// zkKeepLogs writes, where -e2e.logs names a directory, every line the
// ensemble's servers and the participants' electd logged during a
// scenario, the CPU their electd got, the cluster DNS's answers and the
// requests that failed, for a diagnosis the report's excerpt does not
// cover.
func zkKeepLogs(t *testing.T, d *Deployment, cpu *CPUWatch, t0, end time.Time) {
	if *logsFlag == "" {
		return
	}
	lines := append(d.ZooKeeper.Between(t0, end), d.Electd.Between(t0, end)...)
	lines = append(lines, cpu.Between(t0, end)...)
	for _, a := range d.Probe.Between(t0, end) {
		if a.Err != "" {
			lines = append(lines, PodLine{"request", LogLine{a.Sent, fmt.Sprintf("sent, failed +%s later: %s", secs(a.Done.Sub(a.Sent)), a.Err)}})
		}
	}
	for _, l := range d.N.ComponentLog("dns", t0, end, d.F.Namespace) {
		if at, ok := nodetest.KlogTime(l, t0); ok {
			lines = append(lines, PodLine{"dns", LogLine{at, l[22:]}})
		}
	}
	if err := writeLog(strings.ReplaceAll(t.Name(), "/", "-"), t0, lines); err != nil {
		t.Error(err)
	}
}

// zkPods lists the ensemble's pods.
func (d *Deployment) zkPods() ([]corev1.Pod, error) {
	var list corev1.PodList
	err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/pods?labelSelector=app.kubernetes.io%2Fname%3Dzookeeper", &list)
	return list.Items, err
}

// zkReady passes once at least n of the ensemble's pods are Ready (their
// probe: srvr answers a mode, so they serve in a quorum). Its error says
// what each other pod is doing.
func zkReady(d *Deployment, n int) error {
	pods, err := d.zkPods()
	if err != nil {
		return err
	}
	ready := 0
	var others []string
	for _, p := range pods {
		if zkServing(p) {
			ready++
		} else {
			others = append(others, podState(p))
		}
	}
	if ready < n {
		return fmt.Errorf("%d ZooKeeper servers Ready, want %d; not Ready: %s", ready, n, strings.Join(others, "; "))
	}
	return nil
}

// zkServing: a server Ready and not on its way out.
func zkServing(p corev1.Pod) bool { return podReady(p) && p.DeletionTimestamp == nil }

// podState says where a pod stands: its phase, conditions that do not
// hold, and each container's state and restarts.
func podState(p corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", p.Name, p.Status.Phase)
	if p.DeletionTimestamp != nil {
		b.WriteString(", terminating")
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, ", %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, ", %s restarts %d", c.Name, c.RestartCount)
		switch s := c.State; {
		case s.Running != nil:
			fmt.Fprintf(&b, " running since %s", s.Running.StartedAt.Format(time.TimeOnly))
		case s.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s %s", s.Waiting.Reason, s.Waiting.Message)
		case s.Terminated != nil:
			fmt.Fprintf(&b, " terminated %s exit %d", s.Terminated.Reason, s.Terminated.ExitCode)
		}
		if t := c.LastTerminationState.Terminated; t != nil {
			fmt.Fprintf(&b, " (last: %s exit %d)", t.Reason, t.ExitCode)
		}
	}
	return b.String()
}

// logZooKeeper logs the last lines each server that is not Ready wrote,
// for a test that waited on the ensemble in vain.
func logZooKeeper(t *testing.T, d *Deployment, lines int) {
	pods, err := d.zkPods()
	if err != nil || d.ZooKeeper == nil {
		return
	}
	all := d.ZooKeeper.Between(time.Time{}, time.Now())
	for _, p := range pods {
		if zkServing(p) {
			continue
		}
		var own []string
		for _, l := range all {
			if l.Pod == p.Name {
				own = append(own, l.At.Format(time.TimeOnly+".000")+" "+l.Text)
			}
		}
		t.Logf("%s: the last %d of its %d lines:\n%s", podState(p), min(lines, len(own)), len(own), strings.Join(own[max(0, len(own)-lines):], "\n"))
	}
}

// zkLeader names the ensemble's leader: the server whose srvr says
// "Mode: leader".
func zkLeader(ctx context.Context, d *Deployment) (string, error) {
	pods, err := d.zkPods()
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		c, err := d.N.Netns.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, "2181"))
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(3 * time.Second))
		io.WriteString(c, "srvr")
		b, _ := io.ReadAll(c)
		c.Close()
		if strings.Contains(string(b), "Mode: leader") {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("no ZooKeeper server says it leads")
}

// someoneLeads passes once an app pod's electd answers 200 on
// /healthz/leader, and returns when.
func (d *Deployment) someoneLeads(ctx context.Context) (time.Time, error) {
	pods, err := d.Pods()
	if err != nil {
		return time.Time{}, err
	}
	client := d.N.HTTPClient(time.Second)
	for _, p := range pods {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Status.PodIP+":4040/healthz/leader", nil)
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return time.Now(), nil
		}
	}
	return time.Time{}, fmt.Errorf("no electd leads")
}

// restarts is the app pods' names with their containers' restart counts,
// as one comparable value: a pod replaced or a container restarted (by
// its liveness probe) changes it.
func (d *Deployment) restarts() (string, error) {
	pods, err := d.Pods()
	if err != nil {
		return "", err
	}
	var parts []string
	for _, p := range pods {
		parts = append(parts, fmt.Sprintf("%s electd %d app %d", p.Name, RestartCount(p, "electd"), RestartCount(p, "app")))
	}
	return strings.Join(parts, ", "), nil
}
