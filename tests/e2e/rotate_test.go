//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// rotationDoc is where the rotation procedure this scenario follows is
// documented: the scenario fails at once while it is missing.
const (
	rotationDoc     = "docs/operations.md"
	rotationHeading = "## Rotating the ZooKeeper credential"
)

// rotationSteps are that procedure's Secret contents, one rolling restart
// each: the new credential beside the previous one (the Secret's key
// auth_previous, which the manifests pass as zookeeper.auth_previous: the
// pods hold both, and the election's paths accept both), then the new
// one alone.
// The credentials are the test's own (testdata/common sets the first).
var rotationSteps = []struct {
	what string
	data map[string]string // the Secret's keys; a key not named is removed
}{
	{"the new credential beside the previous one", map[string]string{"auth": "electd:e2e-zookeeper-secret-2", "auth_previous": "electd:e2e-zookeeper-secret"}},
	{"the new credential alone", map[string]string{"auth": "electd:e2e-zookeeper-secret-2"}},
}

// testRotation rotates the ZooKeeper credential by rolling restarts as
// rotationDoc says, under load: every pod of every step joins the
// election (none refuses to stand), the Service never lists two pods, no
// request reaches a pod that does not lead, and where a rollout is one
// hand-over (OneHandoffPerRollout) the election always has exactly one
// leader and leadership moves once per step (issue 38: one leader
// throughout). The readiness flavour's rollout stops every old pod before
// its new ones join (docs/kubernetes.md): its time with no leader is
// reported, as for any rollout.
func testRotation(t *testing.T, d *Deployment, moduleDir string, rep *Report) {
	ctx := context.Background()
	doc, err := os.ReadFile(filepath.Join(moduleDir, rotationDoc))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "\n"+rotationHeading+"\n") {
		t.Fatalf("%s has no section %q: the credential rotation this scenario follows is not documented (issue 38, item 3)", rotationDoc, rotationHeading)
	}
	t0 := time.Now()
	first, _ := d.Leader.Current()
	// What each pod did, kept for a diagnosis (-e2e.logs) and quoted when a
	// step moves leadership more than once.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	states := d.WatchPodStates(wctx)
	sel := "app.kubernetes.io/name=app"
	apps, holds := d.WatchPodLogs(wctx, sel, "app"), d.WatchPodLogs(wctx, sel, "electd-hold")
	var newLeader string
	var steps []string
	for i, st := range rotationSteps {
		leader := d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("step %d: not at rest before", i+1))
		before, err := d.Pods()
		if err != nil {
			t.Fatal(err)
		}
		old := map[string]bool{}
		for _, p := range before {
			old[p.Labels["pod-template-hash"]] = true
		}
		s0 := time.Now()
		if err := d.setSecret(ctx, "electd-zookeeper-auth", st.data); err != nil {
			t.Fatal(err)
		}
		if _, err := d.N.Kubectl(ctx, "rollout", "restart", "deployment/app", "-n", d.F.Namespace); err != nil {
			t.Fatal(err)
		}
		// Every pod replaced: the Deployment's status may still count the
		// old ReplicaSet's pods as updated right after the restart.
		if err := wait.Until(ctx, 5*time.Minute, pollEvery, func() error {
			pods, err := d.Pods()
			if err != nil {
				return err
			}
			for _, p := range pods {
				if old[p.Labels["pod-template-hash"]] {
					return fmt.Errorf("%s of the outgoing ReplicaSet is still there", p.Name)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("step %d (%s): the rollout did not finish: %v", i+1, st.what, err)
		}
		newLeader = d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("step %d (%s): never settled, a pod may refuse to stand", i+1, st.what))
		end := time.Now()
		f := d.Measure(s0, end, leader, newLeader)
		for _, v := range d.Violations(s0, end) {
			t.Errorf("step %d: %s", i+1, v)
		}
		failedGraceful(t, d, fmt.Sprintf("rotation step %d", i+1), f, s0, end)
		if d.F.OneHandoffPerRollout && (f.Changes != 1 || f.Leaderless > 0) {
			t.Errorf("step %d (%s): %d leader changes and %s with no leader; want one hand-over and a leader throughout. What electd logged about the election meanwhile, from the Secret's change:\n%s",
				i+1, st.what, f.Changes, secs(f.Leaderless), strings.Join(d.transitions(s0, end), "\n"))
		}
		sources := []interface {
			Between(from, to time.Time) []PodLine
		}{states, apps, holds}
		if d.Electd != nil {
			sources = append(sources, d.Electd)
		}
		if err := d.keepLogs(strings.ReplaceAll(t.Name(), "/", "-")+fmt.Sprintf("-step%d", i+1), s0, end, sources...); err != nil {
			t.Error(err)
		}
		for _, p := range d.notJoined(ctx) {
			t.Errorf("step %d (%s): %s", i+1, st.what, p)
		}
		steps = append(steps, fmt.Sprintf("step %d, %s: %s -> %s, %d leader changes, longest time with no leader %s, %d requests failed",
			i+1, st.what, leader, newLeader, f.Changes, secs(f.Leaderless), f.Failed))
	}
	end := time.Now()
	f := d.Measure(t0, end, first, newLeader)
	line := fmt.Sprintf("Credential rotated by two rolling restarts (%s): %s; at rest after %s; longest time with no answer %s; %d requests failed, %d answered (%d by a pod that was not leading); at most %d endpoints.",
		rotationDoc, strings.Join(steps, "; "), secs(end.Sub(t0)), secs(d.Silence(t0, end)), f.Failed, f.Answered, f.NonLeader, f.MaxEndpoints)
	t.Log(line)
	rep.Add(d.F.Name, line)
	rep.Unannounced(d.F.Name, Unannounced{What: rotationName, F: f, Silent: d.Silence(t0, end)})
}

// setSecret replaces a Secret's data with data.
func (d *Deployment) setSecret(ctx context.Context, name string, data map[string]string) error {
	args := []string{"create", "secret", "generic", name, "-n", d.F.Namespace, "--dry-run=client", "-o", "json"}
	for k, v := range data {
		args = append(args, "--from-literal="+k+"="+v)
	}
	obj, err := d.N.Kubectl(ctx, args...)
	if err != nil {
		return err
	}
	code, b, err := d.N.Do(ctx, http.MethodPut, "/api/v1/namespaces/"+d.F.Namespace+"/secrets/"+name, strings.NewReader(obj))
	if err == nil && code != 200 {
		err = fmt.Errorf("PUT secret %s: %d %s", name, code, b)
	}
	return err
}

// notJoined asks each pod's electd whether it joined (/readyz) and says
// which did not, and why.
func (d *Deployment) notJoined(ctx context.Context) []string {
	pods, err := d.Pods()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	client := d.N.HTTPClient(5 * time.Second)
	for _, p := range pods {
		var why string
		err := wait.Until(ctx, 30*time.Second, pollEvery, func() error {
			resp, err := client.Get("http://" + p.Status.PodIP + ":4040/readyz")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b := make([]byte, 512)
			n, _ := resp.Body.Read(b)
			why = strings.TrimSpace(string(b[:n]))
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s", resp.Status)
			}
			return nil
		})
		if err != nil {
			out = append(out, fmt.Sprintf("%s has not joined the election: %v %s", p.Name, err, why))
		}
	}
	return out
}
