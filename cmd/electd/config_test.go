package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/kube"
)

// cleanEnv hides the caller's ELECTD_* variables and POD_NAME: viper treats
// an empty variable as unset.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "ELECTD_") {
			t.Setenv(name, "")
		}
	}
	t.Setenv("POD_NAME", "")
}

// loadArgs runs the configuration path of main: flags, then load.
func loadArgs(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs, opts, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	return load(fs, opts.config)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var minimal = []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/services/web"}

func TestBadConfigNamesTheKey(t *testing.T) {
	cleanEnv(t)
	authFile := writeFile(t, "auth", "nocolon\n")
	with := func(extra ...string) []string { return append(append([]string{}, minimal...), extra...) }
	cases := []struct {
		name string
		args []string
		file string // YAML; when set, --config points at it
		key  string
	}{
		{"missing servers", []string{"--election.path", "/x"}, "", "zookeeper.servers"},
		{"empty servers", with("--zookeeper.servers", " , "), "", "zookeeper.servers"},
		{"server without port", with("--zookeeper.servers", "zk-0"), "", "zookeeper.servers"},
		{"server with bad port", with("--zookeeper.servers", "zk-0:21x1"), "", "zookeeper.servers"},
		{"server port out of range", with("--zookeeper.servers", "a:1,zk-0:99999"), "", "zookeeper.servers"},
		{"server with chroot", with("--zookeeper.servers", "zk-0:2181/prod"), "", "zookeeper.servers"},
		{"missing path", []string{"--zookeeper.servers", "a:1"}, "", "election.path"},
		{"relative path", with("--election.path", "services/web"), "", "election.path"},
		{"path with empty segment", with("--election.path", "/services//web"), "", "election.path"},
		{"path with trailing slash", with("--election.path", "/services/"), "", "election.path"},
		{"root path", with("--election.path", "/"), "", "election.path"},
		{"relative chroot", with("--zookeeper.chroot", "prod"), "", "zookeeper.chroot"},
		{"unknown mode", with("--election.mode", "lottery"), "", "election.mode"},
		{"unknown on_suspend", with("--election.on_suspend", "panic"), "", "election.on_suspend"},
		{"unit-less duration", with("--zookeeper.session_timeout", "10"), "", "zookeeper.session_timeout"},
		{"unit-less fraction", with("--shutdown_timeout", "1.5"), "", "shutdown_timeout"},
		{"negative duration", with("--election.claim_delay", "-1s"), "", "election.claim_delay"},
		{"unparsable duration", with("--shutdown_grace", "soon"), "", "shutdown_grace"},
		{"session timeout below 1s", with("--zookeeper.session_timeout", "500ms"), "", "zookeeper.session_timeout"},
		{"term outside selector", with("--election.term", "1m"), "", "election.term"},
		{"term in race mode", with("--election.mode", "race", "--election.term", "1m"), "", "election.term"},
		{"negative term", with("--election.mode", "selector", "--election.term", "-1m"), "", "election.term"},
		{"addr without port", with("--http.addr", "localhost"), "", "http.addr"},
		{"addr port only", with("--http.addr", "4040"), "", "http.addr"},
		{"addr bad port", with("--http.addr", ":http"), "", "http.addr"},
		{"addr port out of range", with("--http.addr", ":70000"), "", "http.addr"},
		{"bad log level", with("--log.level", "verbose"), "", "log.level"},
		{"bad log format", with("--log.format", "xml"), "", "log.format"},
		{"auth without colon", with("--zookeeper.auth", "secret"), "", "zookeeper.auth"},
		{"auth without user", with("--zookeeper.auth", ":secret"), "", "zookeeper.auth"},
		{"unreadable auth_file", with("--zookeeper.auth_file", "/nonexistent/auth"), "", "zookeeper.auth_file"},
		{"auth_file not user:password", with("--zookeeper.auth_file", authFile), "", "zookeeper.auth_file"},
		{"auth and auth_file", with("--zookeeper.auth", "u:p", "--zookeeper.auth_file", authFile), "", "zookeeper.auth_file"},
		{"negative fencing_offset", with("--election.fencing_offset", "-1"), "", "election.fencing_offset"},
		{"fencing_offset not a number", with("--election.fencing_offset", "1e3"), "", "election.fencing_offset"},
		{"grace equal to timeout", with("--shutdown_grace", "10s"), "", "shutdown_grace"},
		{"grace longer than timeout", with("--shutdown_grace", "3s", "--shutdown_timeout", "2s"), "", "shutdown_grace"},
		{"zero shutdown_timeout", with("--shutdown_timeout", "0s"), "", "shutdown_timeout"},
		{"unknown flag", with("--election.paht", "/x"), "", "--election.paht"},
		{"positional argument", with("serve"), "", "serve"},
		{"missing file", []string{"--config", "/nonexistent/electd.yaml"}, "", "config"},
		{"file does not parse", minimal, "election: [", "config"},
		{"file is a list", minimal, "- a\n- b\n", "config"},
		{"unknown top-level key", minimal, "electon:\n  path: /x\n", "electon"},
		{"unknown nested key", minimal, "zookeeper:\n  session_timout: 5s\n", "zookeeper.session_timout"},
		{"section is not a mapping", minimal, "zookeeper: zk-0:2181\n", "zookeeper"},
		{"YAML integer duration", minimal, "zookeeper:\n  session_timeout: 10\n", "zookeeper.session_timeout"},
		{"YAML float fencing_offset", minimal, "election:\n  fencing_offset: 1.5\n", "election.fencing_offset"},
		{"mapping for a scalar key", minimal, "http:\n  addr:\n    port: 1\n", "http.addr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.file != "" {
				args = append([]string{"--config", writeFile(t, "electd.yaml", c.file)}, args...)
			}
			_, err := loadArgs(t, args...)
			if err == nil {
				t.Fatalf("%v: no error", args)
			}
			if got := err.Error(); !strings.HasPrefix(got, c.key+": ") {
				t.Errorf("error %q does not start with %q", got, c.key+": ")
			}
			var out bytes.Buffer
			if code := fail(&out, err); code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if got := out.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "electd: "+c.key+": ") {
				t.Errorf("stderr %q is not one line naming %s", got, c.key)
			}
		})
	}
}

