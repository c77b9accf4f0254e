package k8s

import (
	"path"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The Secrets electd reads. The operator creates them; the manifests only
// refer to them (docs/kubernetes.md, "Secrets").
const (
	adminSecret  = "electd-admin"
	zkAuthSecret = "electd-zookeeper-auth"
)

// No flavour ships a usable secret: `kubectl apply -k` must neither deploy a
// known admin token or ZooKeeper password nor overwrite the Secrets the
// operator made.
func TestNoSecretIsShipped(t *testing.T) { forEachFlavour(t, checkNoSecretIsShipped) }

func checkNoSecretIsShipped(t *testing.T, m *manifests) {
	for _, s := range m.secrets {
		if len(s.Data) > 0 || len(s.StringData) > 0 {
			t.Errorf("Secret %s ships data %v: create secrets out of band", s.Name, keys(s))
		}
		if s.Name == adminSecret || s.Name == zkAuthSecret {
			t.Errorf("Secret %s is a manifest: applying them would replace the operator's", s.Name)
		}
	}
}

func keys(s *corev1.Secret) []string {
	var ks []string
	for k := range s.Data {
		ks = append(ks, k)
	}
	for k := range s.StringData {
		ks = append(ks, k)
	}
	return ks
}

// The admin token comes from an optional secretKeyRef: without the Secret
// the variable is left out, electd runs and its mutating endpoints answer
// 403. Not a file from an optional volume: electd refuses a token file
// that does not exist (exit 2), so the pod would crash-loop instead.
func TestAdminTokenIsAnOptionalSecretRef(t *testing.T) {
	forEachFlavour(t, checkAdminTokenIsAnOptionalSecretRef)
}

func checkAdminTokenIsAnOptionalSecretRef(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		if _, ok := s.env["ELECTD_HTTP_ADMIN_TOKEN_FILE"]; ok {
			t.Errorf("%s: ELECTD_HTTP_ADMIN_TOKEN_FILE is set: electd exits 2 while its file is missing", s.w.ref)
		}
		tok, ok := s.env["ELECTD_HTTP_ADMIN_TOKEN"]
		if !ok {
			t.Errorf("%s: no ELECTD_HTTP_ADMIN_TOKEN: POST /leader/release could never be allowed", s.w.ref)
			continue
		}
		ref := tok.ValueFrom
		if tok.Value != "" || ref == nil || ref.SecretKeyRef == nil {
			t.Errorf("%s: ELECTD_HTTP_ADMIN_TOKEN must come from a secretKeyRef, not a literal", s.w.ref)
			continue
		}
		if ref.SecretKeyRef.Name != adminSecret || ref.SecretKeyRef.Key != "token" {
			t.Errorf("%s: ELECTD_HTTP_ADMIN_TOKEN refers to Secret %s key %s, want %s key token (docs/kubernetes.md's command)",
				s.w.ref, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, adminSecret)
		}
		if o := ref.SecretKeyRef.Optional; o == nil || !*o {
			t.Errorf("%s: ELECTD_HTTP_ADMIN_TOKEN's secretKeyRef is not optional: the pod would not start "+
				"(CreateContainerConfigError) until the Secret exists", s.w.ref)
		}
	}
}

// The ZooKeeper credentials are a file from a Secret volume that only
// electd mounts, and that volume is required: until the Secret exists the
// pod does not start, rather than create the election's path open to all.
func TestZooKeeperAuthIsARequiredSecretFile(t *testing.T) {
	forEachFlavour(t, checkZooKeeperAuthIsARequiredSecretFile)
}

func checkZooKeeperAuthIsARequiredSecretFile(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		if _, ok := s.env["ELECTD_ZOOKEEPER_AUTH"]; ok {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH is set; give the credentials as a file (ELECTD_ZOOKEEPER_AUTH_FILE)", s.w.ref)
		}
		e, ok := s.env["ELECTD_ZOOKEEPER_AUTH_FILE"]
		if !ok || e.ValueFrom != nil || !path.IsAbs(e.Value) {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_FILE = %+v, want an absolute path", s.w.ref, e)
			continue
		}
		vol, item := secretFile(s.w.template, s.c, e.Value)
		if vol == nil {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_FILE %s is in no Secret volume electd mounts", s.w.ref, e.Value)
			continue
		}
		sec := vol.Secret
		if sec.SecretName != zkAuthSecret || item != "auth" {
			t.Errorf("%s: %s is Secret %s key %q, want %s key auth (docs/kubernetes.md's command)", s.w.ref, e.Value, sec.SecretName, item, zkAuthSecret)
		}
		if sec.Optional != nil && *sec.Optional {
			t.Errorf("%s: volume %s is optional: without the Secret electd would exit 2 and restart in a loop", s.w.ref, vol.Name)
		}
		for _, c := range allContainers(&s.w.template.Spec) {
			for _, vm := range c.VolumeMounts {
				if vm.Name != vol.Name {
					continue
				}
				if c != s.c {
					t.Errorf("%s: container %s mounts the ZooKeeper credentials too", s.w.ref, c.Name)
				}
				if !vm.ReadOnly {
					t.Errorf("%s: %s mounts volume %s writable", s.w.ref, c.Name, vol.Name)
				}
			}
		}
	}
}

