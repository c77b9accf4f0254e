package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// designKeys are the configuration keys of DESIGN.md's table, in its order.
// The manifests' ELECTD_* variables and config.example.yaml must agree with
// this list; when DESIGN.md gains a key, add it here and in both.
var designKeys = []string{
	"id",
	"advertise",
	"zookeeper.servers",
	"zookeeper.chroot",
	"zookeeper.session_timeout",
	"zookeeper.auth",
	"zookeeper.auth_file",
	"election.path",
	"election.mode",
	"election.term",
	"election.on_suspend",
	"election.claim_delay",
	"election.fencing_offset",
	"http.addr",
	"http.admin_token",
	"log.level",
	"log.format",
	"shutdown_grace",
	"shutdown_timeout",
	"kubernetes.leader_label",
	"kubernetes.lease_name",
	"kubernetes.pod_name",
	"kubernetes.namespace",
	"kubernetes.token_file",
	"kubernetes.ca_file",
	"kubernetes.recheck_interval",
}

// designDefaults are DESIGN.md's defaults, as config.example.yaml must spell
// them (durations with a unit). id's default ($POD_NAME, else the host name)
// cannot be written in a file, so the example leaves it commented out.
var designDefaults = map[string]string{
	"advertise":                   "",
	"zookeeper.chroot":            "",
	"zookeeper.session_timeout":   "10s",
	"zookeeper.auth":              "",
	"zookeeper.auth_file":         "",
	"election.mode":               "latch",
	"election.term":               "0s",
	"election.on_suspend":         "hold",
	"election.claim_delay":        "0s",
	"election.fencing_offset":     "0",
	"http.addr":                   ":4040",
	"http.admin_token":            "",
	"log.level":                   "info",
	"log.format":                  "json",
	"shutdown_grace":              "0s",
	"shutdown_timeout":            "10s",
	"kubernetes.leader_label":     "",
	"kubernetes.lease_name":       "",
	"kubernetes.pod_name":         "",
	"kubernetes.namespace":        "",
	"kubernetes.token_file":       "/var/run/secrets/kubernetes.io/serviceaccount/token",
	"kubernetes.ca_file":          "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
	"kubernetes.recheck_interval": "10s",
}

// envName is the variable of a key: ELECTD_ + upper case, "." as "_".
func envName(key string) string {
	return "ELECTD_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

const exampleConfig = "../../config.example.yaml"

// flatten turns nested mappings into dotted keys; lists and scalars are leaves.
func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		out[prefix] = v
		return
	}
	for k, sub := range m {
		if prefix != "" {
			k = prefix + "." + k
		}
		flatten(k, sub, out)
	}
}

// commentedTopLevelKey matches a top-level key that is documented but
// commented out, such as "# id: web-1".
var commentedTopLevelKey = regexp.MustCompile(`(?m)^# ?([a-z][a-z_]*):(?:[ \t]|$)`)

func TestConfigExampleHasEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", filepath.Base(exampleConfig), err)
	}
	values := map[string]any{}
	flatten("", doc, values)
	keys := map[string]bool{}
	for k := range values {
		keys[k] = true
	}
	for _, m := range commentedTopLevelKey.FindAllStringSubmatch(string(data), -1) {
		if keys[m[1]] {
			t.Errorf("config.example.yaml: %s is both set and commented out", m[1])
		}
		keys[m[1]] = true
	}

	var got []string
	for k := range keys {
		got = append(got, k)
	}
	want := slices.Clone(designKeys)
	slices.Sort(got)
	slices.Sort(want)
	for _, k := range want {
		if !keys[k] {
			t.Errorf("config.example.yaml lacks the key %s", k)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("config.example.yaml has %s, which is not a key of DESIGN.md", k)
		}
	}

	for k, want := range designDefaults {
		v, ok := values[k]
		if !ok {
			continue // reported above
		}
		if got := fmt.Sprint(v); got != want {
			t.Errorf("config.example.yaml: %s: %q, want the default %q", k, got, want)
		}
	}
	for k := range durationKeys {
		if s, ok := values[k].(string); !ok {
			t.Errorf("config.example.yaml: %s = %v, want a duration string with a unit", k, values[k])
		} else if _, ok := duration(s); !ok {
			t.Errorf("config.example.yaml: %s = %q is not a duration with a unit", k, s)
		}
	}
	// The two required keys are set, so that `electd --validate` accepts the file.
	if s, _ := values["zookeeper.servers"].([]any); len(s) == 0 {
		t.Errorf("config.example.yaml: zookeeper.servers must list at least one host:port")
	}
	if p, _ := values["election.path"].(string); !strings.HasPrefix(p, "/") {
		t.Errorf("config.example.yaml: election.path %q is not absolute", values["election.path"])
	}
}

func TestEnvNames(t *testing.T) {
	for key, want := range map[string]string{
		"zookeeper.servers":         "ELECTD_ZOOKEEPER_SERVERS",
		"election.path":             "ELECTD_ELECTION_PATH",
		"zookeeper.session_timeout": "ELECTD_ZOOKEEPER_SESSION_TIMEOUT",
		"shutdown_grace":            "ELECTD_SHUTDOWN_GRACE",
		"id":                        "ELECTD_ID",
	} {
		if got := envName(key); got != want {
			t.Errorf("envName(%q) = %q, want %q", key, got, want)
		}
	}
	seen := map[string]string{}
	for _, k := range designKeys {
		if prev, dup := seen[envName(k)]; dup {
			t.Errorf("keys %s and %s share the variable %s", prev, k, envName(k))
		}
		seen[envName(k)] = k
	}
}
