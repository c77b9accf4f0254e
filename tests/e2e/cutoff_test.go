//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/internal/election/zksession"
)

// cutOffFor is how long the leader's pod is cut off: three session
// timeouts, so its session surely expires and a new leader serves a while.
const cutOffFor = 30 * time.Second

// testCutOff cuts the leader's pod off from everything for cutOffFor, as
// the rest of a cluster sees a lost node: the pod drops every packet but
// its loopback's, in its own network namespace. Its session expires
// after the session timeout and another pod leads; no answer may come from a pod that did not lead. The proxy
// flavour must fail no request that reached a pod (the followers' proxies
// hold what arrives for the lost leader until the new one takes it) and
// answer from the new leader within the session timeout plus 1 s (issue
// 38's bar). A connection kube-proxy sent to the lost pod's address never
// reached an electd: counted apart, it is what the Service's readiness
// costs (docs/kubernetes.md, "A crashed sidecar, a lost node").
func testCutOff(t *testing.T, ctx context.Context, d *Deployment, leader string, rep *Report) {
	pod, err := d.Pod(leader)
	if err != nil {
		t.Fatal(err)
	}
	ip := pod.Status.PodIP
	restarts := map[string]int32{"electd": RestartCount(pod, "electd"), "app": RestartCount(pod, "app")}
	pid, err := d.N.ContainerPID(ContainerID(pod, "app"))
	if err != nil {
		t.Fatal(err)
	}
	// The pod drops everything but loopback in its own network namespace,
	// so the node sees a pod that stopped answering, as other nodes see a
	// lost one: a connection kube-proxy sent there is tracked (its SYN
	// left) and its retries follow it. A drop in the node's own OUTPUT
	// would come before conntrack confirms the connection, and each retry
	// would be balanced anew, which no real client's node does. One
	// iptables-restore: every rule lands at once, so the cut has one
	// instant, t0; a request sent before it is in flight at the cut, as in
	// any crash, and not counted (Probe.Between is by sending).
	netns := fmt.Sprintf("--net=/proc/%d/ns/net", pid)
	rules := []string{"INPUT 1 ! -i lo", "OUTPUT 1 ! -o lo"}
	apply := func(op string) error {
		var in strings.Builder
		in.WriteString("*filter\n")
		for _, r := range rules {
			if op == "-D" {
				r = strings.Replace(r, " 1 ", " ", 1)
			}
			in.WriteString(op + " " + r + " -j DROP\n")
		}
		in.WriteString("COMMIT\n")
		cmd := exec.CommandContext(ctx, "nsenter", netns, "--", "iptables-restore", "-w", "--noflush")
		cmd.Stdin = strings.NewReader(in.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore %s in %s's namespace: %v: %s", op, leader, err, out)
		}
		return nil
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := apply("-D"); err != nil {
				t.Error(err)
			}
		}
	}
	if err := apply("-I"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	t.Cleanup(restore)
	// The cut holds: electd's own port does not answer from the node, and
	// the connections kube-proxy sent to the pod meanwhile stay unanswered
	// (conntrack shows them).
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if c, err := d.N.Netns.DialContext(dctx, "tcp", net.JoinHostPort(ip, "4040")); err == nil {
		c.Close()
		t.Errorf("%s:4040 still answers from the node after the cut", ip)
	}
	cancel()
	timer := time.NewTimer(time.Until(t0.Add(3 * time.Second)))
	<-timer.C
	stuck := unreplied(d, ip)
	timer.Reset(time.Until(t0.Add(cutOffFor)))
	<-timer.C
	restore()
	back := time.Now()
	// The kubelet's liveness probes got no answer either: after three it
	// restarts the container (SIGTERM, then electd's graceful shutdown),
	// the cut's aftermath, which belongs to this scenario and not the next.
	// Wait for the last probe sent in the cut to time out (2 s), then for
	// every container so killed to run again.
	killed, err := awaitLivenessKills(ctx, d, leader, t0, back.Add(livenessTimeout+time.Second), restarts)
	if err != nil {
		t.Fatalf("after the cut-off of %s: %v", leader, err)
	}
	newLeader := d.atRest(t, ctx, 3*time.Minute, fmt.Sprintf("after the cut-off of %s: never settled", leader))
	end := time.Now()
	f := d.Measure(t0, end, leader, newLeader)
	u := Unannounced{What: cutOffName, F: f, Silent: d.Silence(t0, end)}
	var reached []string
	for _, a := range d.Probe.Between(t0, end) {
		switch {
		case a.Err == "":
		case unreached(a):
			u.Unreached++
		default:
			reached = append(reached, fmt.Sprintf("sent +%s, done +%s: %s", secs(a.Sent.Sub(t0)), secs(a.Done.Sub(t0)), a.Err))
		}
	}
	// client-go's elector is measured here, not held to electd's bars: a
	// tuned Lease (2 s) can elect before the kubelet withdraws the lost
	// pod, so the Service lists both for a moment. That is its finding,
	// in the report; for electd's flavours it fails the test.
	var findings []string
	for _, v := range d.Violations(t0, end) {
		if d.F.Peer {
			findings = append(findings, v)
			continue
		}
		t.Error(v)
	}
	if newLeader == leader || f.Changes == 0 {
		t.Errorf("%s cut off for %s still leads: its session should have expired", leader, cutOffFor)
	}
	bar := zksession.DefaultSessionTimeout + time.Second
	if d.F.HoldTime > 0 {
		if len(reached) > 0 {
			t.Errorf("cut-off of %s: %d requests that reached a pod failed; its proxies hold them for %s, so none may fail; the first:\n%s",
				leader, len(reached), d.F.HoldTime, strings.Join(reached[:min(len(reached), 10)], "\n"))
		}
		if f.Service == 0 {
			t.Errorf("cut-off of %s: the new leader %s never answered through the ClusterIP", leader, newLeader)
		}
	}
	// How soon is a figure for the report, not a test's bar: ZooKeeper
	// expires the session within its timeout plus a tick, and what follows
	// takes CPU that a loaded node may not give (figures belong to kept
	// reports, not to timed assertions).
	met := "met"
	if f.Service == 0 || f.Service > bar {
		met = "missed"
	}
	u.Withdrawn = d.withdrawn(t0, leader)
	withdrawn := "never"
	if u.Withdrawn > 0 {
		withdrawn = "after " + secs(u.Withdrawn)
	}
	line := fmt.Sprintf("Cut off for %s (every packet to and from %s dropped in its namespace; %s; %d connections to it unanswered 3 s in): the EndpointSlice withdrew it %s; a new leader %s elected after %s, listed after %s, answering through the ClusterIP after %s (the session timeout + 1 s, %s: %s); the cut ended at %s, the kubelet restarted after failed liveness probes: %s; at rest again after %s; longest time with no answer %s; %d requests failed (%d never reached an electd), %d answered (%d by a pod that was not leading); at most %d endpoints.",
		secs(cutOffFor), leader, ip, stuck, withdrawn, newLeader, secs(f.Elected), secs(f.Endpoint), secs(f.Service), secs(bar), met, secs(back.Sub(t0)), killed, secs(end.Sub(t0)),
		secs(u.Silent), f.Failed, u.Unreached, f.Answered, f.NonLeader, f.MaxEndpoints)
	if len(findings) > 0 {
		line += fmt.Sprintf(" client-go's elector broke electd's bars here: %s.", strings.Join(findings, "; "))
	}
	t.Log(line)
	rep.Add(d.F.Name, line)
	rep.Unannounced(d.F.Name, u)
}

