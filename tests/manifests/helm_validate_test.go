package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/testkit/testcert"
	"github.com/electd/electd/tests/harness/electdtest"
)

// buildElectd is the daemon of this test run (built once for all packages).
func buildElectd(t *testing.T) string {
	t.Helper()
	return electdtest.Binary(t)
}

var refRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// kubelet starts a container the way the kubelet would, as far as electd
// can tell: its environment (the downward API, Secret references, $(VAR)
// references, the API server's variables the kubelet always injects) and
// the files its volume mounts show, written under root. secrets are the
// Secrets that exist: name, key, value.
type kubelet struct {
	pod, namespace string
	secrets        map[string]map[string]string
	root           string
	ca             []byte // kube-root-ca.crt's ca.crt
}

func newKubelet(t *testing.T, secrets map[string]map[string]string) *kubelet {
	t.Helper()
	return &kubelet{
		pod: "app-7d4b9-x2x", namespace: "prod", secrets: secrets,
		root: t.TempDir(), ca: testcert.NewCA(t, "cluster CA").CertPEM,
	}
}

// start returns the container's environment with every path inside a
// mount moved under root, or the reason the kubelet would not start it.
func (k *kubelet) start(t *testing.T, spec *corev1.PodSpec, c *corev1.Container) ([]string, error) {
	t.Helper()
	env, err := k.env(t, c)
	if err != nil {
		return nil, err
	}
	if err := k.mount(t, spec, c); err != nil {
		return nil, err
	}
	mounted := func(p string) bool {
		for _, vm := range c.VolumeMounts {
			if strings.HasPrefix(p, path.Clean(vm.MountPath)+"/") {
				return true
			}
		}
		return false
	}
	set := map[string]bool{}
	for i, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		set[name] = true
		if path.IsAbs(v) && mounted(v) {
			env[i] = name + "=" + filepath.Join(k.root, v)
		}
	}
	// electd's own defaults for the in-cluster credentials, where mounted.
	for name, p := range map[string]string{"ELECTD_KUBERNETES_TOKEN_FILE": kube.DefaultTokenFile, "ELECTD_KUBERNETES_CA_FILE": kube.DefaultCAFile} {
		if !set[name] && mounted(p) {
			env = append(env, name+"="+filepath.Join(k.root, p))
		}
	}
	return append(env, "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443"), nil
}

