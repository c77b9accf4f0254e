package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/electd/electd/tools"
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

// helmBinary builds Helm from tools/helm once per machine, with the -X
// flags Helm's own Makefile sets: its version, and the Kubernetes version
// lint and template assume, from the client-go it is built with.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		var ldflags string
		if ldflags, helmErr = helmLDFlags(); helmErr != nil {
			return
		}
		helmBin, helmErr = tools.Build(repoRoot, tools.Tool{
			Dir: "tools/helm", Package: "helm.sh/helm/v3/cmd/helm", Name: "helm", LDFlags: ldflags,
		}, t.Logf)
	})
	if helmErr != nil {
		t.Fatalf("building Helm from tools/helm: %v", helmErr)
	}
	return helmBin
}

func helmLDFlags() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v3", "k8s.io/client-go")
	cmd.Dir = filepath.Join(repoRoot, "tools/helm")
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	v := strings.Fields(string(out)) // v3.22.0 v0.37.0
	client := strings.Split(strings.TrimPrefix(v[1], "v"), ".")
	major, minor := "1", client[1] // client-go v0.N is Kubernetes 1.N
	flags := []string{"-X helm.sh/helm/v3/internal/version.version=" + v[0]}
	for _, pkg := range []string{"pkg/lint/rules", "pkg/chartutil"} {
		flags = append(flags,
			"-X helm.sh/helm/v3/"+pkg+".k8sVersionMajor="+major,
			"-X helm.sh/helm/v3/"+pkg+".k8sVersionMinor="+minor)
	}
	return strings.Join(flags, " "), nil
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
