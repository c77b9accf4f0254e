package manifests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/manifesttest"
)

// Every object the chart renders, for both routings and for values that
// switch on what the defaults leave out (a created Secret, a metrics peer,
// an outside ensemble, the participant gate), is accepted by a real kube-apiserver's server-side
// dry run, as deploy/k8s's manifests are.
func TestChartPassesServerSideDryRun(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(customValues), 0o644); err != nil {
		t.Fatal(err)
	}
	renderings := []struct {
		name string
		args []string
	}{
		{"readiness", nil},
		{"label", []string{"--set", "routing=label"}},
		{"proxy", []string{"--set", "routing=proxy"}},
		{"readiness-gate", []string{"--set", "electd.participantGate=true"}},
		{"label-gate", []string{"--set", "routing=label", "--set", "electd.participantGate=true"}},
		{"proxy-custom", []string{"-f", values, "--set", "routing=proxy", "--set", "proxy.port=9090", "--set", "electd.shutdownGrace=2s"}},
		{"label-custom", []string{"-f", values, "--set", "routing=label", "--set", "label.lease.name=web-primary",
			"--set", "electd.adminToken.create=true",
			"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring"}},
	}
	docs := map[string][][]byte{}
	for _, r := range renderings {
		docs[r.name] = manifesttest.SplitDocuments(render(t, r.args...))
	}

	c := kubetest.Start(t)
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			ns := "helm-" + r.name
			if err := c.CreateNamespace(ns); err != nil {
				t.Fatal(err)
			}
			if len(docs[r.name]) < 4 {
				t.Fatalf("helm template %v rendered %d objects", r.args, len(docs[r.name]))
			}
			for _, doc := range docs[r.name] {
				tm, name, err := manifesttest.DryRunApply(c, ns, doc)
				if err != nil {
					t.Errorf("%s %s: %v", tm.Kind, name, err)
					continue
				}
				t.Logf("%s %s: accepted by the API server (dry run)", tm.Kind, name)
			}
		})
	}
}