func (k *kubelet) env(t *testing.T, c *corev1.Container) ([]string, error) {
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
				v = k.pod
			case "metadata.namespace":
				v = k.namespace
			case "status.podIP":
				v = "10.0.0.7"
			case "metadata.uid":
				v = "6f1c2a84-9d3e-4b7a-8c51-0e2f3a4b5c6d"
			default:
				t.Fatalf("%s: fieldRef %s is not one this test resolves", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := k.secrets[ref.Name][ref.Key]
			if !ok {
				if ref.Optional != nil && *ref.Optional {
					continue // an optional reference to nothing: no variable
				}
				return nil, fmt.Errorf("CreateContainerConfigError: %s: Secret %s key %s not found", e.Name, ref.Name, ref.Key)
			}
			v = s
		case e.ValueFrom.ResourceFieldRef != nil:
			q := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits."))]
			v = strconv.FormatInt(q.Value(), 10)
		default:
			t.Fatalf("%s: valueFrom %+v is not one this test resolves", e.Name, e.ValueFrom)
		}
		vals[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// mount writes the files of each volume c mounts under root.
func (k *kubelet) mount(t *testing.T, spec *corev1.PodSpec, c *corev1.Container) error {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == vm.Name {
				vol = &spec.Volumes[i]
			}
		}
		if vol == nil {
			t.Fatalf("%s mounts volume %s, which the pod does not have", c.Name, vm.Name)
		}
		files, err := k.volumeFiles(t, vol)
		if err != nil {
			return err
		}
		dir := filepath.Join(k.root, vm.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return nil
}

func (k *kubelet) volumeFiles(t *testing.T, v *corev1.Volume) (map[string]string, error) {
	t.Helper()
	files := map[string]string{}
	switch {
	case v.Secret != nil:
		sec, ok := k.secrets[v.Secret.SecretName]
		optional := v.Secret.Optional != nil && *v.Secret.Optional
		if !ok {
			if optional {
				return files, nil // an empty directory
			}
			return nil, fmt.Errorf("FailedMount: volume %s: secret %q not found", v.Name, v.Secret.SecretName)
		}
		if len(v.Secret.Items) == 0 {
			for key, val := range sec {
				files[key] = val
			}
		}
		for _, it := range v.Secret.Items {
			val, ok := sec[it.Key]
			if !ok && !optional {
				return nil, fmt.Errorf("FailedMount: volume %s: couldn't find key %s in Secret %s", v.Name, it.Key, v.Secret.SecretName)
			}
			files[it.Path] = val
		}
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			switch {
			case src.ServiceAccountToken != nil:
				files[src.ServiceAccountToken.Path] = "eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl"
			case src.ConfigMap != nil && src.ConfigMap.Name == "kube-root-ca.crt":
				for _, it := range src.ConfigMap.Items {
					files[it.Path] = string(k.ca)
				}
			case src.DownwardAPI != nil:
				for _, it := range src.DownwardAPI.Items {
					if it.FieldRef == nil || it.FieldRef.FieldPath != "metadata.namespace" {
						t.Fatalf("volume %s: downward API item %+v is not one this test resolves", v.Name, it)
					}
					files[it.Path] = k.namespace
				}
			default:
				t.Fatalf("volume %s: projection %+v is not one this test resolves", v.Name, src)
			}
		}
	case v.EmptyDir != nil:
		// An empty directory (electd's kept session).
	default:
		t.Fatalf("volume %s is neither a Secret, a projected volume nor an emptyDir", v.Name)
	}
	return files, nil
}

// The Secrets as an operator makes them with --from-file: a trailing
// newline, which electd trims.
var (
	zkAuth   = map[string]string{"auth": "electd:s3cret\n"}
	adminTok = map[string]string{"token": "s3cret-token\n"}
	peerKey  = map[string]string{"key": "s3cret-peer-key-of-at-least-32-bytes\n"}
)

// TestRenderedEnvironmentValidates runs the real electd --validate in the
// electd container's environment and files as the kubelet would give them
// for each rendering: every ELECTD_* variable must be a configuration key
// electd knows (it warns on others), every value one it accepts and every
// file it names present. {root} in a wanted line is where the files are.
func TestRenderedEnvironmentValidates(t *testing.T) {
	electd := buildElectd(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(customValues), 0o644); err != nil {
		t.Fatal(err)
	}
	both := map[string]map[string]string{"app-electd-zookeeper-auth": zkAuth, "app-electd-admin": adminTok}
	withPeerKey := map[string]map[string]string{"app-electd-zookeeper-auth": zkAuth, "app-electd-admin": adminTok, "app-electd-proxy-peer-key": peerKey}
	for _, c := range []struct {
		name    string
		args    []string
		secrets map[string]map[string]string
		want    []string // lines of the effective configuration
		wantErr string   // why the kubelet would not start electd
	}{
		{name: "defaults", secrets: both, want: []string{
			`id: "app-7d4b9-x2x"`, `advertise: "10.0.0.7:8080"`,
			`servers: ["app-zookeeper-0.app-zookeeper-headless:2181", "app-zookeeper-1.app-zookeeper-headless:2181", "app-zookeeper-2.app-zookeeper-headless:2181"]`,
			`path: "/services/app"`, `mode: "latch"`, `admin_token: "***"`, `addr: ":4040"`, `format: "json"`,
			`auth_file: "{root}/etc/electd/zookeeper/auth"`, `shutdown_grace: 0s`, `shutdown_timeout: 10s`, `leader_label: ""`,
			`auth_previous: ""`,
			`session_file: "{root}/run/electd/session"`,
		}},
		{name: "rotating: the Secret holds the previous credential too",
			secrets: map[string]map[string]string{"app-electd-zookeeper-auth": {"auth": "electd:new", "auth_previous": "electd:old"}, "app-electd-admin": adminTok},
			want:    []string{`auth_file: "{root}/etc/electd/zookeeper/auth"`, `auth_previous: "***"`}},
		{name: "custom values", args: []string{"-f", values},
			secrets: map[string]map[string]string{"web-zookeeper": {"digest": "electd:s3cret"}, "web-admin": {"admin-token": "s3cret-token"}},
			want: []string{
				`id: "web-app-7d4b9-x2x"`, `servers: ["zk-1.example:2181", "[2001:db8::1]:2181"]`,
				`path: "/services/web"`, `mode: "selector"`, `session_timeout: 6s`, `admin_token: "***"`,
			}},
		{name: "routing: label", args: []string{"--set", "routing=label"}, secrets: both, want: []string{
			`leader_label: "electd.io/leader"`, `lease_name: "app-leader"`, `namespace: "prod"`,
			`token_file: "{root}/var/run/secrets/kubernetes.io/serviceaccount/token"`,
			`auth_file: "{root}/etc/electd/zookeeper/auth"`, `admin_token: "***"`,
		}},
		{name: "routing: proxy", args: []string{"--set", "routing=proxy"}, secrets: withPeerKey, want: []string{
			`listen: ":4041"`, `peer_listen: ":4042"`, `app: "127.0.0.1:8080"`, `mode: "http"`, `advertise: "10.0.0.7:4042"`,
			`peer_key_file: "{root}/etc/electd/proxy/key"`,
			`health_url: "http://127.0.0.1:8080/hostname"`, `health_interval: 2s`,
			`shutdown_grace: 5s`, `leader_label: ""`, `admin_token: "***"`,
		}},
		{name: "routing: proxy, no peer key Secret: the pod waits for it", args: []string{"--set", "routing=proxy"}, secrets: both,
			wantErr: `FailedMount: volume proxy-peer-key: secret "app-electd-proxy-peer-key" not found`},
		{name: "no admin Secret: electd runs, mutating endpoints refused",
			secrets: map[string]map[string]string{"app-electd-zookeeper-auth": zkAuth},
			want:    []string{`admin_token: ""`, `admin_token_file: ""`}},
		{name: "no ZooKeeper Secret: the pod waits for it",
			secrets: map[string]map[string]string{"app-electd-admin": adminTok},
			wantErr: `FailedMount: volume zookeeper-auth: secret "app-electd-zookeeper-auth" not found`},
		{name: "zookeeperAuth off: no credentials needed", args: []string{"--set", "electd.zookeeperAuth.enabled=false"},
			secrets: map[string]map[string]string{},
			want:    []string{`auth_file: ""`, `admin_token: ""`}},
		{name: "keepSession off: a restart joins anew", args: []string{"--set", "electd.keepSession=false"}, secrets: both,
			want: []string{`session_file: ""`}},
		{name: "participantGate", args: []string{"--set", "electd.participantGate=true"}, secrets: both, want: []string{
			`participant_gate: true`, `leader_label: ""`, `namespace: "prod"`,
			`token_file: "{root}/var/run/secrets/kubernetes.io/serviceaccount/token"`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, sc := sidecar(t, decodeAll(t, "helm template", render(t, c.args...)))
			k := newKubelet(t, c.secrets)
			env, err := k.start(t, &d.Spec.Template.Spec, sc)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("starting electd: %v, want %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("the kubelet would not start electd: %v", err)
			}
			cmd := exec.Command(electd, "--validate")
			cmd.Env = append(electdtest.CleanEnviron(), env...)
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
				w = strings.ReplaceAll(w, "{root}", k.root)
				found := false
				for _, l := range lines {
					l, _, _ = strings.Cut(l, " #") // a comment such as "# read from zookeeper.auth_file"
					found = found || strings.TrimSpace(l) == w
				}
				if !found {
					t.Errorf("effective configuration lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}
