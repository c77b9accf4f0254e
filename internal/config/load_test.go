package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// cleanEnv hides the caller's ELECTD_* variables and POD_NAME: viper treats
// an empty variable as unset.
func cleanEnv(t testing.TB) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "ELECTD_") {
			t.Setenv(name, "")
		}
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_IP", "")
}

// loadArgs loads args in the test's environment, as main does.
func loadArgs(t testing.TB, args ...string) (*Loaded, error) {
	t.Helper()
	return Load(withPeerKey(args), os.Environ())
}

// testPeerKey is a proxy.peer_key of the shortest length accepted.
const testPeerKey = "0123456789abcdef0123456789abcdef"

// withPeerKey adds proxy.peer_key to args that turn the proxy on with
// flags and set no key of their own, so that each proxy test need not
// repeat it; TestPeerKeyRequired loads without one.
func withPeerKey(args []string) []string {
	on := false
	for _, a := range args {
		if strings.HasPrefix(a, "--proxy.peer_key") {
			return args
		}
		on = on || a == "--proxy.listen" || strings.HasPrefix(a, "--proxy.listen=") && a != "--proxy.listen="
	}
	if !on {
		return args
	}
	// Before a "--" that starts electd run's command.
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args)
	}
	return slices.Insert(slices.Clone(args), i, "--proxy.peer_key="+testPeerKey)
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeKeyPair writes a self-signed certificate and its key, made now.
func writeKeyPair(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	cert, key := keyPairPEM(t, "zk.test")
	return writeFile(t, "cert.pem", string(cert)), writeFile(t, "key.pem", string(key))
}

var minimal = []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/services/web"}

func TestLoadDefaults(t *testing.T) {
	cleanEnv(t)
	host, _ := os.Hostname()
	c, err := loadArgs(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	// The table's defaults (spelled out in TestDefaults), the id computed
	// and the required keys as given.
	want := Defaults()
	want.ID = host
	want.ZooKeeper.Servers = []string{"127.0.0.1:2181"}
	want.Election.Path = "/services/web"
	if !reflect.DeepEqual(c.Config, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c.Config, want)
	}
	if s := c.Prepared.Session; s.TLS != nil || s.FixACL || s.Auth != "" {
		t.Errorf("session config by default: %+v", s)
	}
	if c.Prepared.HTTPCert != nil {
		t.Error("an HTTP certificate by default")
	}

	t.Setenv("POD_NAME", "web-7d9f")
	if c, err = loadArgs(t, minimal...); err != nil || c.ID != "web-7d9f" {
		t.Errorf("id with $POD_NAME = %q, %v; want web-7d9f", c.ID, err)
	}
}