// The credential a rotation replaces comes from the same Secret's key
// auth_previous, through an optional secretKeyRef: the key exists only
// while rotating (docs/operations.md, "Rotating the ZooKeeper
// credential"), and without it the variable is left out. Not a file from an
// optional volume: electd exits 2 when a named file is missing.
func TestZooKeeperAuthPreviousIsAnOptionalSecretRef(t *testing.T) {
	forEachFlavour(t, checkZooKeeperAuthPreviousIsAnOptionalSecretRef)
}

func checkZooKeeperAuthPreviousIsAnOptionalSecretRef(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		if _, ok := s.env["ELECTD_ZOOKEEPER_AUTH_PREVIOUS_FILE"]; ok {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_PREVIOUS_FILE is set: electd exits 2 while its file is missing", s.w.ref)
		}
		e, ok := s.env["ELECTD_ZOOKEEPER_AUTH_PREVIOUS"]
		if !ok {
			t.Errorf("%s: no ELECTD_ZOOKEEPER_AUTH_PREVIOUS: the credential cannot rotate without a stall", s.w.ref)
			continue
		}
		ref := e.ValueFrom
		if e.Value != "" || ref == nil || ref.SecretKeyRef == nil {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_PREVIOUS must come from a secretKeyRef, not a literal", s.w.ref)
			continue
		}
		if k := ref.SecretKeyRef; k.Name != zkAuthSecret || k.Key != "auth_previous" {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_PREVIOUS refers to Secret %s key %s, want %s key auth_previous (docs/operations.md's procedure)",
				s.w.ref, k.Name, k.Key, zkAuthSecret)
		}
		if o := ref.SecretKeyRef.Optional; o == nil || !*o {
			t.Errorf("%s: ELECTD_ZOOKEEPER_AUTH_PREVIOUS's secretKeyRef is not optional: outside a rotation the pod would not start", s.w.ref)
		}
		for _, c := range allContainers(&s.w.template.Spec) {
			for _, ev := range c.Env {
				if r := ev.ValueFrom; c != s.c && r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == zkAuthSecret {
					t.Errorf("%s: container %s reads the ZooKeeper credentials too (%s)", s.w.ref, c.Name, ev.Name)
				}
			}
		}
	}
}

// secretFile finds the Secret volume that container c sees at file, and
// the Secret's key that becomes that file.
func secretFile(tmpl *corev1.PodTemplateSpec, c *corev1.Container, file string) (*corev1.Volume, string) {
	for _, vm := range c.VolumeMounts {
		rel, ok := under(file, vm.MountPath)
		if !ok || vm.SubPath != "" {
			continue
		}
		for i := range tmpl.Spec.Volumes {
			v := &tmpl.Spec.Volumes[i]
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return v, rel // every key, as a file of its name
			}
			for _, it := range v.Secret.Items {
				if path.Clean(it.Path) == rel {
					return v, it.Key
				}
			}
		}
	}
	return nil, ""
}

// under reports file's path relative to dir, if it is inside it.
func under(file, dir string) (string, bool) {
	dir = path.Clean(dir)
	file = path.Clean(file)
	if len(file) <= len(dir)+1 || file[:len(dir)] != dir || file[len(dir)] != '/' {
		return "", false
	}
	return file[len(dir)+1:], true
}

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		file, dir, rel string
		ok             bool
	}{
		{"/etc/electd/zookeeper/auth", "/etc/electd/zookeeper", "auth", true},
		{"/etc/electd/zookeeper/auth", "/etc/electd/zookeeper/", "auth", true},
		{"/etc/electd/zookeeperx/auth", "/etc/electd/zookeeper", "", false},
		{"/etc/electd/zookeeper", "/etc/electd/zookeeper", "", false},
	} {
		if rel, ok := under(c.file, c.dir); rel != c.rel || ok != c.ok {
			t.Errorf("under(%q, %q) = %q, %v; want %q, %v", c.file, c.dir, rel, ok, c.rel, c.ok)
		}
	}
}
