package k8s

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/electd/electd/internal/config"
)

// designKeys are the configuration keys, read from internal/config's table
// (docs/design/http-contract.md, "Configuration"): the manifests' ELECTD_* variables must
// name them.
var designKeys = keyNames()

func keyNames() []string {
	var names []string
	for _, k := range config.Keys() {
		names = append(names, k.Name)
	}
	return names
}

// envName is the variable of a key: ELECTD_ + upper case, "." as "_".
func envName(key string) string { return config.EnvName(key) }

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

// The example file, read as a Kubernetes user's tools read YAML, has every
// key of the table at its default (internal/config's own test checks that
// it is generated; this one reads it independently of that generator).
// show is a value of the example as a key's default is written: a number
// whole (JSON decodes 1048576 as a float), an empty list as nothing.
func show(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		if len(x) == 0 {
			return ""
		}
	}
	return fmt.Sprint(v)
}

func TestConfigExampleHasEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	values := map[string]any{}
	flatten("", doc, values)
	present := map[string]bool{}
	for k := range values {
		present[k] = true
	}
	for _, m := range commentedTopLevelKey.FindAllStringSubmatch(string(data), -1) {
		if present[m[1]] {
			t.Errorf("config.example.yaml: %s is both set and commented out", m[1])
		}
		present[m[1]] = true
	}
	for _, k := range config.Keys() {
		if !present[k.Name] && k.Section() != "" && strings.Contains(string(data), "\n  # "+k.Leaf()+": ") {
			continue // inside a section, shown commented out: a computed default, or a proxy key while the proxy is off
		}
		if !present[k.Name] {
			t.Errorf("config.example.yaml lacks the key %s", k.Name)
		}
		delete(present, k.Name)
		v, set := values[k.Name]
		if !set || k.Required || k.Computed != "" {
			continue
		}
		if got := show(v); got != k.Default {
			t.Errorf("config.example.yaml: %s: %q, want the default %q", k.Name, got, k.Default)
		}
	}
	for k := range present {
		t.Errorf("config.example.yaml has %s, which is no key of internal/config", k)
	}
	// The two required keys are set, so that `electd --validate` accepts the file.
	if s, _ := values["zookeeper.servers"].([]any); len(s) == 0 {
		t.Errorf("config.example.yaml: zookeeper.servers must list at least one host:port")
	}
	if p, _ := values["election.path"].(string); !strings.HasPrefix(p, "/") {
		t.Errorf("config.example.yaml: election.path %q is not absolute", values["election.path"])
	}
}

// Every literal ELECTD_* value in the manifests decodes as electd decodes
// it (units on durations, true/false, whole numbers), with the same hook.
func TestManifestValuesDecode(t *testing.T) {
	m := load(t)
	checked := 0
	for _, s := range sidecars(t, m) {
		values := map[string]any{}
		for name, e := range s.env {
			key, ok := keyOfEnv(name)
			if !ok || e.ValueFrom != nil || strings.Contains(e.Value, "$(") {
				continue
			}
			checked++
			sec, leaf, nested := strings.Cut(key, ".")
			if !nested {
				values[key] = e.Value
				continue
			}
			if values[sec] == nil {
				values[sec] = map[string]any{}
			}
			values[sec].(map[string]any)[leaf] = e.Value
		}
		c := config.Defaults()
		if err := config.Decode(values, &c); err != nil {
			t.Errorf("%s: %v", s.w.ref, err)
		}
	}
	if checked == 0 {
		t.Error("no literal ELECTD_* value in the manifests: this test checked nothing")
	}
}

func keyOfEnv(name string) (string, bool) {
	for _, k := range config.Keys() {
		if k.Env == name {
			return k.Name, true
		}
	}
	return "", false
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
}
