package manifests

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sidecar returns the rendered Deployment and its electd container.
func sidecar(t *testing.T, objs []object) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	for _, o := range objs {
		d, ok := o.obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for i, c := range d.Spec.Template.Spec.InitContainers {
			if c.Name == "electd" {
				return d, &d.Spec.Template.Spec.InitContainers[i]
			}
		}
		t.Fatalf("Deployment %s has no electd init container", d.Name)
	}
	t.Fatal("no Deployment rendered")
	return nil, nil
}

func envOf(c *corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// checkEnv fails t for each variable of want that env does not set to its value.
func checkEnv(t *testing.T, env map[string]corev1.EnvVar, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := env[name].Value; got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
}

func kinds(objs []object) map[string]bool {
	m := map[string]bool{}
	for _, o := range objs {
		m[o.key()] = true
	}
	return m
}

const customValues = `
app:
  name: web
electd:
  id: "web-$(POD_NAME)"
  servers: [zk-1.example:2181, "[2001:db8::1]:2181"]
  path: /services/web
  mode: selector
  adminToken:
    secretName: web-admin
    key: admin-token
  zookeeperAuth:
    secretName: web-zookeeper
    key: digest
    previousKey: digest-previous
  resources:
    requests: {cpu: 20m, memory: 48Mi}
    limits: {memory: 96Mi}
  extraEnv:
    - name: ELECTD_ZOOKEEPER_SESSION_TIMEOUT
      value: 6s
zookeeper:
  enabled: false
`

// TestChartValues renders the chart with every value the issue names set
// (id, servers, path, mode, Secrets, resources) and checks where each one
// lands.
func TestChartValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(customValues), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, "helm template -f values.yaml", render(t, "-f", values))
	got := kinds(objs)
	for _, k := range []string{"Deployment/web", "Service/web", "PodDisruptionBudget/web", "NetworkPolicy/web"} {
		if !got[k] {
			t.Errorf("no %s among %v", k, got)
		}
	}
	if len(objs) != 4 {
		t.Errorf("rendered %v; want the four app objects only (no ZooKeeper and its policy, no Secret)", got)
	}

	d, c := sidecar(t, objs)
	env := envOf(c)
	checkEnv(t, env, map[string]string{
		"ELECTD_ID":                        "web-$(POD_NAME)",
		"ELECTD_ZOOKEEPER_SERVERS":         "zk-1.example:2181,[2001:db8::1]:2181",
		"ELECTD_ELECTION_PATH":             "/services/web",
		"ELECTD_ELECTION_MODE":             "selector",
		"ELECTD_ADVERTISE":                 "$(POD_IP):8080",
		"ELECTD_ZOOKEEPER_SESSION_TIMEOUT": "6s",
	})
	ref := env["ELECTD_HTTP_ADMIN_TOKEN"].ValueFrom
	if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "web-admin" || ref.SecretKeyRef.Key != "admin-token" {
		t.Errorf("ELECTD_HTTP_ADMIN_TOKEN: %+v, want Secret web-admin key admin-token", env["ELECTD_HTTP_ADMIN_TOKEN"])
	}
	if ref := env["ELECTD_ZOOKEEPER_AUTH_PREVIOUS"].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "web-zookeeper" ||
		ref.SecretKeyRef.Key != "digest-previous" || ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional {
		t.Errorf("ELECTD_ZOOKEEPER_AUTH_PREVIOUS: %+v, want Secret web-zookeeper key digest-previous, optional", env["ELECTD_ZOOKEEPER_AUTH_PREVIOUS"])
	}
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("48Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")},
	}
	if v := secretVolume(d, "zookeeper-auth"); v == nil || v.SecretName != "web-zookeeper" ||
		len(v.Items) != 1 || v.Items[0].Key != "digest" || v.Items[0].Path != "auth" {
		t.Errorf("volume zookeeper-auth: %+v, want Secret web-zookeeper key digest as the file auth", v)
	}
	if !reflect.DeepEqual(c.Resources, want) {
		t.Errorf("electd resources %+v, want %+v", c.Resources, want)
	}
	if sel := d.Spec.Selector.MatchLabels; sel["app.kubernetes.io/name"] != "web" || sel["app.kubernetes.io/instance"] != "app" {
		t.Errorf("selector %v, want name web and instance app", sel)
	}
}

// TestChartAdminTokenOff: without a token there is no Secret and no
// variable, and electd answers 403 on mutating endpoints.
func TestChartAdminTokenOff(t *testing.T) {
	objs := decodeAll(t, "helm template", render(t, "--set", "electd.adminToken.enabled=false"))
	if kinds(objs)["Secret/app-electd-admin"] {
		t.Error("a Secret is rendered with adminToken.enabled=false")
	}
	if _, c := sidecar(t, objs); envOf(c)["ELECTD_HTTP_ADMIN_TOKEN"].Name != "" {
		t.Error("ELECTD_HTTP_ADMIN_TOKEN is set with adminToken.enabled=false")
	}
}

