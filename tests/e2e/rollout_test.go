//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testRollout runs `kubectl rollout restart` and checks what the README
// says of each flavour: the rollout completes; `kubectl rollout status`
// returns (label) or never does (readiness, where the README's `kubectl
// wait` on updatedReplicas is the check); the Service never lists two pods
// and no request reaches a pod that is not leading. It reports the leader
// changes, the time without a leader and without an endpoint.
func testRollout(t *testing.T, ctx context.Context, d *Deployment, leader string, rep *Report) {
	ns := d.F.Namespace
	before, err := d.Pods()
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, p := range before {
		old[p.Name] = true
	}
	t0 := time.Now()
	if _, err := d.N.Kubectl(ctx, "rollout", "restart", "deployment/app", "-n", ns); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if d.F.RolloutStatusReturns {
		out, err := d.N.Kubectl(ctx, "rollout", "status", "deployment/app", "-n", ns, "--timeout=5m")
		if err != nil {
			t.Fatalf("the README says `kubectl rollout status` finishes here: %v", err)
		}
		fmt.Fprintf(&b, "`kubectl rollout status` returned after %s:\n```text\n%s```\n", secs(time.Since(t0)), out)
	} else {
		out, err := d.N.Kubectl(ctx, "wait", "deploy/app", "-n", ns, "--for=jsonpath={.status.updatedReplicas}=3", "--timeout=5m")
		if err != nil {
			t.Fatalf("the README's check of a finished rollout failed: %v", err)
		}
		fmt.Fprintf(&b, "`kubectl wait deploy/app --for=jsonpath='{.status.updatedReplicas}'=3` returned after %s: `%s`.", secs(time.Since(t0)), strings.TrimSpace(out))
	}
	newLeader := d.atRest(t, ctx, 3*time.Minute, "the rollout did not complete")
	end := time.Now()
	if !d.F.RolloutStatusReturns {
		out, err := d.N.Kubectl(ctx, "rollout", "status", "deployment/app", "-n", ns, "--timeout=20s")
		if err == nil {
			t.Errorf("the README says `kubectl rollout status` never returns here, but it did:\n%s", out)
		}
		status, _ := d.N.Kubectl(ctx, "get", "deploy", "app", "-n", ns, "-o", "jsonpath={.status.replicas} {.status.updatedReplicas} {.status.readyReplicas} {.status.availableReplicas}")
		fmt.Fprintf(&b, " After the rollout, `kubectl rollout status --timeout=20s` said:\n```text\n%s\n%v\n```\nreplicas, updated, ready, available: `%s`.", strings.TrimSpace(out), err, status)
	}
	f := d.Measure(t0, end, leader, newLeader)
	for _, v := range d.Violations(t0, end) {
		t.Error(v)
	}
	failedGraceful(t, d, "rollout restart", f, t0, end)
	if old[newLeader] {
		t.Errorf("after the rollout the leader %s is a pod of the old ReplicaSet", newLeader)
	}
	var oldLeaders []string
	for _, c := range d.Leader.Between(t0, end) {
		if c.Value != "" && c.Value != leader && old[c.Value] {
			oldLeaders = append(oldLeaders, c.Value)
		}
	}
	if d.F.OneHandoffPerRollout && (f.Changes != 1 || len(oldLeaders) != 0) {
		t.Errorf("the rollout moved leadership %d times, %d of them to a pod of the old ReplicaSet %v: want once, to a new pod",
			f.Changes, len(oldLeaders), oldLeaders)
	}
	fmt.Fprintf(&b, "\n\n`kubectl rollout restart` (%s): settled after %s; %d leader changes (%d to a pod of the outgoing ReplicaSet: %v); longest time with no leader in the election %s; longest time with no ready endpoint %s; at most %d endpoints; %d requests failed, %d answered, %d by a pod that was not leading.",
		leader+" -> "+newLeader, secs(end.Sub(t0)), f.Changes, len(oldLeaders), oldLeaders, secs(f.Leaderless), secs(f.NoEndpoint), f.MaxEndpoints, f.Failed, f.Answered, f.NonLeader)
	t.Log(b.String())
	rep.Add(d.F.Name, b.String())
}
