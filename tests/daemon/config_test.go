package daemon

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/zktest"
)

// bash runs script with bash, $ELECTD naming the electd binary and $D the
// test's directory, and returns its exit status and output.
func bash(t *testing.T, dir, script string, env ...string) (status int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(electdtest.CleanEnviron(), append([]string{"ELECTD=" + electdtest.Binary(t), "D=" + dir}, env...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	p, err := proctest.Run(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if ctx.Err() != nil {
		t.Fatalf("bash -c %q still ran after a minute; stderr:\n%s", script, e.String())
	}
	return electdtest.ExitStatus(p.Err()), o.String(), e.String()
}

// Issue 33: the configuration from a pipe, as a container's entrypoint
// templates it: /dev/stdin from a file and from a pipe, a process
// substitution, a named FIFO whose writer comes after electd opened it;
// the bound holds while reading, and a directory or a file electd cannot
// open is refused as before.
func TestConfigFromAPipe(t *testing.T) {
	dir := t.TempDir()
	cfg := "zookeeper:\n  servers: [127.0.0.1:2181]\nelection:\n  path: /piped\nid: from-a-pipe\n"
	if err := os.WriteFile(filepath.Join(dir, "electd.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, script string }{
		{"/dev/stdin from a file", `"$ELECTD" --config /dev/stdin --validate < "$D/electd.yaml"`},
		{"/dev/stdin from a pipe", `cat "$D/electd.yaml" | "$ELECTD" --config /dev/stdin --validate`},
		{"a process substitution", `"$ELECTD" --config <(cat "$D/electd.yaml") --validate`},
		{"a named FIFO written after the open", `mkfifo "$D/fifo" && { sleep 0.3; cat "$D/electd.yaml" > "$D/fifo"; } &
			"$ELECTD" --config "$D/fifo" --validate; s=$?; wait; rm -f "$D/fifo"; exit $s`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, stdout, stderr := bash(t, dir, c.script)
			if status != 0 || !strings.Contains(stdout, "id: \"from-a-pipe\"") || !strings.Contains(stdout, "path: \"/piped\"") {
				t.Errorf("status %d, stderr %q, stdout:\n%s\nwant 0 and the piped id and path", status, stderr, stdout)
			}
		})
	}
	for _, c := range []struct{ name, script, want string }{
		{"a stream past 64 KiB", `"$ELECTD" --config <(head -c 70000 /dev/zero | tr '\0' '#') --validate`, "has more than 64 KiB"},
		{"/dev/zero", `"$ELECTD" --config /dev/zero --validate`, "has more than 64 KiB"},
		{"a directory", `"$ELECTD" --config "$D" --validate`, "is a directory, not a regular file, a FIFO or a character device"},
		{"a missing file", `"$ELECTD" --config "$D/none.yaml" --validate`, "no such file or directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, stdout, stderr := bash(t, dir, c.script)
			if status != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
				!strings.HasPrefix(stderr, "electd: config: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("status %d, stdout %q, stderr %q; want 2 and one line: electd: config: ...%s", status, stdout, stderr, c.want)
			}
		})
	}
	t.Run("a file electd cannot read", func(t *testing.T) { checkUnreadable(t, cfg) })
}

// checkUnreadable runs electd on a configuration file it has no
// permission to read: as nobody (uid 65534) when the test runs as root,
// which reads anything, on a copy of the binary nobody can run.
func checkUnreadable(t *testing.T, cfg string) {
	// Not t.TempDir: its parent is closed to other users.
	dir, err := os.MkdirTemp("", "electd-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "electd.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := electdtest.Binary(t)
	cmd := exec.Command(bin, "--config", file, "--validate")
	if os.Getuid() == 0 {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "electd")
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(bin, "--config", file, "--validate")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(file, 0); err != nil {
		t.Fatal(err)
	}
	cmd.Env = electdtest.CleanEnviron()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if status := electdtest.ExitStatus(err); status != 2 || !strings.HasPrefix(e.String(), "electd: config: ") ||
		!strings.Contains(e.String(), "permission denied") {
		t.Errorf("status %d (%v), stdout %q, stderr %q; want 2: electd: config: ...permission denied", status, err, o.String(), e.String())
	}
}

// The daemon itself runs on a configuration rendered into a process
// substitution, as `electd --config <(envsubst < electd.yaml.tmpl)` does
// in an entrypoint, leads, and shuts down on SIGTERM with status 0.
func TestDaemonOnAPipedConfig(t *testing.T) {
	zk := zktest.Standalone(t)
	dir := t.TempDir()
	tmpl := "zookeeper:\n  servers: [@ZK@]\n  session_timeout: 4s\nelection:\n  path: /piped/daemon\nid: @ID@\nhttp:\n  addr: @ADDR@\n"
	if err := os.WriteFile(filepath.Join(dir, "electd.yaml.tmpl"), []byte(tmpl), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := electdtest.MustFreeAddr(t)
	script := `exec "$ELECTD" --config <(sed -e "s/@ZK@/$ZK/" -e "s/@ID@/$ID/" -e "s/@ADDR@/$ADDR/" "$D/electd.yaml.tmpl") --log.format text`
	p, err := electdtest.Launch("/bin/bash", electdtest.Spec{Name: "templated", Addr: addr, Dir: dir,
		Args: []string{"-c", script},
		Env:  []string{"ELECTD=" + electdtest.Binary(t), "D=" + dir, "ZK=" + zk, "ID=templated", "ADDR=" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	m := electdtest.Bind(t, p)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of electd:\n%s", p.LogTail(100))
		}
	})
	if l := electdtest.OneLeader(t, []*electdtest.Member{m}, 30*time.Second); l.Name != "templated" {
		t.Fatalf("%s leads", l.Name)
	}
	if v, err := m.LeaderNow(); err != nil || v.LeaderID() != "templated" {
		t.Fatalf("/leader: %+v, %v; want the id the template was rendered with", v, err)
	}
	m.Send(syscall.SIGTERM)
	if err := m.WaitExit(15 * time.Second); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
}
