package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
)

func TestBinaryBadConfigExits2WithOneLine(t *testing.T) {
	for _, c := range []struct {
		key  string
		env  []string
		args []string
	}{
		{"zookeeper.servers", nil, []string{"--election.path", "/x"}},
		{"election.path", nil, []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "x"}},
		{"zookeeper.session_timeout", []string{"ELECTD_ZOOKEEPER_SESSION_TIMEOUT=10", "ELECTD_ZOOKEEPER_SERVERS=a:1", "ELECTD_ELECTION_PATH=/x"}, nil},
		{"config", nil, []string{"--config", "/nonexistent.yaml"}},
		{"zookeeper.auth_previous", nil, []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/x", "--zookeeper.auth_previous", "electd:old"}},
		{"zookeeper.auth_previous_file", []string{"ELECTD_ZOOKEEPER_AUTH=electd:new", "ELECTD_ZOOKEEPER_AUTH_PREVIOUS_FILE=/nonexistent/auth_previous"}, []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/x"}},
		{"--no-such-flag", nil, []string{"--no-such-flag"}},
	} {
		status, stdout, stderr := electdtest.Run(t, c.env, c.args...).Outcome()
		if status != 2 || stdout != "" {
			t.Errorf("%v %v: status %d, stdout %q; want 2 and nothing", c.env, c.args, status, stdout)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "electd: "+c.key+": ") {
			t.Errorf("%v %v: stderr %q, want one line naming %s", c.env, c.args, stderr, c.key)
		}
	}
}

// Every error of a configuration is said at once, one line each.
func TestBinaryBadConfigSaysEveryError(t *testing.T) {
	f := writeConfig(t, "zookeeper:\n  session_timout: 5s\nelection:\n  path: relative\n")
	status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_APP_HEALTH_TIMEOUT=1"}, "--config", f, "--log.format", "xml").Outcome()
	want := []string{"zookeeper.session_timout", "zookeeper.servers", "election.path", "log.format", "app.health_timeout"}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if status != 2 || stdout != "" || len(lines) != len(want) {
		t.Fatalf("status %d, stdout %q, stderr:\n%s\nwant 2 and a line for each of %v", status, stdout, stderr, want)
	}
	for i, key := range want {
		if !strings.HasPrefix(lines[i], "electd: "+key+": ") {
			t.Errorf("line %d %q, want one naming %s", i+1, lines[i], key)
		}
	}
}

// writeConfig writes a configuration file for the test.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "electd.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBinaryVersion(t *testing.T) {
	status, stdout, _ := electdtest.Run(t, nil, "--version").Outcome()
	if want := "electd " + electdtest.Version + " (commit " + electdtest.Commit + ", go"; status != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("--version: %d %q, want %q...", status, stdout, want)
	}
}

// The example configuration at the repository root documents every key and
// must load as it is.
func TestBinaryExampleConfigValidates(t *testing.T) {
	status, stdout, stderr := electdtest.Run(t, nil, "--config", "../../config.example.yaml", "--validate").Outcome()
	if status != 0 {
		t.Fatalf("--validate of config.example.yaml: status %d: %s", status, stderr)
	}
	for _, k := range config.Keys() {
		if !strings.Contains(stdout, k.Leaf()+": ") {
			t.Errorf("effective configuration lacks %s:\n%s", k.Name, stdout)
		}
	}
}

func TestBinaryUnknownEnvOnlyWarns(t *testing.T) {
	status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_FOO=1", "ELECTD_ZOOKEEPER_SERVERS=a:1", "ELECTD_ELECTION_PATH=/x"}, "--validate").Outcome()
	if status != 0 || !strings.Contains(stdout, `path: "/x"`) {
		t.Fatalf("status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if !strings.Contains(stderr, "ELECTD_FOO") || !strings.Contains(stderr, "WARN") {
		t.Errorf("no warning naming ELECTD_FOO: %q", stderr)
	}
}

func TestBinaryListenFailureExits1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	status, _, stderr := electdtest.Run(t, nil, "--zookeeper.servers", "127.0.0.1:1", "--election.path", "/x",
		"--http.addr", ln.Addr().String()).Outcome()
	if status != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "cannot listen") {
		t.Errorf("status %d, stderr %q; want 1 and one line", status, stderr)
	}
}

// A second signal exits at once, even while shutdown_grace runs. No
// ZooKeeper is needed: electd serves HTTP while it keeps reconnecting.
func TestBinarySecondSignalExitsAtOnce(t *testing.T) {
	addr := electdtest.MustFreeAddr(t)
	p := electdtest.StartArgs(t, "impatient", addr, []string{"--zookeeper.servers", "127.0.0.1:1", "--election.path", "/x",
		"--http.addr", addr, "--shutdown_grace", "20s", "--shutdown_timeout", "30s"}, nil)
	electdtest.WaitOK(t, "/healthz", 30*time.Second, p)
	p.Send(syscall.SIGTERM)
	wait.For(t, 5*time.Second, "the shutdown to start", func() bool { return p.LogHas("shutting down") })
	start := time.Now()
	p.Send(syscall.SIGTERM)
	// At once: well before the 20 s grace would have ended (the deadline is not a speed
	// test; the machine may be slow).
	if status := electdtest.ExitStatus(p.WaitExit(10 * time.Second)); status != 1 {
		t.Errorf("exit status %d after a second signal, want 1", status)
	}
	t.Logf("exited %d ms after the second signal", time.Since(start).Milliseconds())
}
