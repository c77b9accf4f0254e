package kube

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/manifesttest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

const (
	chart = "../../deploy/helm/electd"
	// gateTimeout bounds a condition write once its cause happened (a join,
	// or a session's expiry plus the grace): a round of calls on a busy machine.
	gateTimeout = 20 * time.Second
	gateSession = 4 * time.Second // zookeeper.session_timeout in these tests
)

// Lines the gate logs for its writes.
const (
	ownTrueLine  = "participant gate True on the own pod"
	lostLostLine = "participant gate False on a lost participant's pod"
)

// setupChart is setupKube for the Helm chart rendered with args: its
// ServiceAccount, Role and RoleBinding applied for real, and the pod
// template of its Deployment.
func setupChart(t *testing.T, c *kubetest.Cluster, ns string, args ...string) *kubeEnv {
	t.Helper()
	if err := c.CreateNamespace(ns); err != nil {
		t.Fatal(err)
	}
	helm, err := manifesttest.HelmBinary("../..", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	out := runHelm(t, helm, append([]string{"template", "app", chart, "--namespace", ns}, args...)...)
	k := &kubeEnv{c: c, ns: ns}
	paths := map[string]string{
		"ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts",
		"Role":           "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
		"RoleBinding":    "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
	}
	for _, doc := range manifesttest.SplitDocuments(out) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "Deployment" && obj.Metadata.Name == "app" {
			k.parseDeployment(t, string(doc))
			continue
		}
		p, ok := paths[obj.Kind]
		if !ok {
			continue
		}
		if err := c.Admin(http.MethodPatch, kubetest.ApplyPath(fmt.Sprintf(p, ns), obj.Metadata.Name, false), "application/apply-patch+yaml", doc, nil); err != nil {
			t.Fatalf("apply %s %s: %v", obj.Kind, obj.Metadata.Name, err)
		}
	}
	if k.template == nil || k.sa == "" {
		t.Fatalf("helm template %v: no Deployment app with a serviceAccountName", args)
	}
	return k
}

// gateEnv is what the chart gives electd in pod id with
// electd.participantGate: the key; no label, no Lease.
func (k *kubeEnv) gateEnv(t *testing.T, zk, path, id, tokenFile string) []string {
	return k.podEnv(t, zk, path, id, tokenFile,
		"ELECTD_KUBERNETES_PARTICIPANT_GATE=true",
		"ELECTD_ZOOKEEPER_SESSION_TIMEOUT="+gateSession.String())
}

