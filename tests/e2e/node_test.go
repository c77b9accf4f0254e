//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

var (
	deletesFlag  = flag.Int("e2e.deletes", 10, "how many times each flavour's leader pod is deleted")
	drainsFlag   = flag.Int("e2e.drains", 1, "how many times each electd flavour's node is drained")
	reportFlag   = flag.String("e2e.report", "", "write the run's figures as Markdown to this file")
	logsFlag     = flag.String("e2e.logs", "", "write every line the ZooKeeper servers and the participants' electd logged during each ZooKeeper scenario, and what each pod did in each rotation step, to this directory")
	flavoursFlag = flag.String("e2e.flavours", "", "comma-separated flavours to run, \"secrets\" for the missing-Secrets scenario, \"docs\" for the docs' commands (default: all)")
)

// TestNode runs every flavour's scenarios on one real node, one flavour
// after the other, each in a namespace of its own.
func TestNode(t *testing.T) {
	moduleDir, err := nodetest.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	run := StartRunInfo(moduleDir)
	n := nodetest.Start(t)
	rep := NewReport()
	rep.Header(versions(t, n))
	if *flavoursFlag == "" || contains(strings.Split(*flavoursFlag, ","), "secrets") {
		t.Run("secrets", func(t *testing.T) { testSecrets(t, n, rep) })
	}
	if *flavoursFlag == "" || contains(strings.Split(*flavoursFlag, ","), "docs") {
		t.Run("docs", func(t *testing.T) { testDocs(t, n, moduleDir, rep) })
	}
	var ran []Flavour
	for _, f := range Flavours {
		if *flavoursFlag != "" && !contains(strings.Split(*flavoursFlag, ","), f.Name) {
			continue
		}
		ran = append(ran, f)
		t.Run(f.Name, func(t *testing.T) { runFlavour(t, n, moduleDir, f, rep) })
	}
	md := "# make e2e: electd's manifests on a real node\n\n" + run.End(reproFlags()) + "\n\n" + rep.Markdown(ran)
	if t.Failed() {
		md = "**This run failed** (`go test` reported errors; see its output).\n\n" + md
	}
	t.Logf("report:\n%s", md)
	if *reportFlag != "" {
		if err := os.WriteFile(*reportFlag, []byte(md), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// reproFlags are the e2e flags this run was given, but the report's path.
func reproFlags() string {
	var fl []string
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "e2e.") && f.Name != "e2e.report" && f.Name != "e2e.logs" {
			fl = append(fl, "-"+f.Name+"="+f.Value.String())
		}
	})
	return strings.Join(fl, " ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

func runFlavour(t *testing.T, n *nodetest.Node, moduleDir string, f Flavour, rep *Report) {
	ctx := context.Background()
	d, err := Deploy(ctx, n, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(ctx); err != nil {
			t.Errorf("deleting the namespace: %v", err)
		}
	})
	deployed := time.Now()
	// The first start includes the ensemble's: three JVMs, a quorum.
	leader := d.atRest(t, ctx, 6*time.Minute, fmt.Sprintf("%s never settled", f.Name))
	t.Logf("%s settled %v after kubectl apply -k, leader %s", f.Name, time.Since(deployed).Round(10*time.Millisecond), leader)
	// Most scenarios start from the flavour at rest and its leader, with ctx:
	// it outlives each test, as their t.Cleanup functions need.
	rest := func(t *testing.T) string { return d.atRest(t, ctx, 3*time.Minute, "not at rest") }
	if !f.Peer {
		t.Run("start", func(t *testing.T) { testStart(t, d, deployed, rep) })
		t.Run("security", func(t *testing.T) {
			testSecurity(t, ctx, d, d.atRest(t, ctx, time.Minute, "not at rest"), rep)
		})
		t.Run("policies", func(t *testing.T) { testPolicies(t, ctx, d, rest(t), rep) })
	}
	t.Run("delete", func(t *testing.T) { testDelete(t, d, *deletesFlag, rep) })
	// client-go's elector runs in the peers' container named electd: its
	// crash and a lost pod are measured beside electd's, nothing more.
	t.Run("kill-electd", func(t *testing.T) { testKill(t, ctx, d, rest(t), "electd", rep) })
	if f.Peer {
		t.Run("cutoff", func(t *testing.T) { testCutOff(t, ctx, d, rest(t), rep) })
		return
	}
	t.Run("kill-app", func(t *testing.T) { testKill(t, ctx, d, rest(t), "app", rep) })
	t.Run("cutoff", func(t *testing.T) { testCutOff(t, ctx, d, rest(t), rep) })
	t.Run("rollout", func(t *testing.T) { testRollout(t, ctx, d, rest(t), rep) })
	for range *drainsFlag {
		t.Run("drain", func(t *testing.T) { testDrain(t, ctx, d, rest(t), rep) })
	}
	if f.ZooKeeperScenarios {
		t.Run("zookeeper", func(t *testing.T) { testZooKeeper(t, d, rep) })
	}
	// Last: it changes the flavour's Secret for good.
	t.Run("rotation", func(t *testing.T) { testRotation(t, d, moduleDir, rep) })
}

// testStart: from the first election on, the Service never listed two pods
// and no request reached a pod that did not lead; at rest it lists the
// leader alone, which answers through the ClusterIP. The pods are Ready as
// the flavour says (the leader alone, or all), each app started only after
// its electd knew the leader (the init container electd-wait waits for
// /readyz), or, where electd checks its app's health (AppFirst), each
// electd stood only after its app listened (each by its own log line's
// time: containerd reads two containers' output independently), and `kubectl exec deploy/app -c electd -- /electd status`
// works as the README's "Trying it" shows.
func testStart(t *testing.T, d *Deployment, deployed time.Time, rep *Report) {
	ctx := context.Background()
	leader := d.atRest(t, ctx, time.Minute, "not at rest")
	for _, v := range d.Violations(deployed, time.Now()) {
		t.Error(v)
	}
	pods, err := d.Pods()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range pods {
		side, err := d.Log(ctx, p.Name, "electd")
		if err != nil {
			t.Fatal(err)
		}
		app, err := d.Log(ctx, p.Name, "app")
		if err != nil {
			t.Fatal(err)
		}
		listening, ok2 := app.Find("listening")
		if d.F.AppFirst {
			stood, ok1 := side.Find("standing for leadership")
			if !ok1 || !ok2 || stood.Written().Before(listening.Written()) {
				t.Errorf("%s: electd stood for leadership at %v (%v), before the app listened at %v (%v)", p.Name, stood.Written(), ok1, listening.Written(), ok2)
			}
			order = append(order, fmt.Sprintf("%s: the app listened %s, electd stood %s later", p.Name, listening.Written().Format("15:04:05.000"), stood.Written().Sub(listening.Written()).Round(time.Millisecond)))
			continue
		}
		knows, ok1 := side.Find("elected", "leader")
		if !ok1 || !ok2 || listening.Written().Before(knows.Written()) {
			t.Errorf("%s: the app started listening at %v (%v), before electd knew the leader at %v (%v)", p.Name, listening.Written(), ok2, knows.Written(), ok1)
		}
		order = append(order, fmt.Sprintf("%s: electd knew the leader %s, the app listened %s later", p.Name, knows.Written().Format("15:04:05.000"), listening.Written().Sub(knows.Written()).Round(time.Millisecond)))
	}
	// Pods become Ready at their next probe (every second for /readyz): wait
	// for the set the flavour promises.
	want := leader
	if d.F.AllReady {
		var all []string
		for _, p := range pods {
			all = append(all, p.Name)
		}
		want = strings.Join(all, ",")
	}
	if err := wait.Until(ctx, 30*time.Second, pollEvery, func() error {
		pods, err := d.Pods()
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					ready = append(ready, p.Name)
				}
			}
		}
		if got := strings.Join(ready, ","); got != want {
			return fmt.Errorf("Ready pods %s, want %s", got, want)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	ep, _ := d.EP.Ready.Current()
	answers := d.Probe.Between(deployed, time.Now())
	byPod := map[string]int{}
	for _, a := range answers {
		if a.Pod != "" {
			byPod[a.Pod]++
		}
	}
	get, err := d.N.Kubectl(ctx, "get", "pods", "-n", d.F.Namespace, "-l", "app.kubernetes.io/name=app", "-L", "electd.io/leader")
	if err != nil {
		t.Error(err)
	}
	status, err := d.N.Kubectl(ctx, "exec", "-n", d.F.Namespace, "deploy/app", "-c", "electd", "--", "/electd", "status")
	if err != nil {
		t.Errorf("kubectl exec deploy/app -c electd -- /electd status: %v", err)
	}
	rep.Add(d.F.Name, fmt.Sprintf("Start: the Service lists `%s`, the leader is `%s`; %d requests through %s since `kubectl apply -k`, answered by %v. %s\n```text\n$ kubectl get pods -l app.kubernetes.io/name=app -L electd.io/leader\n%s$ kubectl exec deploy/app -c electd -- /electd status\n%s```",
		ep, leader, len(answers), d.URL, byPod, strings.Join(order, "; "), get, status))
}

func versions(t *testing.T, n *nodetest.Node) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b strings.Builder
	if out, err := n.Kubectl(ctx, "version"); err == nil {
		b.WriteString("```text\n$ kubectl version\n" + out)
	} else {
		t.Error(err)
	}
	if out, err := n.Kubectl(ctx, "get", "node", "-o", "wide"); err == nil {
		b.WriteString("$ kubectl get node -o wide\n" + out)
	} else {
		t.Error(err)
	}
	for _, c := range [][]string{{"containerd", "--version"}, {"runc", "--version"}, {"etcd", "--version"}} {
		if out, err := exec.Command(c[0], c[1:]...).Output(); err == nil {
			b.WriteString("$ " + strings.Join(c, " ") + "\n" + string(out))
		}
	}
	b.WriteString("```")
	return b.String()
}
