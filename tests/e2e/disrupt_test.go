//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// testKill sends SIGKILL to one container of the leader's pod through
// containerd, as a crash would, and waits until the kubelet has restarted
// it and the flavour is at rest again.
//
// Killing electd leaves its ZooKeeper session to expire (docs/design/session-and-faults.md,
// "Failure semantics": a crashed leader is replaced within the negotiated
// timeout + 1.5 x tickTime), while its pod's app keeps running. The
// readiness flavour's probe fails within a second, so no request reaches
// that app after a new leader is elected; the label flavour keeps the label
// on the pod until the new leader removes it, so requests may still reach
// the old app for a moment: counted and reported, since the README calls
// the label routing, not a lock. Killing the app leaves electd leading,
// but for the proxy flavour, whose leader hands over once its app refuses
// connections (and stands again once the restarted app takes them).
func testKill(t *testing.T, d *Deployment, container string, rep *Report) {
	ctx := context.Background()
	leader, err := d.WaitStable(ctx, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := d.Pod(leader)
	if err != nil {
		t.Fatal(err)
	}
	restarts := RestartCount(pod, container)
	t0 := time.Now()
	if err := d.N.Signal(ContainerID(pod, container), "SIGKILL"); err != nil {
		t.Fatal(err)
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
	newLeader, err := d.WaitStable(ctx, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
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
