//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/nodetest"
)

// testDrain drains the node with the flavour's PodDisruptionBudget, as
// `kubectl drain` would before maintenance. With one node the replacements
// cannot be scheduled until it is uncordoned, which shows exactly what the
// budget allows: the readiness flavour's (maxUnavailable: 100%) lets every
// pod go at once, the label flavour's (maxUnavailable: 1) one, then refuses
// until a replacement is Ready.
func testDrain(t *testing.T, ctx context.Context, d *Deployment, leader string, rep *Report) {
	pdb, _ := d.N.Kubectl(ctx, "get", "pdb", "app", "-n", d.F.Namespace, "-o", "jsonpath={.spec} allowed={.status.disruptionsAllowed} healthy={.status.currentHealthy} desired={.status.desiredHealthy}")
	before, err := d.Pods()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	out, drainErr := d.N.Kubectl(ctx, "drain", nodetest.NodeName, "--ignore-daemonsets", "--delete-emptydir-data",
		"--pod-selector=app.kubernetes.io/name=app", "--timeout=40s")
	drained := time.Now()
	t.Cleanup(func() { d.N.Kubectl(context.Background(), "uncordon", nodetest.NodeName) })
	var evicted []string
	for _, p := range before {
		cur, err := d.Pod(p.Name)
		if err != nil || cur.DeletionTimestamp != nil {
			name := p.Name
			if name == leader {
				name += " (the leader)"
			}
			evicted = append(evicted, name)
		}
	}
	leaderless := func() time.Duration { return d.Leader.Longest(t0, time.Now(), func(l string) bool { return l == "" }) }
	if d.F.DrainEvictsAll {
		if drainErr != nil || len(evicted) != len(before) {
			t.Errorf("drain: want every pod evicted at once (maxUnavailable: 100%%), got %d of %d %v: %v", len(evicted), len(before), evicted, drainErr)
		}
	} else {
		if drainErr == nil || len(evicted) != 1 || !strings.Contains(drainErr.Error(), "disruption budget") {
			t.Errorf("drain: want one pod evicted, then refusals by the budget until the drain times out; got %d evicted %v: %v", len(evicted), evicted, drainErr)
		}
	}
	if _, err := d.N.Kubectl(ctx, "uncordon", nodetest.NodeName); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WaitStable(ctx, 3*time.Minute); err != nil {
		t.Fatalf("after uncordon: %v", err)
	}
	end := time.Now()
	for _, v := range d.Violations(t0, end) {
		t.Error(v)
	}
	errText := "none"
	if drainErr != nil {
		errText = lastLines(drainErr.Error(), 4)
	}
	s := fmt.Sprintf("`kubectl drain` of the only node (budget `%s`): %d of %d pods evicted (%s); the drain returned after %s; "+
		"the election had no leader for %s (until the replacements ran after `kubectl uncordon`, at rest %s after it).\n```text\n%s\nerror: %s\n```",
		pdb, len(evicted), len(before), strings.Join(evicted, ", "), secs(drained.Sub(t0)), secs(leaderless()), secs(end.Sub(drained)), lastLines(out, 8), errText)
	t.Log(s)
	rep.Add(d.F.Name, s)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
