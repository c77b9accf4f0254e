package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 14: a token read with the trailing newline of
// `kubectl create secret --from-file` never matched. Every source trims the
// same way, for both secrets.
func TestSecretsAreTrimmedFromEverySource(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		file string
	}{
		{name: "flags", args: []string{"--http.admin_token", " t0ken\n", "--zookeeper.auth", "\tu:p \n"}},
		{name: "env", env: map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t0ken\n", "ELECTD_ZOOKEEPER_AUTH": " u:p\r\n"}},
		{name: "file values", file: "http:\n  admin_token: \"t0ken\\n\"\nzookeeper:\n  auth: \" u:p\\n\"\n"},
		{name: "secret files", args: []string{"--http.admin_token_file", "TOKEN_FILE", "--zookeeper.auth_file", "AUTH_FILE"}},
		{name: "secret files from env", env: map[string]string{"ELECTD_HTTP_ADMIN_TOKEN_FILE": "TOKEN_FILE", "ELECTD_ZOOKEEPER_AUTH_FILE": "AUTH_FILE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			files := strings.NewReplacer("TOKEN_FILE", writeFile(t, "token", "t0ken\n"), "AUTH_FILE", writeFile(t, "auth", "u:p\n\n"))
			for k, v := range tc.env {
				t.Setenv(k, files.Replace(v))
			}
			args := append([]string{}, minimal...)
			for _, a := range tc.args {
				args = append(args, files.Replace(a))
			}
			if tc.file != "" {
				args = append(args, "--config", writeFile(t, "electd.yaml", tc.file))
			}
			c, err := loadArgs(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if c.HTTP.AdminToken != "t0ken" || c.ZooKeeper.Auth != "u:p" || c.Prepared.Session.Auth != "u:p" {
				t.Errorf("token %q, auth %q; want t0ken and u:p", c.HTTP.AdminToken, c.ZooKeeper.Auth)
			}
		})
	}
}

// A secret of white space alone is an error, never "not set": that would
// turn the token off without a word.
func TestWhitespaceSecretIsAnError(t *testing.T) {
	for _, c := range []badCase{
		{name: "token flag", args: with("--http.admin_token", " \n"), key: "http.admin_token"},
		{name: "token env", args: minimal, env: map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "\n"}, key: "http.admin_token"},
		{name: "token in the file", args: minimal, file: "http:\n  admin_token: \"  \"\n", key: "http.admin_token"},
		{name: "token file", args: with("--http.admin_token_file", writeFile(t, "token", " \n\n")), key: "http.admin_token_file"},
		{name: "empty token file", args: with("--http.admin_token_file", writeFile(t, "token", "")), key: "http.admin_token_file"},
		{name: "auth env", args: minimal, env: map[string]string{"ELECTD_ZOOKEEPER_AUTH": "\t"}, key: "zookeeper.auth"},
		{name: "auth file", args: with("--zookeeper.auth_file", writeFile(t, "auth", "\n")), key: "zookeeper.auth_file"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
}

// loadWithin is loadArgs that fails the test, instead of hanging it, when
// loading takes longer than limit.
func loadWithin(t *testing.T, limit time.Duration, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := loadArgs(t, args...)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%v: still loading after %v", args, limit)
		return nil
	}
}

// Issue 14: --config /dev/zero and auth_file: /dev/zero read forever (720 MB
// in 3 s); a FIFO would block the open. Each is refused at once, naming the
// key; a symlinked regular file (a Kubernetes Secret mount) still works.
// The configuration file may be a FIFO or a character device (issue 33),
// read within the same bound: /dev/zero is cut at it; a FIFO nobody writes
// to is TestReadConfigStream's.
func TestLocalFilesAreBounded(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := writeFile(t, "big", strings.Repeat("#", 64<<10+1))
	bigSecret := writeFile(t, "big-secret", "u:"+strings.Repeat("p", 64<<10))
	for _, tc := range []struct {
		args []string
		key  string
		want string
	}{
		{[]string{"--config", "/dev/zero"}, "config", "has more than 64 KiB"},
		{[]string{"--config", dir}, "config", "directory"},
		{[]string{"--config", big}, "config", "at most 64 KiB"},
		{with("--zookeeper.auth_file", "/dev/zero"), "zookeeper.auth_file", "not a regular file"},
		{with("--zookeeper.auth_file", fifo), "zookeeper.auth_file", "FIFO"},
		{with("--zookeeper.auth_file", bigSecret), "zookeeper.auth_file", "at most 64 KiB"},
		{with("--http.admin_token_file", "/dev/zero"), "http.admin_token_file", "not a regular file"},
		{with("--http.tls_cert_file", fifo, "--http.tls_key_file", fifo), "http.tls_cert_file", "FIFO"},
		{with("--zookeeper.tls", "true", "--zookeeper.tls_ca_file", "/dev/zero"), "zookeeper.tls_ca_file", "not a regular file"},
	} {
		err := loadWithin(t, 10*time.Second, tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %s: ...%s...", tc.args, err, tc.key, tc.want)
		}
	}

	// A Secret volume: key -> ..data/key, ..data -> a timestamped directory.
	ts := filepath.Join(dir, "..2024_01_01")
	if err := os.Mkdir(ts, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "token"), []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/token", filepath.Join(dir, "token")); err != nil {
		t.Fatal(err)
	}
	c, err := loadArgs(t, with("--http.admin_token_file", filepath.Join(dir, "token"))...)
	if err != nil || c.HTTP.AdminToken != "t0ken" {
		t.Errorf("token through Secret-style symlinks: %v", err)
	}
}
