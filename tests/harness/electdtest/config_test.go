package electdtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigYAML(t *testing.T) {
	got := string(Config{
		ID: "web-1", Advertise: "127.0.0.1:8081",
		Servers: []string{"127.0.0.1:2181", "127.0.0.1:2182"}, SessionTimeout: 4 * time.Second,
		Path: "/services/demo", OnSuspend: "hold", Term: 1500 * time.Millisecond,
		HTTPAddr: "127.0.0.1:9000", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
	}.YAML())
	want := `id: web-1
advertise: 127.0.0.1:8081
zookeeper:
  servers: ['127.0.0.1:2181', '127.0.0.1:2182']
  session_timeout: 4s
election:
  path: /services/demo
  on_suspend: hold
  term: 1.5s
http:
  addr: 127.0.0.1:9000
log:
  format: text
shutdown_timeout: 5s
`
	if got != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", got, want)
	}
	proxy := string(Config{ProxyListen: "127.0.0.1:4041", ProxyPeer: "127.0.0.1:4042", ProxyApp: "127.0.0.1:8080",
		ProxyMaxConnections: 40, ProxyResponseTimeout: time.Second, ProxyTrustedProxies: []string{"10.0.0.0/8", "127.0.0.1"}}.YAML())
	wantProxy := `proxy:
  listen: 127.0.0.1:4041
  app: 127.0.0.1:8080
  peer_listen: 127.0.0.1:4042
  max_connections: 40
  response_timeout: 1s
  trusted_proxies: [10.0.0.0/8, 127.0.0.1]
`
	if proxy != wantProxy {
		t.Errorf("YAML:\n%s\nwant:\n%s", proxy, wantProxy)
	}
	if got := string(Config{}.YAML()); got != "{}\n" {
		t.Errorf("empty Config: %q", got)
	}
}

// The build key covers what the go tool compiles into electd and nothing else: a test
// file or a file under testdata changes nothing, a source file or go.sum does.
func TestSourceKey(t *testing.T) {
	root, write := sourceTree(t)
	checkKey(t, root, write, false, "cmd/x/main_test.go", "cmd/x/testdata/a.go", ".git/x.go", "README.md", "nested/go.mod", "nested/n.go")
	if k, _ := sourceKey(root, []string{"build", "-race"}); k == buildKey(t, root) {
		t.Error("-race did not change the key")
	}
	checkKey(t, root, write, true, "internal/y/y.go", "go.sum", "cmd/x/main.go")
}

// The binary the tests run is electd, stamped as a test build.
func TestBinary(t *testing.T) {
	r := Run(t, nil, "--version")
	if want := "electd " + Version + " (commit " + Commit + ", "; r.Status != 0 || !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("electd --version: %d %q %q, want %q...", r.Status, r.Stdout, r.Stderr, want)
	}
}

// sourceTree makes the smallest module SourceKey reads in a new directory,
// and returns it with a function that writes a file below it.
func sourceTree(t *testing.T) (root string, write func(rel, content string)) {
	t.Helper()
	root = t.TempDir()
	write = func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module x\n")
	write("go.sum", "")
	write("cmd/x/main.go", "package main\n")
	return root, write
}

// checkKey writes each of rels in turn (a new content each) and checks whether the
// write changed root's build key, as moves says it must or must not.
func checkKey(t *testing.T, root string, write func(rel, content string), moves bool, rels ...string) {
	t.Helper()
	base := buildKey(t, root)
	for _, rel := range rels {
		write(rel, "package x // written "+rel+"\n")
		k := buildKey(t, root)
		if moved := k != base; moved != moves {
			t.Errorf("writing %s changed the key: %v, want %v", rel, moved, moves)
		}
		base = k
	}
}

// buildKey is sourceKey of root for a plain build, failing t on an error.
func buildKey(t *testing.T, root string) string {
	t.Helper()
	k, err := sourceKey(root, []string{"build"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}
