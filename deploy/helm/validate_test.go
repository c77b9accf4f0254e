package helm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/internal/electdtest"
)

// buildElectd is the daemon of this test run (built once for all packages).
func buildElectd(t *testing.T) string {
	t.Helper()
	return electdtest.Binary(t)
}

var refRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podEnv resolves a container's environment as the kubelet would for a pod
// named podName: the downward API, Secret references (as secretValue), and
// $(VAR) references to variables defined before.
func podEnv(t *testing.T, c *corev1.Container, podName, secretValue string) []string {
	t.Helper()
	vals := map[string]string{}
	var out []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = refRE.ReplaceAllStringFunc(v, func(m string) string {
				if r, ok := vals[m[2:len(m)-1]]; ok {
					return r
				}
				return m // the kubelet leaves unknown references as they are
			})
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = podName
			case "status.podIP":
				v = "10.0.0.7"
			default:
				t.Fatalf("%s: fieldRef %s is not one this test resolves", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			v = secretValue
		case e.ValueFrom.ResourceFieldRef != nil:
			q := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits."))]
			v = strconv.FormatInt(q.Value(), 10)
		default:
			t.Fatalf("%s: valueFrom %+v is not one this test resolves", e.Name, e.ValueFrom)
		}
		vals[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}

// cleanEnviron is the test's environment without electd's own variables.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestRenderedEnvironmentValidates runs the real electd --validate with the
// sidecar's environment as a pod would have it: every ELECTD_* variable
// must be a configuration key electd knows (it warns on others) and every
// value one it accepts.
func TestRenderedEnvironmentValidates(t *testing.T) {
	electd := buildElectd(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(customValues), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string // lines of the effective configuration
	}{
		{"defaults", nil, []string{
			`id: "app-7d4b9-x2x"`, `advertise: "10.0.0.7:8080"`,
			`servers: ["app-zookeeper-0.app-zookeeper-headless:2181", "app-zookeeper-1.app-zookeeper-headless:2181", "app-zookeeper-2.app-zookeeper-headless:2181"]`,
			`path: "/services/app"`, `mode: "latch"`, `admin_token: "***"`, `addr: ":4040"`, `format: "json"`,
			`shutdown_grace: 0s`, `shutdown_timeout: 10s`,
		}},
		{"custom values", []string{"-f", values}, []string{
			`id: "web-app-7d4b9-x2x"`, `servers: ["zk-1.example:2181", "[2001:db8::1]:2181"]`,
			`path: "/services/web"`, `mode: "selector"`, `session_timeout: 6s`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, sc := sidecar(t, decodeAll(t, "helm template", render(t, c.args...)))
			cmd := exec.Command(electd, "--validate")
			cmd.Env = append(cleanEnviron(), podEnv(t, sc, "app-7d4b9-x2x", "s3cret-token")...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("electd --validate with the rendered environment: %v\n%s", err, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("electd --validate warned: %s", stderr.String())
			}
			lines := strings.Split(stdout.String(), "\n")
			for _, w := range c.want {
				found := false
				for _, l := range lines {
					found = found || strings.TrimSpace(l) == w
				}
				if !found {
					t.Errorf("effective configuration lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}
