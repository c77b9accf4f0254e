package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// FuzzLoad feeds a configuration file and ELECTD_* values through Load, as
// main does. env is lines of key=value; a relative path for a *_file key
// names one of fuzzFiles (a token, /dev/zero, a FIFO, a key pair). Whatever
// the input: no panic, load returns (a deadline catches a hang), it
// allocates a bounded amount, and it reports a bounded number of errors,
// each one short line that starts with a key and never shows a secret.
//
//	go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 30s ./internal/config
func FuzzLoad(f *testing.F) {
	if example, err := os.ReadFile("../../config.example.yaml"); err == nil {
		f.Add(example, "")
	}
	f.Add([]byte("zookeeper:\n  servers: [a:1]\nelection:\n  path: /x\n"), "http.admin_token_file=token\nzookeeper.auth=u:p")
	dir := f.TempDir()
	fuzzFiles(f, dir)
	file := filepath.Join(dir, "electd.yaml")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		cleanEnv(t)
		secrets := setFuzzEnv(t, dir, env)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan error, 1)
		go func() {
			_, err := loadArgs(t, "--config", file)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("load still running after 10 s:\n%q\n%q", data, env)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
			t.Errorf("load allocated %d MiB for %d bytes of file and %d of env", alloc>>20, len(data), len(env))
		}
		if err != nil {
			checkFuzzError(t, err, secrets)
		}
	})
}

// fuzzFiles makes the files that env lines may name.
func fuzzFiles(f *testing.F, dir string) {
	cert, key := writeKeyPair(f)
	for name, target := range map[string]string{"zero": "/dev/zero", "cert.pem": cert, "key.pem": key} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("fuzz-secret-token\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		f.Fatal(err)
	}
}

// setFuzzEnv sets the variables of env's key=value lines and returns the
// secret values among them that are long enough to look for in errors.
func setFuzzEnv(t *testing.T, dir, env string) []string {
	secrets := []string{"fuzz-secret-token"}
	for line := range strings.SplitSeq(env, "\n") {
		name, value, _ := strings.Cut(line, "=")
		k, ok := Lookup(name)
		if !ok || strings.ContainsRune(value, 0) {
			continue
		}
		if strings.HasSuffix(name, "_file") && value != "" && !filepath.IsAbs(value) {
			value = filepath.Join(dir, filepath.Base(value))
		}
		if k.Secret && len(strings.TrimSpace(value)) >= 12 {
			secrets = append(secrets, strings.TrimSpace(value))
		}
		t.Setenv(k.Env, value)
	}
	return secrets
}

// errKey is how an error starts: a key, a section, "config", or a path
// from the file whose segments are as they are or quoted (and cut).
var errKey = regexp.MustCompile(`^` + keySeg + `(\.` + keySeg + `)*: \S`)

const keySeg = `([a-z0-9_-]+|"([^"\\]|\\.)*"(\.\.\.)?)`

func checkFuzzError(t *testing.T, err error, secrets []string) {
	t.Helper()
	var list Errors
	var ke *KeyError
	switch {
	case errors.As(err, &list):
	case errors.As(err, &ke):
		list = Errors{ke}
	default:
		t.Fatalf("%q is no *KeyError", err)
	}
	if len(list) > maxErrors {
		t.Errorf("%d errors, want at most %d", len(list), maxErrors)
	}
	for _, ke := range list {
		msg := ke.Error()
		switch {
		case !errKey.MatchString(msg):
			t.Errorf("%q does not start with a key", msg)
		case len(msg) > 512:
			t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
		case strings.IndexFunc(msg, unicode.IsControl) >= 0:
			t.Errorf("error with a control character: %q", msg)
		}
		for _, s := range secrets {
			if strings.Contains(msg, s) {
				t.Errorf("error %q shows a secret", msg)
			}
		}
	}
}
