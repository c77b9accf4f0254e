package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// binary is the electd built once by TestMain.
var binary string

const adminToken = "e2e-token"

// proc is one running electd process.
type proc struct {
	t      *testing.T
	id     string
	addr   string // 127.0.0.1:port of its HTTP API
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, once exited
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

// startElectd runs the binary with args and env (on top of the test's
// environment without ELECTD_* and POD_NAME). Its output goes to a log file
// that is printed if the test fails; it is killed at the end of the test.
func startElectd(t *testing.T, id, addr string, args, env []string) *proc {
	t.Helper()
	p := &proc{t: t, id: id, addr: addr, log: filepath.Join(t.TempDir(), id+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(cleanEnviron(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.alive() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("log of %s (%s):\n%s", p.id, p.addr, b)
		}
	})
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

func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_NAME=") {
			out = append(out, kv)
		}
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

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
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.id, sig, err)
	}
}

// wait returns the exit error once the process has exited (nil for status
// 0), failing the test if it does not exit within timeout.
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
	req, err := http.NewRequest(method, "http://"+p.addr+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (p *proc) get(path string) (int, []byte) { return p.do(http.MethodGet, path, "") }

func (p *proc) leads() bool {
	st, _ := p.get("/healthz/leader")
	return st == http.StatusOK
}

// leaderView is the part of GET /leader the tests read.
type leaderView struct {
	Leader *struct {
		ID           string `json:"id"`
		Node         string `json:"node"`
		Session      string `json:"session"`
		FencingToken int64  `json:"fencing_token"`
	} `json:"leader"`
	Self struct {
		ID       string `json:"id"`
		IsLeader bool   `json:"is_leader"`
	} `json:"self"`
}

func (p *proc) leader() (leaderView, error) {
	var v leaderView
	st, b := p.get("/leader")
	if st != http.StatusOK {
		return v, fmt.Errorf("%s: GET /leader: %d %s", p.id, st, b)
	}
	return v, json.Unmarshal(b, &v)
}

// metric returns the value of the first series of name on /metrics.
func (p *proc) metric(name string) (float64, error) {
	st, b := p.get("/metrics")
	if st != http.StatusOK {
		return 0, fmt.Errorf("%s: GET /metrics: %d", p.id, st)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s on /metrics", p.id, name)
}

// logHas reports whether the process's log holds s.
func (p *proc) logHas(s string) bool {
	b, _ := os.ReadFile(p.log)
	return strings.Contains(string(b), s)
}

// waitFor polls cond every 10ms until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oneLeader waits until exactly one of ps answers 200 on /healthz/leader
// and returns it; two at once fails the test.
func oneLeader(t *testing.T, ps []*proc, timeout time.Duration) *proc {
	t.Helper()
	var leader *proc
	waitFor(t, timeout, "exactly one leader", func() bool {
		var ls []*proc
		for _, p := range ps {
			if p.alive() && p.leads() {
				ls = append(ls, p)
			}
		}
		if len(ls) > 1 {
			t.Fatalf("%s and %s both answer 200 on /healthz/leader", ls[0].id, ls[1].id)
		}
		if len(ls) != 1 {
			return false
		}
		// Settled: every live participant names it, so what a test does
		// next starts from one agreed view.
		for _, p := range ps {
			if !p.alive() {
				continue
			}
			if v, err := p.leader(); err != nil || v.Leader == nil || v.Leader.ID != ls[0].id {
				return false
			}
		}
		leader = ls[0]
		return true
	})
	return leader
}

func waitHealthy(t *testing.T, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		waitFor(t, 15*time.Second, p.id+" /healthz", func() bool {
			if !p.alive() {
				t.Fatalf("%s exited: %v", p.id, p.err)
			}
			st, _ := p.get("/healthz")
			return st == http.StatusOK
		})
	}
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
