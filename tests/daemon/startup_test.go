package daemon

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// TestE2EStartupAgreement starts three sidecars at once on a fresh server
// (whose first writes are slow) and, the moment all three answer 200 on
// /readyz (the startup probe), reads /leader from each without waiting:
// all must name the same leader. A probe that answered before the first
// view let the app ask a sidecar whose node was still being created, and
// get "leader": null (smoke.py saw it in about one run in three).
func TestE2EStartupAgreement(t *testing.T) {
	for _, mode := range []string{"latch", "selector", "race"} {
		t.Run(mode, func(t *testing.T) {
			zk := zktest.Standalone(t)
			path := "/e2e/startup/" + mode
			var ps []*electdtest.Member
			for _, id := range []string{"p0", "p1", "p2"} {
				ps = append(ps, electdtest.StartMember(t, zk, path, id, mode))
			}
			electdtest.WaitOK(t, "/readyz", 20*time.Second, ps...)
			var first string
			for _, p := range ps {
				v, err := p.LeaderNow()
				if err != nil {
					t.Fatalf("right after /readyz answered 200: %v", err)
				}
				if v.Leader == nil || v.Leader.ID == "" {
					t.Fatalf("%s: /leader names no leader right after /readyz answered 200", p.Name)
				}
				if first == "" {
					first = v.Leader.ID
				} else if v.Leader.ID != first {
					t.Fatalf("%s: /leader names %s, %s named %s", p.Name, v.Leader.ID, ps[0].Name, first)
				}
			}
		})
	}
}

// TestE2ELivenessWithoutZooKeeper: with no ZooKeeper to reach, /healthz
// (liveness) answers 200 from its very first answer, while /readyz (the
// startup probe) and /healthz/leader answer 503 and say why.
func TestE2ELivenessWithoutZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an electd process; skipped with -short")
	}
	nobody := electdtest.MustFreeAddr(t) // nothing listens there
	p := electdtest.StartMember(t, nobody, "/e2e/nozk", "p0", "latch")
	var first int
	wait.For(t, 15*time.Second, "/healthz to answer", func() bool {
		if !p.Alive() {
			t.Fatalf("exited: %v", p.ExitErr())
		}
		first, _ = p.Fetch("/healthz")
		return first != 0
	})
	if first != http.StatusOK {
		t.Errorf("first /healthz answer without ZooKeeper = %d, want 200: liveness must not wait on ZooKeeper", first)
	}
	st, b := p.Fetch("/readyz")
	var ready api.Ready
	if err := json.Unmarshal(b, &ready); st != http.StatusServiceUnavailable || err != nil || ready.Ready || ready.Reason != "zookeeper connecting" {
		t.Errorf("/readyz without ZooKeeper = %d %s, want 503 saying zookeeper connecting", st, b)
	}
	if st, _ := p.Fetch("/healthz/leader"); st != http.StatusServiceUnavailable {
		t.Errorf("/healthz/leader = %d without ZooKeeper, want 503", st)
	}
	if st, _ := p.Fetch("/healthz"); st != http.StatusOK {
		t.Errorf("/healthz later = %d, want 200", st)
	}
}

// http.Addr with port 0 takes any free port: the startup line names the one
// bound, the API answers there, and electd run's command gets it as
// ELECTD_HTTP_ADDR, so that `electd status` run by the command finds it.
func TestE2EPortZero(t *testing.T) {
	zk := zktest.Standalone(t)
	dir := t.TempDir()
	args := append([]string{"run"}, electdtest.MemberArgs(zk, "/e2e/anyport", "anyport", "latch", "127.0.0.1:0")...)
	args = append(args, "--", "sh", "-c", `echo "$ELECTD_HTTP_ADDR" > "$EXEC_DIR/addr.tmp" && mv "$EXEC_DIR/addr.tmp" "$EXEC_DIR/addr"; exec sleep 600`)
	p := electdtest.StartArgs(t, "anyport", "127.0.0.1:0", args, []string{"EXEC_DIR=" + dir})

	var logged string
	wait.For(t, 10*time.Second, "the startup line", func() bool {
		logged = startupAddr(p)
		return logged != ""
	})
	if _, port, _ := net.SplitHostPort(logged); port == "0" || port == "" {
		t.Fatalf("startup line names %q, want the port bound", logged)
	}
	p.Addr, p.Addr = logged, logged
	electdtest.WaitOK(t, "/healthz", 30*time.Second, p)

	var child string
	wait.For(t, 20*time.Second, "the command's ELECTD_HTTP_ADDR", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "addr"))
		child = strings.TrimSpace(string(b))
		return err == nil
	})
	if child != logged {
		t.Errorf("the command got ELECTD_HTTP_ADDR=%q, want the address bound, %q", child, logged)
	}
	if status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_HTTP_ADDR=" + child}, "status").Outcome(); status != 0 {
		t.Errorf("electd status with the command's ELECTD_HTTP_ADDR: %d\n%s%s", status, stdout, stderr)
	}
}

// startupAddr is http_addr of p's "starting electd" line, "" before it.
func startupAddr(p *electdtest.Member) string {
	b, _ := os.ReadFile(p.LogPath)
	for line := range strings.Lines(string(b)) {
		var l struct {
			Msg      string `json:"msg"`
			HTTPAddr string `json:"http_addr"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "starting electd" {
			return l.HTTPAddr
		}
	}
	return ""
}
