package manifests

import (
	"path/filepath"
	"testing"

	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/manifesttest"
)

// Every object of every flavour, rendered by kustomize, is accepted by a
// real kube-apiserver's server-side dry run (as kubectl apply
// --dry-run=server does), and a broken one is refused, so the check can
// fail. The chart's renderings go through the same check (helm_dryrun_test.go).
func TestManifestsPassServerSideDryRun(t *testing.T) {
	c := kubetest.Start(t)
	for _, f := range []struct{ name, dir string }{{"gated", "k8s"}, {"label", "k8s-label"}, {"proxy", "k8s-proxy"}} {
		t.Run(f.name, func(t *testing.T) {
			ns := "dryrun-" + f.name
			if err := c.CreateNamespace(ns); err != nil {
				t.Fatal(err)
			}
			out, err := manifesttest.Kustomize(filepath.Join(repoRoot, "deploy", f.dir))
			if err != nil {
				t.Fatal(err)
			}
			docs := manifesttest.SplitDocuments(out)
			if len(docs) < 5 {
				t.Fatalf("kustomize %s rendered %d objects", f.dir, len(docs))
			}
			for _, doc := range docs {
				tm, name, err := manifesttest.DryRunApply(c, ns, doc)
				if err != nil {
					t.Errorf("%s %s: %v", tm.Kind, name, err)
					continue
				}
				t.Logf("%s %s: accepted by the API server (dry run)", tm.Kind, name)
			}
		})
	}

	if err := c.CreateNamespace("dryrun-broken"); err != nil {
		t.Fatal(err)
	}
	for what, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: misspelt}\nspec:\n  replica: 3\n" +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n" +
			"    spec: {containers: [{name: c, image: i}]}\n",
		"selector not matching the template": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nomatch}\nspec:\n" +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: c}}\n" +
			"    spec: {containers: [{name: c, image: i}]}\n",
		"bad label value": "apiVersion: v1\nkind: Service\nmetadata: {name: badlabel}\nspec:\n" +
			"  selector: {electd.io/leader: \"not true!\"}\n  ports: [{port: 80}]\n",
		"NetworkPolicy with a malformed port name": "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n" +
			"metadata: {name: badport}\nspec:\n  podSelector: {}\n  ingress: [{ports: [{port: \"not a port!\"}]}]\n",
		"secret volume without a name": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: novol}\nspec:\n" +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n" +
			"    spec:\n      containers: [{name: c, image: i}]\n      volumes: [{name: v, secret: {}}]\n",
	} {
		if _, _, err := manifesttest.DryRunApply(c, "dryrun-broken", []byte(doc)); err == nil {
			t.Errorf("%s: accepted by the dry run", what)
		} else {
			t.Logf("%s: refused: %v", what, err)
		}
	}
}