// conditions reads a pod's status.conditions, type -> status.
func (k *kubeEnv) conditions(pod string) (map[string]string, error) {
	var p struct {
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	if err := k.c.Admin(http.MethodGet, "/api/v1/namespaces/"+k.ns+"/pods/"+pod, "", nil, &p); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, c := range p.Status.Conditions {
		m[c.Type] = c.Status
	}
	return m, nil
}

// setCondition writes a pod condition as the kubelet would.
func (k *kubeEnv) setCondition(t *testing.T, pod, typ, status string) {
	t.Helper()
	patch := map[string]any{"status": map[string]any{"conditions": []map[string]string{{"type": typ, "status": status}}}}
	if err := k.c.Admin(http.MethodPatch, "/api/v1/namespaces/"+k.ns+"/pods/"+pod+"/status", "application/strategic-merge-patch+json", patch, nil); err != nil {
		t.Fatal(err)
	}
}

// waitGate waits until pod's gate condition is status and returns how long that took.
func (k *kubeEnv) waitGate(t *testing.T, pod, status string, timeout time.Duration) time.Duration {
	t.Helper()
	return wait.For(t, timeout, pod+"'s "+kube.GateCondition+" "+status, func() bool {
		m, err := k.conditions(pod)
		return err == nil && m[kube.GateCondition] == status
	})
}

// The participant gate on a real API server, with the chart's RBAC and pod
// template (electd.participantGate) and three participants on a real
// ZooKeeper. Promises checked:
//   - each participant sets its own pod's condition True once joined, and
//     the patch keeps the kubelet's conditions;
//   - when a participant's process dies (the leader's, then a follower's),
//     the leader sets its pod's condition False once the session expired
//     and the grace passed; the figure is logged beside the session timeout;
//   - the participant, started again, sets its own condition True itself;
//   - only a leader ever writes False, and only on a lost participant's pod;
//   - the survivors return to their idle footprint after each fault.
func TestE2EParticipantGate(t *testing.T) {
	skipShort(t)
	zk := zktest.Start(t, zktest.Options{Servers: 1}).ConnectString()
	k := setupChart(t, kubetest.Start(t), "gate-e2e", "--set", "electd.participantGate=true")
	if gates, _ := k.template["spec"].(map[string]any)["readinessGates"].([]any); len(gates) != 1 {
		t.Fatalf("the chart's pod template has readinessGates %v, want %s", gates, kube.GateCondition)
	}
	token := k.tokenFile(t, k.sa) // the chart's Role, never the admin's
	const path = "/e2e/gate"
	ids := []string{"p0", "p1", "p2"}
	ps := make([]*electdtest.Member, len(ids))
	start := func(i int) *electdtest.Member {
		ps[i] = startElectd(t, ids[i], k.gateEnv(t, zk, path, ids[i], token))
		return ps[i]
	}
	for i, id := range ids {
		k.createPod(t, id)
		k.setCondition(t, id, "ContainersReady", "True") // the kubelet's, to be kept
		start(i)
	}
	for _, id := range ids {
		took := k.waitGate(t, id, "True", electTimeout)
		t.Logf("%s: %s True %v after the start", id, kube.GateCondition, took.Round(time.Millisecond))
	}
	for _, id := range ids {
		if m, err := k.conditions(id); err != nil || m["ContainersReady"] != "True" {
			t.Errorf("%s's conditions %v (%v): the gate's patch dropped the kubelet's ContainersReady", id, m, err)
		}
	}
	leader := electdtest.OneLeader(t, ps, electTimeout)
	led := map[string]bool{leader.Name: true}
	rests := restOf(t, ps)

	kill := func(t *testing.T, victim *electdtest.Member) {
		i := slices.Index(ps, victim)
		victim.Send(syscall.SIGKILL)
		killed := time.Now()
		victim.WaitExit(exitTimeout)
		survivors := electdtest.Others(ps, victim)
		leader = electdtest.OneLeader(t, survivors, electTimeout)
		led[leader.Name] = true
		k.waitGate(t, victim.Name, "False", electTimeout+gateTimeout)
		t.Logf("%s killed; %s set its pod's condition False %v later (session timeout %v, grace %v)",
			victim.Name, leader.Name, time.Since(killed).Round(time.Millisecond), gateSession, kube.DefaultGateGrace)
		wait.For(t, gateTimeout, leader.Name+"'s line naming "+victim.Name, func() bool {
			return leader.LogHas(lostLostLine) && leader.LogHas("other_pod="+victim.Name)
		})
		if err := electdtest.WaitIdle(ctxFor(t, time.Minute), procsOf(survivors), restsOf(rests, survivors), 2*time.Second); err != nil {
			t.Errorf("after %s's loss: %v", victim.Name, err)
		}
		back := start(i)
		took := k.waitGate(t, victim.Name, "True", electTimeout)
		t.Logf("%s started again: its condition True %v later", victim.Name, took.Round(time.Millisecond))
		wait.For(t, gateTimeout, back.Name+"'s own write recorded", func() bool {
			v, err := back.MetricValue("electd_participant_gate_writes_total", "pod", "own")
			return err == nil && v == 1
		})
		if !back.LogHas(ownTrueLine) {
			t.Errorf("%s's condition is True, but not by its own write", back.Name)
		}
	}
	t.Run("leader killed", func(t *testing.T) { kill(t, leader) })
	t.Run("follower killed", func(t *testing.T) { kill(t, electdtest.Others(ps, leader)[0]) })

	for _, p := range ps {
		lost := p.MetricOf("electd_participant_gate_writes_total", "pod", "lost")
		if !led[p.Name] && (lost != 0 || p.LogHas(lostLostLine)) {
			t.Errorf("%s never led but wrote %v lost participants' conditions", p.Name, lost)
		}
		if f := p.MetricOf("electd_kube_call_failures_total"); f != 0 {
			t.Errorf("%s: %v failed API calls with the chart's Role", p.Name, f)
		}
	}
}

// restOf takes a footprint window of each participant at rest.
func restOf(t *testing.T, ps []*electdtest.Member) map[string]invariant.Rest {
	t.Helper()
	ws, err := electdtest.FootprintWindow(ctxFor(t, time.Minute), procsOf(ps), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]invariant.Rest{}
	for i, p := range ps {
		out[p.Name] = invariant.RestOf(ws[i])
	}
	return out
}

func restsOf(rests map[string]invariant.Rest, ms []*electdtest.Member) []invariant.Rest {
	out := make([]invariant.Rest, 0, len(ms))
	for _, m := range ms {
		out = append(out, rests[m.Name])
	}
	return out
}

func procsOf(ms []*electdtest.Member) []*electdtest.Proc {
	out := make([]*electdtest.Proc, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Proc)
	}
	return out
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// runHelm runs helm with a private home, so that nothing of the machine's
// Helm setup matters and no cluster is contacted.
func runHelm(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/no-kubeconfig")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return out
}
