package main

// The helpers the end-to-end tests of this package share, over tests/electdtest
// (which builds electd once per run, skips in -short mode and prints a process's log
// when its test fails).

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

const adminToken = "e2e-token"

// The exit statuses `electd status` and `electd release` document in their
// --help, written out here on purpose: the tests check that contract.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUnreachable = 3
)

// requestTimeout bounds one request of the helpers below.
const requestTimeout = 5 * time.Second

// proc is one running electd process.
type proc struct {
	*electdtest.Proc
	t      *testing.T
	id     string
	addr   string // 127.0.0.1:port of its HTTP API
	exited chan struct{}
	err    error // the exit error, set before exited is closed
}

// leaderView is the part of GET /leader the tests read.
type leaderView = electdtest.LeaderView

// startElectd runs electd with args and env (on top of the test's environment without
// ELECTD_* and POD_NAME); addr is where it serves HTTP (args say so). Its output goes to
// a log file that is printed if the test fails; it is killed at the end of the test.
func startElectd(t *testing.T, id, addr string, args, env []string) *proc {
	t.Helper()
	ep := electdtest.Start(t, electdtest.Spec{Name: id, Addr: addr, Args: args, Env: env})
	p := &proc{Proc: ep, t: t, id: id, addr: addr, exited: make(chan struct{})}
	go func() {
		p.err = ep.ExitErr()
		close(p.exited)
	}()
	return p
}

// startMember runs one participant configured by flags.
func startMember(t *testing.T, zk, path, id, mode string, extra ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	args := []string{
		"--id", id, "--advertise", addr, "--zookeeper.servers", zk, "--zookeeper.session_timeout", "4s",
		"--election.path", path, "--election.mode", mode, "--http.addr", addr,
		"--http.admin_token", adminToken, "--log.level", "debug",
	}
	return startElectd(t, id, addr, append(args, extra...), nil)
}

// startZK starts a standalone ZooKeeper for the test (skipped in -short mode).
func startZK(t *testing.T) string {
	t.Helper()
	return zktest.Start(t, zktest.Options{Servers: 1, TickTime: 500 * time.Millisecond}).ConnectString()
}

// runBinary runs electd to completion.
func runBinary(t *testing.T, env []string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	r := electdtest.Run(t, env, args...)
	return r.Status, r.Stdout, r.Stderr
}

func cleanEnviron() []string { return electdtest.CleanEnviron() }

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := electdtest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func exitStatus(err error) int { return electdtest.ExitStatus(err) }

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.id, sig, err)
	}
}

// wait returns the exit error once the process has exited (nil for status 0), failing
// the test if it does not exit within timeout.
func (p *proc) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v", p.id, timeout)
		return nil
	}
}

// do sends one request; status 0 means no answer.
func (p *proc) do(method, path, token string) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	st, b, err := p.Do(ctx, method, path, token)
	if err != nil {
		return 0, nil
	}
	return st, b
}

func (p *proc) get(path string) (int, []byte) { return p.do(http.MethodGet, path, "") }

func (p *proc) leads() bool {
	st, _ := p.get("/healthz/leader")
	return st == http.StatusOK
}

func (p *proc) leader() (leaderView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return p.View(ctx)
}

// metric returns the value of name on /metrics (parsed by expfmt).
func (p *proc) metric(name string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return p.Metric(ctx, name)
}

func (p *proc) logHas(s string) bool { return p.LogHas(s) }

// waitFor polls cond every 10ms until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait.For(t, timeout, what, cond)
}

// oneLeader waits until exactly one of ps answers 200 on /healthz/leader and every live
// one names it on /leader, and returns it. Two leaders at once fail the test: one that
// answered 200 and, asked again after another did, still answers 200 with the same
// fencing token (what two questions one after the other can prove).
func oneLeader(t *testing.T, ps []*proc, timeout time.Duration) *proc {
	t.Helper()
	var leader *proc
	waitFor(t, timeout, "exactly one leader", func() bool {
		var ls []*proc
		var tokens []int64
		for _, p := range ps {
			if h, ok := p.health(); ok && h.IsLeader {
				ls = append(ls, p)
				tokens = append(tokens, h.FencingToken)
			}
		}
		if len(ls) > 1 {
			if h, ok := ls[0].health(); ok && h.IsLeader && h.FencingToken == tokens[0] {
				t.Fatalf("%s (token %d) and %s (token %d) lead at once", ls[0].id, tokens[0], ls[1].id, tokens[1])
			}
			return false
		}
		if len(ls) != 1 {
			return false
		}
		// Settled: every live participant names it, so what a test does next starts
		// from one agreed view.
		for _, p := range ps {
			if !p.alive() {
				continue
			}
			if v, err := p.leader(); err != nil || v.LeaderID() != ls[0].id {
				return false
			}
		}
		leader = ls[0]
		return true
	})
	return leader
}

// health asks /healthz/leader of a live process once; ok is false without an answer.
func (p *proc) health() (electdtest.Health, bool) {
	if !p.alive() {
		return electdtest.Health{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	h, err := p.LeaderHealth(ctx)
	return h, err == nil
}

// waitHealthy waits until each of ps answers 200 on /healthz.
func waitHealthy(t *testing.T, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		waitFor(t, 30*time.Second, p.id+" /healthz", func() bool {
			if !p.alive() {
				t.Fatalf("%s exited: %v", p.id, p.err)
			}
			st, _ := p.get("/healthz")
			return st == http.StatusOK
		})
	}
}