func TestListForms(t *testing.T) {
	cleanEnv(t)
	want := []string{"a:1", "b:2"}
	for name, file := range map[string]string{
		"YAML list":        "zookeeper:\n  servers:\n    - a:1\n    - b:2\n",
		"flow list":        "zookeeper:\n  servers: [a:1, ' b:2 ']\n",
		"comma string":     "zookeeper:\n  servers: \"a:1, b:2\"\n",
		"commas in a list": "zookeeper:\n  servers: [\"a:1,b:2\"]\n",
	} {
		c, err := loadArgs(t, "--config", writeFile(t, "electd.yaml", file), "--election.path", "/x")
		if err != nil || !reflect.DeepEqual(c.ZooKeeper.Servers, want) {
			t.Errorf("%s: servers %v, %v; want %v", name, c, err, want)
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
  tls: true
election:
  path: /file
  mode: race
http:
  max_streams: 7
`)
	t.Setenv("ELECTD_ID", "from-env")
	t.Setenv("ELECTD_ADVERTISE", "from-env")
	t.Setenv("ELECTD_ELECTION_MODE", "selector")
	t.Setenv("ELECTD_ZOOKEEPER_TLS", "false")
	t.Setenv("ELECTD_HTTP_MAX_STREAMS", "8")
	c, err := loadArgs(t, "--config", f, "--id", "from-flag", "--election.path", "/flag", "--http.max_streams", "9")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"id", c.ID, "from-flag"},                                  // file < env < flag
		{"advertise", c.Advertise, "from-env"},                     // file < env
		{"election.mode", c.Election.Mode, "selector"},             // file < env
		{"zookeeper.tls", c.ZooKeeper.TLS, false},                  // file < env
		{"http.max_streams", c.HTTP.MaxStreams, 9},                 // file < env < flag
		{"election.path", c.Election.Path, "/flag"},                // file < flag
		{"zookeeper.servers", c.ZooKeeper.Servers[0], "file:2181"}, // file alone
		{"log.level", c.Log.Level, "info"},                         // default
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.key, c.got, c.want)
		}
	}
}

// An empty value means "not set" in every source: the next source down, or
// the default, applies.
func TestEmptyValueMeansUnset(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", "election:\n  mode: \"\"\n  on_suspend: \"  \"\n  term: \"\"\nlog:\n  level:\nhttp:\n  max_streams: \"\"\n")
	c, err := loadArgs(t, append([]string{"--config", f}, minimal...)...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Election.Mode != "latch" || c.Election.OnSuspend != "hold" || c.Log.Level != "info" || c.HTTP.MaxStreams != 64 {
		t.Errorf("empty values: mode %q, on_suspend %q, level %q, max_streams %d", c.Election.Mode, c.Election.OnSuspend, c.Log.Level, c.HTTP.MaxStreams)
	}

	t.Setenv("ELECTD_ID", "from-env")
	t.Setenv("ELECTD_ELECTION_MODE", "race")
	c, err = loadArgs(t, append([]string{"--id", "", "--election.mode="}, minimal...)...)
	if err != nil || c.ID != "from-env" || c.Election.Mode != "race" {
		t.Errorf("empty flags: %v; want the environment's values", err)
	}
}

func TestZeroDurationNeedsNoUnit(t *testing.T) {
	cleanEnv(t)
	f := writeFile(t, "electd.yaml", "shutdown_grace: 0\nelection:\n  claim_delay: \"0\"\n")
	if _, err := loadArgs(t, append([]string{"--config", f}, minimal...)...); err != nil {
		t.Fatal(err)
	}
}

// Bools are true or false from every source, in any case.
func TestBoolsFromEverySource(t *testing.T) {
	cleanEnv(t)
	with := append([]string{"--zookeeper.auth", "u:p"}, minimal...)
	for _, tc := range []struct {
		name string
		file string
		env  string
		flag string
		want bool
	}{
		{name: "YAML true", file: "zookeeper:\n  fix_acl: true\n", want: true},
		{name: "YAML False", file: "zookeeper:\n  fix_acl: False\n", want: false},
		{name: "YAML string", file: "zookeeper:\n  fix_acl: \"true\"\n", want: true},
		{name: "env", env: "TRUE", want: true},
		{name: "env false", env: "false", want: false},
		{name: "flag", flag: "true", want: true},
		{name: "flag beats env", env: "true", flag: "false", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := with
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, "electd.yaml", tc.file)}, args...)
			}
			if tc.flag != "" {
				args = append([]string{"--zookeeper.fix_acl", tc.flag}, args...)
			}
			t.Setenv("ELECTD_ZOOKEEPER_FIX_ACL", tc.env)
			c, err := loadArgs(t, args...)
			if err != nil || c.ZooKeeper.FixACL != tc.want || c.Prepared.Session.FixACL != tc.want {
				t.Errorf("%v: fix_acl = %v, %v; want %v", args, c, err, tc.want)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	got := newEnvironment([]string{"ELECTD_PORT=tcp://10.0.0.1:4040", "ELECTD_ID=web-1", "PATH=/bin", "ELECTD_FOO=1", "ELECTD_HTTP_MAX_STREAMS=3"}).unknown()
	if want := []string{"ELECTD_FOO", "ELECTD_PORT"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unknownEnv = %v, want %v", got, want)
	}
}

// The --validate output, secrets aside, is a configuration file that loads
// to the same configuration.
func TestValidateOutputRoundTrips(t *testing.T) {
	cleanEnv(t)
	every := everyKey(t)
	every["http.admin_token_file"] = writeFile(t, "token", "t0ken\n")
	every["zookeeper.auth_file"] = writeFile(t, "auth", "electd:s3cret\n")
	every["proxy.peer_key_file"] = writeFile(t, "peer_key", testPeerKey+"\n")
	var args []string
	for k, v := range every {
		if key, _ := Lookup(k); !key.Secret {
			args = append(args, "--"+k+"="+v)
		}
	}
	loaded, err := loadArgs(t, append(args, "--validate")...)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	WriteEffective(&stdout, &loaded.Config)
	if out := stdout.String(); strings.Contains(out, "t0ken") || strings.Contains(out, "s3cret") ||
		!strings.Contains(out, "admin_token: \"\" # read from http.admin_token_file\n") ||
		!strings.Contains(out, "auth: \"\" # read from zookeeper.auth_file\n") {
		t.Errorf("admin token read from a file:\n%s", &stdout)
	}
	want, err := loadArgs(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadArgs(t, "--config", writeFile(t, "effective.yaml", stdout.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, &stdout)
	}
	if !reflect.DeepEqual(got.Config, want.Config) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Config, want.Config)
	}
}
