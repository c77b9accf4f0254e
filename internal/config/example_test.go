package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// config.example.yaml is generated from the table; a key added, renamed or
// given a new default or help without `go generate ./internal/config`
// fails here.
func TestExampleIsGenerated(t *testing.T) {
	committed, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, Example()) {
		t.Errorf("config.example.yaml differs from the table; run: go generate ./internal/config")
	}
	for _, k := range table {
		indent, comment := "  ", ""
		if k.Section() == "" {
			indent = ""
		}
		if k.Computed != "" || k.needsProxy() {
			comment = "# " // shown with its example, commented out
		}
		line := "\n" + indent + comment + k.Leaf() + ": "
		if !bytes.Contains(committed, []byte(line)) {
			t.Errorf("config.example.yaml lacks %s", k.Name)
		}
	}
}

func TestWriteEffectiveMasksSecrets(t *testing.T) {
	c := Defaults()
	c.ID, c.ZooKeeper.Servers, c.Election.Path = "web-1", []string{"zk:2181"}, "/x"
	c.ZooKeeper.Auth, c.HTTP.AdminToken, c.HTTP.AdminTokenFile = "u:hunter2", "t0ken-hunter2", "/run/token"
	var b bytes.Buffer
	WriteEffective(&b, &c)
	out := b.String()
	if strings.Contains(out, "hunter2") {
		t.Errorf("a secret is shown:\n%s", out)
	}
	for _, want := range []string{"\n  auth: \"***\"\n", "\n  admin_token: \"\" # read from http.admin_token_file\n", "\n  servers: [\"zk:2181\"]\n", "\n  max_streams: 64\n", "\nshutdown_timeout: 10s\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
