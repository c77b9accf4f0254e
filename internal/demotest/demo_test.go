//go:build linux || darwin

package demotest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// demoTimeout bounds the whole demo: building electd (cold cache), starting
// ZooKeeper and three sidecars, an election, a handoff and a release. The
// demo's own deadlines are far shorter; this only stops a hung run.
const demoTimeout = 6 * time.Minute

// What a successful run prints; the demo exits non-zero on its own when a
// step fails, and these make sure it also said what it did.
var (
	oneLeaderRE = regexp.MustCompile(`(?m)^==> one leader: (web-\d) \(all 3 sidecars agree`)
	handoffRE   = regexp.MustCompile(`(?m)^==> handoff: (web-\d) leads (\d+) ms after SIGTERM to (web-\d) \(by (web-\d)'s log: elected (\d+) ms after it; the rest is curl polling\)$`)
	releaseRE   = regexp.MustCompile(`(?m)^==> release: (web-\d) answered 202; (web-\d) leads \d+ ms later`)
	okRE        = regexp.MustCompile(`(?m)^demo: OK`)
)

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three electd processes; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	root := repoRoot(t)

	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "scripts/demo.sh", "--ci")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DEMO_CI=1", "NO_COLOR=1")
	cmd.Stdin = nil // no terminal: the demo must not wait for Enter
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// The demo starts java and electd in its own process group; on timeout
	// kill the group, not only bash, so nothing outlives the test. SIGTERM
	// first lets the demo's trap clean up its temporary directory.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second

	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers, if any
	}
	output := out.String()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("demo did not finish within %v; output:\n%s", demoTimeout, output)
	}
	if err != nil {
		t.Fatalf("bash scripts/demo.sh --ci: %v; output:\n%s", err, output)
	}
	t.Logf("demo passed in %v", time.Since(start).Round(time.Millisecond))

	m := oneLeaderRE.FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("output shows no single leader agreed by all three sidecars:\n%s", output)
	}
	first := m[1]

	h := handoffRE.FindStringSubmatch(output)
	if h == nil {
		t.Fatalf("output shows no handoff:\n%s", output)
	}
	if got, want := h[3], first; got != want {
		t.Errorf("handoff stopped %s, want the first leader %s", got, want)
	}
	if h[1] == first {
		t.Errorf("handoff went to %s, the leader that was stopped", h[1])
	}
	if ms, _ := strconv.Atoi(h[2]); ms > 3000 {
		t.Errorf("handoff took %d ms; a graceful release should take milliseconds", ms)
	}
	// The figure from electd's own log: the new leader's, and no later than
	// the demo saw it by polling.
	if h[4] != h[1] {
		t.Errorf("handoff note quotes %s's log, want the new leader %s's", h[4], h[1])
	}
	if logged, _ := strconv.Atoi(h[5]); logged > 3000 || logged > mustAtoi(t, h[2]) {
		t.Errorf("by the log the new leader was elected %d ms after SIGTERM, polled %s ms", logged, h[2])
	}

	r := releaseRE.FindStringSubmatch(output)
	if r == nil {
		t.Fatalf("output shows no release:\n%s", output)
	}
	if got, want := r[1], h[1]; got != want {
		t.Errorf("release asked %s, want the leader after the handoff %s", got, want)
	}
	if r[2] == r[1] || r[2] == first {
		t.Errorf("after the release %s leads, want the one remaining follower", r[2])
	}
	if !okRE.MatchString(output) {
		t.Errorf("output lacks the final 'demo: OK' line:\n%s", output)
	}
}

// repoRoot walks up from the test's directory to the one holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "demo.sh")); err != nil {
				t.Fatalf("found go.mod in %s but no scripts/demo.sh", dir)
			}
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
