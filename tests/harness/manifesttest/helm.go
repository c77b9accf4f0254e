package manifesttest

import (
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/electd/electd/tools"
)

// HelmBinary builds Helm from tools/helm once per machine (tools.Build),
// with the -X flags Helm's own Makefile sets: its version, and the
// Kubernetes version lint and template assume, from the client-go it is
// built with. root is the repository root; logf hears of a build.
func HelmBinary(root string, logf func(format string, args ...any)) (string, error) {
	ldflags, err := helmLDFlags(root)
	if err != nil {
		return "", err
	}
	return tools.Build(root, tools.Tool{
		Dir: "tools/helm", Package: "helm.sh/helm/v3/cmd/helm", Name: "helm", LDFlags: ldflags,
	}, logf)
}

func helmLDFlags(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v3", "k8s.io/client-go")
	cmd.Dir = filepath.Join(root, "tools/helm")
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
