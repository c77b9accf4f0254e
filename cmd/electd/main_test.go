package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/electd/electd/internal/config"
)

var minimal = []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/services/web"}

func TestValidatePrintsEveryKeyMasked(t *testing.T) {
	environ := []string{"ELECTD_HTTP_ADMIN_TOKEN=t0ken-secret"}
	var stdout, stderr bytes.Buffer
	args := append([]string{"--validate", "--zookeeper.auth", "electd:pw-secret", "--zookeeper.chroot", "/prod"}, minimal...)
	if code := run(args, environ, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, &stderr)
	}
	out := stdout.String()
	if all := out + stderr.String(); strings.Contains(all, "pw-secret") || strings.Contains(all, "t0ken-secret") {
		t.Errorf("a secret is shown:\n%s%s", out, &stderr)
	}
	for _, want := range []string{`  auth: "***"`, `  admin_token: "***"`, "# election path with the chroot: /prod/services/web"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, k := range config.Keys() {
		if !strings.Contains(out, k.Leaf()+": ") {
			t.Errorf("output lacks %s:\n%s", k.Name, out)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--version: exit %d", code)
	}
	if got := stdout.String(); !strings.HasPrefix(got, "electd dev (commit unknown, go") {
		t.Errorf("--version = %q", got)
	}
	stdout.Reset()
	if code := run([]string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	help := stdout.String()
	for _, k := range config.Keys() {
		if !strings.Contains(help, "--"+k.Name+" "+k.Type+"\n        "+k.Help+"\n") || !strings.Contains(help, "env: "+k.Env+"\n") {
			t.Errorf("--help lacks %s, its help or %s", k.Name, k.Env)
		}
		if !strings.Contains(help, "default: "+k.DefaultText()+";") {
			t.Errorf("--help lacks the default of %s (%s)", k.Name, k.DefaultText())
		}
	}
	for _, command := range []string{"electd status ", "electd release ", "electd run "} {
		if !strings.Contains(help, "\n  "+command) {
			t.Errorf("--help's command list lacks %q", command)
		}
	}
	if !strings.Contains(help, "second of these signals exits at once") {
		t.Error("--help does not document the second signal")
	}
}

// Several errors are said at once, one line each naming its key, in the
// table's order; the exit status stays 2.
func TestBadConfigSaysEveryError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--election.path", "/x", "--election.mode", "lottery", "--log.level", "verbose", "--http.max_streams", "lots"}
	if code := run(args, nil, &stdout, &stderr); code != 2 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, &stdout)
	}
	want := []string{"zookeeper.servers", "election.mode", "http.max_streams", "log.level"}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stderr:\n%s\nwant %d lines naming %v", &stderr, len(want), want)
	}
	for i, key := range want {
		if !strings.HasPrefix(lines[i], "electd: "+key+": ") {
			t.Errorf("line %d %q, want one naming %s", i+1, lines[i], key)
		}
	}
}
