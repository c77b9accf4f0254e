package kube_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
)

// buildElectd is the electd of this test run (built once for all packages).
func buildElectd(t *testing.T) string {
	t.Helper()
	return electdtest.Binary(t)
}

const adminToken = "e2e-admin"

// proc is one electd process (tests/electdtest); its pod is the API
// object of the same name.
type proc struct {
	*electdtest.Proc
	t    *testing.T
	id   string
	addr string
}

// startElectd runs electd as pod id: configured by env on top of its id,
// HTTP address and admin token.
func startElectd(t *testing.T, bin, id string, env []string) *proc {
	t.Helper()
	addr, err := electdtest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env = append([]string{"ELECTD_ID=" + id, "ELECTD_HTTP_ADDR=" + addr, "ELECTD_ADVERTISE=" + addr,
		"ELECTD_HTTP_ADMIN_TOKEN=" + adminToken, "ELECTD_LOG_FORMAT=text"}, env...)
	ep, err := electdtest.Launch(bin, electdtest.Spec{Name: id, Addr: addr, Env: env, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ep.Kill()
		if t.Failed() {
			t.Logf("log of %s:\n%s", id, ep.LogTail(400))
		}
	})
	return &proc{Proc: ep, t: t, id: id, addr: addr}
}

func (p *proc) alive() bool { return p.Alive() }

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v: %v", p.id, sig, err)
	}
}

func (p *proc) waitExit(timeout time.Duration) {
	p.t.Helper()
	if _, ok := p.Wait(timeout); !ok {
		p.t.Fatalf("%s did not exit within %v", p.id, timeout)
	}
}

func (p *proc) do(method, path, token string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	code, body, err := p.Do(ctx, method, path, token)
	if err != nil {
		return 0, err.Error()
	}
	return code, string(body)
}

func (p *proc) leads() bool {
	code, _ := p.do(http.MethodGet, "/healthz/leader", "")
	return code == http.StatusOK
}

func (p *proc) logHas(s string) bool { return p.LogHas(s) }

func (p *proc) logCount(s string) int {
	b, _ := os.ReadFile(p.LogPath)
	return strings.Count(string(b), s)
}

// waitFor polls cond every 20ms until it holds, failing after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// leaderAmong waits until exactly one live process answers 200 on
// /healthz/leader and returns it.
func leaderAmong(t *testing.T, ps []*proc, timeout time.Duration) *proc {
	t.Helper()
	var l *proc
	waitFor(t, timeout, "exactly one leader", func() bool {
		var ls []*proc
		for _, p := range ps {
			if p.alive() && p.leads() {
				ls = append(ls, p)
			}
		}
		if len(ls) > 1 {
			t.Fatalf("%s and %s both lead", ls[0].id, ls[1].id)
		}
		if len(ls) == 1 {
			l = ls[0]
		}
		return l != nil
	})
	return l
}