// TestChartCreatesNoSecret: by default the chart refers to the Secrets and
// creates none (no known or throw-away credentials in a release).
func TestChartCreatesNoSecret(t *testing.T) {
	for _, args := range [][]string{nil, {"--set", "routing=proxy"}} {
		for _, o := range decodeAll(t, "helm template", render(t, args...)) {
			if o.kind == "Secret" {
				t.Errorf("the chart renders %s by default (%v)", o.key(), args)
			}
		}
	}
}

// TestChartSecretsAreRandom: each install without a Secret gets its own
// random one, long enough for electd (at least 32 bytes): the peer key the
// pods mount (routing: proxy, proxy.peerKey.create) and the admin token
// (adminToken.create).
func TestChartSecretsAreRandom(t *testing.T) {
	for _, c := range []struct {
		what, secret, key string // secret "": the first Secret rendered
		args              []string
	}{
		{"peer key", "app-electd-proxy-peer-key", "key", []string{"--set", "routing=proxy", "--set", "proxy.peerKey.create=true"}},
		{"admin token", "", "token", []string{"--set", "electd.adminToken.create=true"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			value := func() string {
				for _, o := range decodeAll(t, "helm template", render(t, c.args...)) {
					if s, ok := o.obj.(*corev1.Secret); ok && (c.secret == "" || s.Name == c.secret) {
						return s.StringData[c.key]
					}
				}
				t.Fatal("no such Secret rendered")
				return ""
			}
			if a, b := value(), value(); a == b || len(a) < 32 {
				t.Errorf("%q and %q: want two different random ones of at least 32 bytes", a, b)
			}
		})
	}
}

// TestChartRejectsBadValues: a bad value fails `helm template` (and so
// install and upgrade) with a message that names it, before anything
// reaches the cluster.
func TestChartRejectsBadValues(t *testing.T) {
	type bad struct {
		name string
		args []string
		want string // in Helm's message
	}
	// What the templates and Chart.yaml reject, and unknown keys.
	cases := []bad{
		{"misspelt key", []string{"--set", "electd.modes=latch"}, "modes"},
		{"proxy on the app's port", []string{"--set", "routing=proxy", "--set", "proxy.port=8080"}, "proxy.port"},
		{"no servers and no ensemble", []string{"--set", "zookeeper.enabled=false"}, "electd.servers"},
		{"one id for all pods", []string{"--set", "electd.id=web"}, "electd.id"},
		{"an id that is not the pod name, with the gate", []string{"--set", "electd.id=web-$(POD_NAME)", "--set", "electd.participantGate=true"}, "electd.id"},
		{"too old a Kubernetes", []string{"--kube-version", "1.28.0"}, "kubeVersion"},
	}
	// What values.schema.json rejects: Helm's message gives the value's
	// path, electd.servers[0]'s as /electd/servers/0.
	for _, c := range []struct{ name, set string }{
		{"unknown mode", "electd.mode=leader"},
		{"unknown routing", "routing=labels"},
		{"malformed leader label", "label.key=electd.io/leader!"},
		{"malformed Secret key", "electd.zookeeperAuth.key=a/b"},
		{"malformed peer key Secret name", "proxy.peerKey.secretName=Peer_Key"},
		{"empty metrics peer", "networkPolicy.metricsFrom[0]=null"},
		{"relative path", "electd.path=services/app"},
		{"server without a port", "electd.servers[0]=zk-1"},
		{"duration without a unit", "electd.shutdownTimeout=10"},
		{"one replica", "app.replicas=1"},
		{"app on electd's port", "app.port=4040"},
		{"proxy on electd's port", "proxy.port=4040"},
		{"even ensemble", "zookeeper.replicas=2"},
		{"participantGate not a boolean", "electd.participantGate=yes"},
	} {
		key, _, _ := strings.Cut(c.set, "=")
		path := "/" + strings.NewReplacer(".", "/", "[", "/", "]", "").Replace(key)
		cases = append(cases, bad{c.name, []string{"--set", c.set}, path})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", "app", chart, "--kube-version", kubeVersion}, c.args...)
			out, stderr, status := helm(t, args...)
			if status == 0 {
				t.Fatalf("helm template %v rendered:\n%.300s", c.args, out)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("helm template %v: %q does not name %s", c.args, stderr, c.want)
			}
		})
	}
}

// secretVolume is the Secret volume of the pod template named name.
func secretVolume(d *appsv1.Deployment, name string) *corev1.SecretVolumeSource {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v.Secret
		}
	}
	return nil
}