func TestSecretsStayOutOfErrors(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		append([]string{"--zookeeper.auth", "hunter2"}, minimal...),
		append([]string{"--zookeeper.auth_file", writeFile(t, "auth", "hunter2")}, minimal...),
	} {
		_, err := loadArgs(t, args...)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	cleanEnv(t)
	host, _ := os.Hostname()
	c, err := loadArgs(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{ID: host}
	want.ZooKeeper.Servers = []string{"127.0.0.1:2181"}
	want.ZooKeeper.SessionTimeout = 10 * time.Second
	want.Election.Path = "/services/web"
	want.Election.Mode = "latch"
	want.Election.OnSuspend = "hold"
	want.HTTP.Addr = ":4040"
	want.Log.Level, want.Log.Format = "info", "json"
	want.ShutdownTimeout = 10 * time.Second
	want.Kubernetes.TokenFile, want.Kubernetes.CAFile = kube.DefaultTokenFile, kube.DefaultCAFile
	want.Kubernetes.RecheckInterval = 10 * time.Second
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}

	t.Setenv("POD_NAME", "web-7d9f")
	if c, err = loadArgs(t, minimal...); err != nil || c.ID != "web-7d9f" {
		t.Errorf("id with $POD_NAME = %q, %v; want web-7d9f", c.ID, err)
	}
}

// everyKey sets every key to a value other than its default.
var everyKey = map[string]string{
	"id":                        "web-1",
	"advertise":                 "10.0.0.7:8080",
	"zookeeper.servers":         "zk-0:2181, zk-1:2181,zk-2:2181",
	"zookeeper.chroot":          "/prod",
	"zookeeper.session_timeout": "4s",
	"zookeeper.auth":            "electd:s3cret",
	"election.path":             "/services/web",
	"election.mode":             "selector",
	"election.term":             "1m30s",
	"election.on_suspend":       "step-down",
	"election.claim_delay":      "250ms",
	"election.fencing_offset":   "4294967296",
	"http.addr":                 "127.0.0.1:4141",
	"http.admin_token":          "t0ken",
	"log.level":                 "debug",
	"log.format":                "text",
	"shutdown_grace":            "2s",
	"shutdown_timeout":          "20s",
}

