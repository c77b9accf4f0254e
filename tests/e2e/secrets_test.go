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

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

// testSecrets applies the readiness flavour without the two Secrets the
// manifests leave to the operator, and checks what the README says: the
// pods wait in ContainerCreating with a FailedMount event naming the
// missing electd-zookeeper-auth (kubectl shows them as Init:0/3), start by
// themselves once it is created,
// and without electd-admin the mutating endpoints answer 403.
func testSecrets(t *testing.T, n *nodetest.Node, rep *Report) {
	ctx := context.Background()
	f := Flavours[0]
	const ns = "e2e-secrets"
	rendered, err := n.Kubectl(ctx, "kustomize", f.Overlay())
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if strings.Contains(doc, "kind: Secret\n") {
			continue
		}
		doc = strings.ReplaceAll(doc, "namespace: "+f.Namespace, "namespace: "+ns)
		doc = strings.ReplaceAll(doc, f.ElectionPath, "/e2e/secrets/app")
		keep = append(keep, doc)
	}
	file := filepath.Join(t.TempDir(), "no-secrets.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(keep, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.ProvideVolumes(ctx, ns, "2Gi", zooKeeperUser, zooKeeperClaims...); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := n.Kubectl(context.Background(), "delete", "namespace", ns, "--timeout=3m"); err == nil {
			n.ReleaseVolumes(context.Background(), ns)
		}
	})
	if err := wait.Until(ctx, time.Minute, pollEvery, func() error {
		var sa corev1.ServiceAccount
		return n.Get("/api/v1/namespaces/"+ns+"/serviceaccounts/default", &sa)
	}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := n.Kubectl(ctx, "apply", "-f", file); err != nil {
		t.Fatal(err)
	}
	var event string
	if err := wait.Until(ctx, 2*time.Minute, pollEvery, func() error {
		var list corev1.EventList
		if err := n.Get("/api/v1/namespaces/"+ns+"/events?fieldSelector=reason%3DFailedMount", &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if strings.Contains(e.Message, `secret "electd-zookeeper-auth" not found`) {
				event = e.Reason + ": " + e.Message
				return nil
			}
		}
		return fmt.Errorf("no FailedMount event naming electd-zookeeper-auth yet")
	}); err != nil {
		t.Fatal(err)
	}
	// kubectl shows such a pod as Init:0/3 (its init containers:
	// electd-hold, electd and electd-wait), not ContainerCreating. The event
	// may name one pod before the others are scheduled and have their
	// status posted, so wait until all three show it.
	var waiting string
	if err := wait.Until(ctx, time.Minute, pollEvery, func() error {
		var err error
		if waiting, err = n.Kubectl(ctx, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/name=app"); err != nil {
			return err
		}
		if strings.Count(waiting, "Init:0/3") != 3 {
			return fmt.Errorf("not every pod shown waiting (Init:0/3) yet")
		}
		return nil
	}); err != nil {
		t.Errorf("want every pod shown waiting (Init:0/3) without the Secret: %v\n%s", err, waiting)
	}
	var pending corev1.PodList
	if err := n.Get("/api/v1/namespaces/"+ns+"/pods?labelSelector=app.kubernetes.io%2Fname%3Dapp", &pending); err != nil {
		t.Fatal(err)
	}
	for _, p := range pending.Items {
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("%s is %s without the Secret, want Pending", p.Name, p.Status.Phase)
		}
	}
	created := time.Now()
	if _, err := n.Kubectl(ctx, "create", "secret", "generic", "electd-zookeeper-auth", "-n", ns, "--from-literal=auth=electd:e2e-later"); err != nil {
		t.Fatal(err)
	}
	var leader corev1.Pod
	if err := wait.Until(ctx, 4*time.Minute, pollEvery, func() error {
		var list corev1.PodList
		if err := n.Get("/api/v1/namespaces/"+ns+"/pods?labelSelector=app.kubernetes.io%2Fname%3Dapp", &list); err != nil {
			return err
		}
		ready := 0
		for _, p := range list.Items {
			if !running(p) {
				return fmt.Errorf("%s not running yet", p.Name)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					ready++
					leader = p
				}
			}
		}
		if len(list.Items) != 3 || ready != 1 {
			return fmt.Errorf("%d pods, %d Ready", len(list.Items), ready)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	req, _ := http.NewRequest(http.MethodPost, "http://"+leader.Status.PodIP+":4040/leader/release", nil)
	resp, err := n.HTTPClient(5 * time.Second).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /leader/release without electd-admin: %s, want 403", resp.Status)
	}
	s := fmt.Sprintf("Secrets (the readiness flavour applied without them): %s (%.1f s after apply); the pods waited:\n```text\n%s```\n"+
		"`kubectl create secret generic electd-zookeeper-auth ...`: all three running and the leader Ready %.1f s later, by themselves. "+
		"Without electd-admin, `POST /leader/release` answered %s.",
		event, created.Sub(t0).Seconds(), waiting, started.Sub(created).Seconds(), resp.Status)
	t.Log(s)
	rep.Add(f.Name, s)
}