// unreplied counts the node's connections to ip that conntrack has seen
// no answer to: what kube-proxy sent to a cut-off pod.
func unreplied(d *Deployment, ip string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := d.N.Netns.CommandContext(ctx, "conntrack", "-L", "-p", "tcp", "--reply-src", ip).CombinedOutput()
	return strings.Count(string(out), "UNREPLIED")
}

// livenessTimeout is the shipped liveness probes' timeoutSeconds.
const livenessTimeout = 2 * time.Second

// awaitLivenessKills waits until after, when no liveness probe of pod sent
// in the cut can still be pending, and then until every container the
// kubelet killed for failed liveness probes since t0 (its Killing events)
// runs again, restarted past its count in restarts. It says which it
// killed, "none" if none.
func awaitLivenessKills(ctx context.Context, d *Deployment, pod string, t0, after time.Time, restarts map[string]int32) (string, error) {
	var killed []string
	err := wait.Until(ctx, 3*time.Minute, pollEvery, func() error {
		if time.Now().Before(after) {
			return fmt.Errorf("a liveness probe sent in the cut may still fail until %s", after.Format("15:04:05.000"))
		}
		var evs corev1.EventList
		if err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/events?fieldSelector=involvedObject.name%3D"+pod, &evs); err != nil {
			return err
		}
		killed = killed[:0]
		for _, e := range evs.Items {
			last := e.LastTimestamp.Time
			if e.EventTime.Time.After(last) {
				last = e.EventTime.Time
			}
			if e.Reason != "Killing" || !strings.Contains(e.Message, "liveness") || last.Before(t0.Truncate(time.Second)) {
				continue
			}
			for c := range restarts {
				if strings.Contains(e.Message, "Container "+c+" ") && !slices.Contains(killed, c) {
					killed = append(killed, c)
				}
			}
		}
		p, err := d.Pod(pod)
		if err != nil {
			return err
		}
		for _, c := range killed {
			if RestartCount(p, c) <= restarts[c] {
				return fmt.Errorf("%s's %s failed its liveness probes in the cut and is not restarted yet", pod, c)
			}
		}
		if !running(p) {
			return fmt.Errorf("%s's containers do not all run", pod)
		}
		return nil
	})
	if len(killed) == 0 {
		return "none", err
	}
	slices.Sort(killed)
	return strings.Join(killed, " and "), err
}