func checkEveryKey(t *testing.T, c *Config, authFile string) {
	t.Helper()
	want := &Config{ID: "web-1", Advertise: "10.0.0.7:8080"}
	want.ZooKeeper.Servers = []string{"zk-0:2181", "zk-1:2181", "zk-2:2181"}
	want.ZooKeeper.Chroot = "/prod"
	want.ZooKeeper.SessionTimeout = 4 * time.Second
	want.ZooKeeper.Auth = "electd:s3cret"
	want.ZooKeeper.AuthFile = authFile
	want.Election.Path = "/services/web"
	want.Election.Mode = "selector"
	want.Election.Term = 90 * time.Second
	want.Election.OnSuspend = "step-down"
	want.Election.ClaimDelay = 250 * time.Millisecond
	want.Election.FencingOffset = 1 << 32
	want.HTTP.Addr = "127.0.0.1:4141"
	want.HTTP.AdminToken = "t0ken"
	want.Log.Level, want.Log.Format = "debug", "text"
	want.ShutdownGrace = 2 * time.Second
	want.ShutdownTimeout = 20 * time.Second
	want.Kubernetes.TokenFile, want.Kubernetes.CAFile = kube.DefaultTokenFile, kube.DefaultCAFile
	want.Kubernetes.RecheckInterval = 10 * time.Second
	if !reflect.DeepEqual(c, want) {
		t.Errorf("\n got %+v\nwant %+v", c, want)
	}
	if got, want := c.path(), "/prod/services/web"; got != want {
		t.Errorf("path with chroot = %q, want %q", got, want)
	}
}

func TestEnvironmentAloneSetsEveryKey(t *testing.T) {
	cleanEnv(t)
	for k, v := range everyKey {
		t.Setenv(envName(k), v)
	}
	c, err := loadArgs(t)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, "")

	// auth_file is the one key that excludes another: check it alone.
	t.Setenv("ELECTD_ZOOKEEPER_AUTH", "")
	f := writeFile(t, "auth", "electd:s3cret\n")
	t.Setenv("ELECTD_ZOOKEEPER_AUTH_FILE", f)
	if c, err = loadArgs(t); err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, f)
}

func TestFlagsAloneSetEveryKey(t *testing.T) {
	cleanEnv(t)
	var args []string
	for k, v := range everyKey {
		args = append(args, "--"+k+"="+v)
	}
	c, err := loadArgs(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, "")
}

