package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/electd/electd/tests/harness/manifesttest"
)

const (
	repoRoot = "../.."
	chart    = "../../deploy/helm/electd"
	// kubeVersion is what `helm template` renders for; the chart needs 1.29
	// or later (native sidecars).
	kubeVersion = "1.31.0"
)

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helmBinary is Helm built from tools/helm (manifesttest.HelmBinary),
// once per test binary.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() { helmBin, helmErr = manifesttest.HelmBinary(repoRoot, t.Logf) })
	if helmErr != nil {
		t.Fatalf("building Helm from tools/helm: %v", helmErr)
	}
	return helmBin
}

// helm runs Helm with its home directories in the test's temporary
// directory, so that nothing of the machine's Helm setup (or its absence)
// matters, and no cluster is contacted.
func helm(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data",
		"KUBECONFIG="+home+"/no-kubeconfig")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("helm %v: %v", args, err)
	}
	return o.String(), e.String(), status
}

// render runs helm template for the release "app" with extra arguments
// (--set ...) and fails the test if it does not render.
func render(t *testing.T, args ...string) []byte {
	t.Helper()
	out, stderr, status := helm(t, append([]string{"template", "app", chart, "--namespace", "default", "--kube-version", kubeVersion}, args...)...)
	if status != 0 {
		t.Fatalf("helm template %v: status %d:\n%s", args, status, stderr)
	}
	return []byte(out)
}

func TestHelmVersion(t *testing.T) {
	out, _, status := helm(t, "version", "--template", "{{.Version}}")
	if status != 0 || out != "v3.22.0" {
		t.Errorf("helm version: %d %q, want v3.22.0 (tools/helm's)", status, out)
	}
}

func TestChartLints(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults": nil,
		"an outside ensemble, selector mode, a created Secret": {
			"--set", "zookeeper.enabled=false", "--set", "electd.servers={zk-1.example:2181,zk-2.example:2181}",
			"--set", "electd.mode=selector", "--set", "electd.adminToken.create=true",
		},
		"routing: label, no lease, a metrics peer": {
			"--set", "routing=label", "--set", "label.lease.enabled=false",
			"--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, stderr, status := helm(t, append([]string{"lint", "--strict", "--kube-version", kubeVersion, chart}, args...)...)
			if status != 0 {
				t.Errorf("helm lint --strict: status %d\n%s%s", status, out, stderr)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint: %s", out)
			}
		})
	}
}
