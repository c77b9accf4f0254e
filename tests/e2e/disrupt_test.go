//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

// testKill sends SIGKILL to one container of the leader's pod through
// containerd, as a crash would, and waits until the kubelet has restarted
// it and the flavour is at rest again.
//
// Killing electd leaves its ZooKeeper session alive while its pod's app
// keeps running: the restarted electd resumes that session and so keeps
// the leadership (checkCrash). Should it not, its session expires and
// another pod leads (docs/design/session-and-faults.md, "Failure
// semantics"); the label flavour keeps the label on the pod until the new
// leader removes it, so requests may still reach the old app for a moment:
// counted and reported, since the README calls the label routing, not a
// lock. Killing the app leaves electd leading,
// but for the proxy flavour, whose leader hands over once its app refuses
// connections (and stands again once the restarted app takes them).
func testKill(t *testing.T, ctx context.Context, d *Deployment, leader, container string, rep *Report) {
	pod, err := d.Pod(leader)
	if err != nil {
		t.Fatal(err)
	}
	restarts := RestartCount(pod, container)
	pid, err := d.N.ContainerPID(ContainerID(pod, container))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := d.N.Signal(ContainerID(pod, container), "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	// When the process was gone: what it had accepted died with it.
	dead, err := nodetest.ProcessGone(ctx, pid, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var refusals, apiRefusals func() int
	if container == "electd" && d.F.HoldTime > 0 {
		refusals = portRefusals(ctx, d, net.JoinHostPort(pod.Status.PodIP, "4041"))
	}
	if container == "electd" && d.F.HeldAPI {
		apiRefusals = portRefusals(ctx, d, net.JoinHostPort(pod.Status.PodIP, "4040"))
	}
	if err := wait.Until(ctx, 2*time.Minute, pollEvery, func() error {
		p, err := d.Pod(leader)
		if err != nil {
			return err
		}
		if RestartCount(p, container) <= restarts {
			return fmt.Errorf("%s of %s not restarted yet", container, leader)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	newLeader := d.atRest(t, ctx, 3*time.Minute, "never settled")
	end := time.Now()
	f := d.Measure(t0, end, leader, newLeader)
	if d.F.OneEndpoint && f.MaxEndpoints > 1 {
		t.Errorf("SIGKILL of %s: the Service listed %d pods at once", container, f.MaxEndpoints)
	}
	// A pod answering while not leading is a broken promise, except where
	// the flavour's routing may lag a crashed sidecar (see above).
	if f.NonLeader > 0 && !(d.F.StaleAfterCrash && container == "electd") {
		for _, v := range d.Violations(t0, end) {
			t.Error(v)
		}
	}
	if container == "electd" {
		if apiRefusals != nil {
			if n := apiRefusals(); n > 0 {
				t.Errorf("SIGKILL of %s's electd: its API port refused %d connections; electd-hold keeps it open for the kubelet's probes", leader, n)
			}
		}
		if refusals != nil {
			if n := refusals(); n > 0 {
				t.Errorf("SIGKILL of %s's electd: its proxy port refused %d connections; electd-hold keeps it open", leader, n)
			}
		}
		checkCrash(t, d, leader, newLeader, t0, dead, end, f, rep)
	}
	if container == "app" {
		// The app's crash is a graceful hand-over for the proxy: its
		// electd steps down and hands the held requests on.
		failedGraceful(t, d, "SIGKILL of the leader's app", f, t0, end)
	}
	switch {
	case container == "app" && !d.F.WatchesApp && newLeader != leader:
		t.Errorf("SIGKILL of the app moved leadership from %s to %s; electd does not watch the app here", leader, newLeader)
	case container == "app" && d.F.WatchesApp && newLeader == leader:
		t.Errorf("SIGKILL of the app left %s leading; its proxy hands over when its app refuses connections", leader)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SIGKILL of the leader's `%s` container (%s): restarted by the kubelet; leader afterwards %s", container, leader, newLeader)
	if newLeader != leader {
		fmt.Fprintf(&b, ", elected after %s, listed after %s, answering through the ClusterIP after %s", secs(f.Elected), secs(f.Endpoint), secs(f.Service))
	}
	fmt.Fprintf(&b, "; longest time with no ready endpoint %s; %d requests failed, %d answered (%d by a pod that was not leading); at most %d endpoints.",
		secs(f.NoEndpoint), f.Failed, f.Answered, f.NonLeader, f.MaxEndpoints)
	t.Log(b.String())
	rep.Add(d.F.Name, b.String())
}

// portRefusals dials addr, the crashed pod's proxy port, from the node
// every 20 ms until the returned function is called, which counts the
// dials that failed. electd-hold keeps the port open through the crash.
func portRefusals(ctx context.Context, d *Deployment, addr string) func() int {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		failed := 0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- failed
				return
			case <-tick.C:
			}
			dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			c, err := d.N.Netns.DialContext(dctx, "tcp", addr)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					failed++
				}
				continue
			}
			c.Close()
		}
	}()
	return func() int {
		stop()
		return <-done
	}
}

// checkCrash holds a SIGKILLed electd to the bar the design can promise
// (docs/design/kubernetes.md, "A crashed sidecar, a lost node"). The kubelet
// restarts it within about a second and it resumes its session, so
// leadership does not move. A request electd had accepted dies with it
// (no process can answer on a connection whose holder is gone): one in
// flight until the process was seen gone may fail. In the proxy flavour
// electd-hold keeps the proxy's ports open meanwhile, so no request sent
// after that may fail. In the others what
// kube-proxy sends to the crashed pod fails until the EndpointSlice lists
// the pod Ready again, plus kube-proxy's second (CrashFailures). There the
// held API port keeps every probe of the pod from failing, and the pod
// leaves the Service once: at the kubelet's relist that sees the crash. No request
// that got an HTTP answer may fail. Every failure counts as failed; those
// that never reached an electd are counted apart too; client-go's
// flavours are measured, their late failures logged. It records the
// flavour's row of the crash and lost-node table.
func checkCrash(t *testing.T, d *Deployment, leader, newLeader string, t0, dead, end time.Time, f Failover, rep *Report) {
	t.Helper()
	if newLeader != leader || f.Changes > 0 {
		t.Errorf("SIGKILL of %s's electd moved leadership %d times, to %s: a restarted electd resumes its session and its leadership", leader, f.Changes, newLeader)
	}
	var back time.Time // the zero time: no failure after dead is excused
	window := fmt.Sprintf("what was in flight until the process was gone (+%s; electd-hold kept the proxy's ports open)", secs(dead.Sub(t0)))
	if d.F.HoldTime == 0 {
		has := func(e Endpoints) bool { return e.Has(leader) }
		if out, ok := d.EP.Ready.First(t0, func(e Endpoints) bool { return !has(e) }); ok {
			back, _ = d.EP.Ready.First(out, has)
			if again, ok := d.EP.Ready.First(back, func(e Endpoints) bool { return !has(e) }); ok && again.Before(end) && d.F.HeldAPI {
				t.Errorf("SIGKILL of %s's electd: the pod left the Service again +%s after its return: one restart, one withdrawal", leader, secs(again.Sub(t0)))
			}
		} else {
			back = t0 // never withdrawn: nothing may fail
		}
		window = fmt.Sprintf("the crashed pod's restart window (the EndpointSlice listed it Ready again +%s, and kube-proxy's %s)",
			secs(back.Sub(t0)), secs(kubeProxyLag))
	}
	if d.F.HeldAPI && d.F.HoldTime == 0 {
		// The held port keeps each probe waiting for the restarted electd,
		// which answers once settled; with no startup probe the first
		// readiness probe lists the pod again.
		failed, err := probeFailures(d, leader, "electd", t0)
		if err != nil {
			t.Error(err)
		}
		for _, f := range failed {
			t.Errorf("SIGKILL of %s's electd: a probe of the crashed pod failed (%s); electd-hold keeps the port and the restarted electd answers", leader, f)
		}
	}
	answers := d.Probe.Between(t0, end)
	u := Unannounced{What: crashName, F: f, Silent: d.Silence(t0, end), Withdrawn: d.withdrawn(t0, leader)}
	for _, a := range answers {
		if unreached(a) {
			u.Unreached++
		}
	}
	allowed, late := CrashFailures(answers, dead, back)
	if len(late) > 0 {
		var lines []string
		for _, a := range late[:min(len(late), 10)] {
			lines = append(lines, fmt.Sprintf("sent +%s, done +%s: %s", secs(a.Sent.Sub(t0)), secs(a.Done.Sub(t0)), a.Err))
		}
		msg := fmt.Sprintf("SIGKILL of %s's electd: %d requests failed outside %s or with an HTTP answer; the first:\n%s",
			leader, len(late), window, strings.Join(lines, "\n"))
		if d.F.Peer {
			// client-go's sidecar is measured, not held to electd's bar
			// (as in the cut-off): its failures are in the counts.
			t.Log(msg)
		} else {
			t.Error(msg)
		}
	}
	t.Logf("SIGKILL of %s's electd: %d requests failed (all counted), %d within %s, %d never reached an electd",
		leader, f.Failed, len(allowed), window, u.Unreached)
	rep.Unannounced(d.F.Name, u)
}

// probeFailures lists the kubelet's Unhealthy events for pod's container
// since t0: each failed probe, with its message.
func probeFailures(d *Deployment, pod, container string, t0 time.Time) ([]string, error) {
	var evs corev1.EventList
	if err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/events?fieldSelector=involvedObject.name%3D"+pod, &evs); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range evs.Items {
		last := e.LastTimestamp.Time
		if e.EventTime.Time.After(last) {
			last = e.EventTime.Time
		}
		if e.Reason != "Unhealthy" || !strings.Contains(e.InvolvedObject.FieldPath, "{"+container+"}") || last.Before(t0.Truncate(time.Second)) {
			continue
		}
		out = append(out, fmt.Sprintf("%dx %s", max(e.Count, 1), e.Message))
	}
	return out, nil
}