func TestFileAloneSetsEveryKey(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", `
id: web-1
advertise: 10.0.0.7:8080
zookeeper:
  servers: [zk-0:2181, zk-1:2181, zk-2:2181]
  chroot: /prod
  session_timeout: 4s
  auth: electd:s3cret
election:
  path: /services/web
  mode: selector
  term: 1m30s
  on_suspend: step-down
  claim_delay: 250ms
  fencing_offset: 4294967296
http:
  addr: 127.0.0.1:4141
  admin_token: t0ken
log:
  level: debug
  format: text
shutdown_grace: 2s
shutdown_timeout: 20s
`)
	c, err := loadArgs(t, "--config", f)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, "")
}

func TestListForms(t *testing.T) {
	cleanEnv(t)
	want := []string{"a:1", "b:2"}
	for name, file := range map[string]string{
		"YAML list":    "zookeeper:\n  servers:\n    - a:1\n    - b:2\n",
		"comma string": "zookeeper:\n  servers: \"a:1, b:2\"\n",
	} {
		c, err := loadArgs(t, "--config", writeFile(t, "electd.yaml", file), "--election.path", "/x")
		if err != nil || !reflect.DeepEqual(c.ZooKeeper.Servers, want) {
			t.Errorf("%s: servers %v, %v; want %v", name, c.ZooKeeper.Servers, err, want)
		}
	}
}

func TestPrecedenceFileEnvFlags(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", `
id: from-file
advertise: from-file
zookeeper:
  servers: [file:2181]
election:
  path: /file
  mode: race
`)
	t.Setenv("ELECTD_ID", "from-env")
	t.Setenv("ELECTD_ADVERTISE", "from-env")
	t.Setenv("ELECTD_ELECTION_MODE", "selector")
	c, err := loadArgs(t, "--config", f, "--id", "from-flag", "--election.path", "/flag")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, got, want string }{
		{"id", c.ID, "from-flag"},                                  // file < env < flag
		{"advertise", c.Advertise, "from-env"},                     // file < env
		{"election.mode", c.Election.Mode, "selector"},             // file < env
		{"election.path", c.Election.Path, "/flag"},                // file < flag
		{"zookeeper.servers", c.ZooKeeper.Servers[0], "file:2181"}, // file alone
		{"log.level", c.Log.Level, "info"},                         // default
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
	}
}

func TestEmptyValueMeansDefault(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", "election:\n  mode: \"\"\n  on_suspend: \"\"\n  term: \"\"\nlog:\n  level:\n")
	c, err := loadArgs(t, append([]string{"--config", f}, minimal...)...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Election.Mode != "latch" || c.Election.OnSuspend != "hold" || c.Log.Level != "info" {
		t.Errorf("empty values: mode %q, on_suspend %q, level %q", c.Election.Mode, c.Election.OnSuspend, c.Log.Level)
	}
}

func TestZeroDurationNeedsNoUnit(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", "shutdown_grace: 0\nelection:\n  claim_delay: \"0\"\n")
	if _, err := loadArgs(t, append([]string{"--config", f}, minimal...)...); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownEnv(t *testing.T) {
	got := unknownEnv([]string{"ELECTD_PORT=tcp://10.0.0.1:4040", "ELECTD_ID=web-1", "PATH=/bin", "ELECTD_FOO=1"})
	if want := []string{"ELECTD_FOO", "ELECTD_PORT"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unknownEnv = %v, want %v", got, want)
	}
}

func TestValidatePrintsEveryKeyMasked(t *testing.T) {
	cleanEnv(t)
	t.Setenv("ELECTD_HTTP_ADMIN_TOKEN", "t0ken-secret")
	var stdout, stderr bytes.Buffer
	args := append([]string{"--validate", "--zookeeper.auth", "electd:pw-secret", "--zookeeper.chroot", "/prod"}, minimal...)
	if code := run(args, &stdout, &stderr); code != 0 {
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
	for _, k := range keys {
		_, leaf, ok := strings.Cut(k.name, ".")
		if !ok {
			leaf = k.name
		}
		if !strings.Contains(out, leaf+": ") {
			t.Errorf("output lacks %s:\n%s", k.name, out)
		}
	}
}

// The --validate output, secrets aside, is a configuration file that loads
// to the same configuration.
func TestValidateOutputRoundTrips(t *testing.T) {
	cleanEnv(t)
	var args []string
	for k, v := range everyKey {
		if k != "zookeeper.auth" && k != "http.admin_token" {
			args = append(args, "--"+k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--validate"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	want, err := loadArgs(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadArgs(t, "--config", writeFile(t, "effective.yaml", stdout.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, &stdout)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestVersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--version: exit %d", code)
	}
	if got := stdout.String(); !strings.HasPrefix(got, "electd dev (commit unknown, go") {
		t.Errorf("--version = %q", got)
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	help := stdout.String()
	for _, k := range keys {
		if !strings.Contains(help, "--"+k.name+" ") || !strings.Contains(help, "env: "+envName(k.name)) {
			t.Errorf("--help lacks %s or %s", k.name, envName(k.name))
		}
		if k.def != "" && !strings.Contains(help, "default: "+k.def+";") {
			t.Errorf("--help lacks the default of %s (%s)", k.name, k.def)
		}
	}
	if !strings.Contains(help, "second signal exits at once with status 1") {
		t.Error("--help does not document the second signal")
	}
}
