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

// testDelete deletes the leader's pod count times, as `kubectl delete pod`
// does, and measures how long until the new leader holds the election, is
// listed by the EndpointSlice and answers through the ClusterIP. It checks
// every time that the Service never listed two pods, that no request
// reached a pod that did not lead, and the sidecar order the README
// promises: the kubelet stops the app first, and the sidecar starts to
// shut down (and so lets go of the leadership) only after the app exited.
func testDelete(t *testing.T, d *Deployment, count int, rep *Report) {
	ctx := context.Background()
	var results []Failover
	var orders []string
	for i := range count {
		leader := d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("delete %d: not at rest before", i+1))
		app, err := d.FollowLog(ctx, leader, "app")
		if err != nil {
			t.Fatal(err)
		}
		side, err := d.FollowLog(ctx, leader, "electd")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the followers are connected before the delete
		t0 := time.Now()
		if err := d.DeletePod(ctx, leader); err != nil {
			t.Fatal(err)
		}
		newLeader := d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("delete %d of %s: never settled", i+1, leader))
		end := time.Now()
		f := d.Measure(t0, end, leader, newLeader)
		results = append(results, f)
		t.Logf("delete %d: %s -> %s: elected %s, endpoint %s, answered %s, no endpoint for %s, %d failed, %d answered, max %d endpoints",
			i+1, leader, newLeader, secs(f.Elected), secs(f.Endpoint), secs(f.Service), secs(f.NoEndpoint), f.Failed, f.Answered, f.MaxEndpoints)
		for _, v := range d.Violations(t0, end) {
			t.Errorf("delete %d: %s", i+1, v)
		}
		failedGraceful(t, d, fmt.Sprintf("delete %d of %s", i+1, leader), f, t0, end)
		if newLeader == leader {
			t.Errorf("delete %d: %s still leads after its pod was deleted", i+1, leader)
		}
		if !app.Wait(30*time.Second) || !side.Wait(30*time.Second) {
			t.Errorf("delete %d: the deleted pod's logs did not end", i+1)
		}
		orders = append(orders, checkOrder(t, d, i+1, t0, f, app, side))
	}
	rep.Deletes(d.F.Name, results)
	rep.Add(d.F.Name, fmt.Sprintf("`kubectl delete pod <leader>`, %d times: the container stop order each time (times from the DELETE, by the container runtime's log timestamps):\n\n%s",
		count, "```text\n"+strings.Join(orders, "\n")+"\n```"))
}

