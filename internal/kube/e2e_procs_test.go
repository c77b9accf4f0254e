package kube_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// raceEnabled is set by race_test.go: electd is then built with -race too.
var raceEnabled bool

var electdBin struct {
	once sync.Once
	path string
	err  error
}

// buildElectd builds cmd/electd once per test binary.
func buildElectd(t *testing.T) string {
	t.Helper()
	electdBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "electd-kube-e2e-")
		if err != nil {
			electdBin.err = err
			return
		}
		electdBin.path = filepath.Join(dir, "electd")
		args := []string{"build", "-o", electdBin.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/electd/electd/cmd/electd")...).CombinedOutput()
		if err != nil {
			electdBin.err = fmt.Errorf("go build electd: %v\n%s", err, out)
		}
	})
	if electdBin.err != nil {
		t.Fatal(electdBin.err)
	}
	return electdBin.path
}

const adminToken = "e2e-admin"

// proc is one electd process; its pod is the API object of the same name.
type proc struct {
	t      *testing.T
	id     string
	addr   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

var httpc = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}

func startElectd(t *testing.T, bin, id string, env []string) *proc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &proc{t: t, id: id, addr: addr, log: filepath.Join(t.TempDir(), id+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_") && !strings.HasPrefix(kv, "KUBERNETES_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "ELECTD_ID="+id, "ELECTD_HTTP_ADDR="+addr, "ELECTD_ADVERTISE="+addr,
		"ELECTD_HTTP_ADMIN_TOKEN="+adminToken, "ELECTD_LOG_FORMAT=text")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.alive() {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("log of %s:\n%s", p.id, b)
		}
	})
	return p
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v: %v", p.id, sig, err)
	}
}

func (p *proc) waitExit(timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v", p.id, timeout)
	}
}

func (p *proc) do(method, path, token string) (int, string) {
	req, _ := http.NewRequest(method, "http://"+p.addr+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (p *proc) leads() bool {
	code, _ := p.do(http.MethodGet, "/healthz/leader", "")
	return code == http.StatusOK
}

func (p *proc) logHas(s string) bool {
	b, _ := os.ReadFile(p.log)
	return strings.Contains(string(b), s)
}

func (p *proc) logCount(s string) int {
	b, _ := os.ReadFile(p.log)
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