// failedGraceful fails the test if a flavour that promises to fail no
// request through a graceful hand-over (Flavour.HoldTime) failed any
// between t0 and end, and lists them.
//
// Every request the client saw fail counts, "connect: no route to host"
// included: the prober adds to that error the address kube-proxy chose,
// as conntrack has it, so that its cause can be found.
func failedGraceful(t *testing.T, d *Deployment, what string, f Failover, t0, end time.Time) {
	t.Helper()
	if d.F.HoldTime == 0 || f.Failed == 0 {
		return
	}
	var errs, lost []string
	for _, a := range d.Probe.Between(t0, end) {
		line := fmt.Sprintf("sent +%s, done +%s: %s", secs(a.Sent.Sub(t0)), secs(a.Done.Sub(t0)), a.Err)
		switch {
		case a.Err == "":
		case a.Untranslated:
			lost = append(lost, line)
		default:
			errs = append(errs, line)
		}
	}
	// Counted among the failed in every figure, but no proxy saw them:
	// kube-proxy sent them nowhere (Answer.Untranslated).
	if len(lost) > 0 {
		t.Logf("%s: %d requests failed before any pod: the node's kube-proxy translated the Service's address for none of them; the first:\n%s",
			what, len(lost), strings.Join(lost[:min(len(lost), 10)], "\n"))
	}
	if len(errs) > 0 {
		t.Errorf("%s: %d of %d requests through the Service failed; the proxy holds each for at most %s through a graceful hand-over, so none may fail; the first:\n%s",
			what, len(errs), f.Failed+f.Answered, d.F.HoldTime, strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
}

// kubeletSteps says, from the kubelet's own log, when it saw the pod's
// graceful deletion (its config source calls that "SyncLoop DELETE") and
// when it began to stop the app ("Killing container"), from the DELETE at
// t0: where the time to the app's SIGTERM (at sig) went. It also counts
// the kubelet's complaints that its housekeeping, which runs in the loop
// that takes the API's updates, outlasted a second in the 3 s before sig.
func kubeletSteps(d *Deployment, pod string, t0, sig time.Time) string {
	ref := d.F.Namespace + "/" + pod
	step := func(substrs ...string) string {
		lines := d.N.ComponentLog("kubelet", t0, sig.Add(time.Second), substrs...)
		if len(lines) == 0 {
			return "-"
		}
		at, _ := nodetest.KlogTime(lines[0], t0)
		return "+" + secs(at.Sub(t0))
	}
	s := fmt.Sprintf("kubelet: saw the deletion %s, stops the app %s;",
		step(`"SyncLoop DELETE"`, ref), step("Killing container with a grace period", ref, `containerName="app"`))
	if n := len(d.N.ComponentLog("kubelet", sig.Add(-3*time.Second), sig, "Housekeeping took longer than expected")); n > 0 {
		s += fmt.Sprintf(" %d slow housekeeping;", n)
	}
	return s
}

// checkOrder checks, from the deleted leader's container logs, that the app
// got its signal and exited before the sidecar began to shut down, and
// that no one else was elected before the app had exited.
func checkOrder(t *testing.T, d *Deployment, i int, t0 time.Time, f Failover, app, side *LogFollower) string {
	appSig, ok1 := app.Find("signal")
	appExit, ok2 := app.Find("exit")
	// electd and lease-sidecar log "shutting down" on SIGTERM; lease-sidecar
	// may exit before that line is written, never before "stopped leading".
	sideStop, ok3 := side.Find("shutting down", "stopped leading")
	if !ok1 || !ok2 || !ok3 {
		t.Errorf("delete %d: missing log lines (app signal %v, app exit %v, sidecar shutting down %v); app: %v; sidecar: %v",
			i, ok1, ok2, ok3, app.Lines(), side.Lines())
		return fmt.Sprintf("delete %d: incomplete logs", i)
	}
	// Each line by its program's own time: containerd reads two containers'
	// output independently, so its read times need not keep their order.
	if sideStop.Written().Before(appExit.Written()) {
		t.Errorf("delete %d: the sidecar began shutting down at %s, before the app exited at %s",
			i, sideStop.Written().Format("15:04:05.000000"), appExit.Written().Format("15:04:05.000000"))
	}
	elected := t0.Add(f.Elected)
	switch {
	case d.F.WatchesApp && elected.Before(appSig.Written()):
		// The proxy's leader hands over once its app refuses connections,
		// which it does only once it has its SIGTERM (the app's own time of
		// its line: it closes its listener right after writing it).
		t.Errorf("delete %d: %s was elected at %s, before the deleted leader's app got SIGTERM at %s",
			i, f.New, elected.Format("15:04:05.000000"), appSig.Written().Format("15:04:05.000000"))
	case !d.F.WatchesApp && elected.Before(appExit.Written()):
		t.Errorf("delete %d: %s was elected at %s, before the deleted leader's app exited at %s",
			i, f.New, elected.Format("15:04:05.000000"), appExit.Written().Format("15:04:05.000000"))
	}
	line := fmt.Sprintf("delete %2d: %s app SIGTERM +%s, app exit +%s, sidecar \"shutting down\" +%s", i,
		kubeletSteps(d, f.Old, t0, appSig.At), secs(appSig.At.Sub(t0)), secs(appExit.At.Sub(t0)), secs(sideStop.At.Sub(t0)))
	if rel, ok := side.Find("released"); ok {
		line += fmt.Sprintf(", electd \"released\" +%s", secs(rel.At.Sub(t0)))
	}
	return line + fmt.Sprintf(", new leader elected +%s (as seen)", secs(f.Elected))
}
