package chaos

import (
	"bufio"
	"context"
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
	"sync"
	"syscall"
	"time"
)

// ProcOptions is one electd participant's configuration (DESIGN.md keys).
type ProcOptions struct {
	ID             string
	Path           string // election.path
	Mode           string // latch, selector, race
	OnSuspend      string // hold, step-down
	SessionTimeout time.Duration
	Term           time.Duration // selector only; 0 = hold until released
	ClaimDelay     time.Duration
	ShutdownGrace  time.Duration
	Servers        []string // what electd dials: its own proxies
}

// AdminToken is every participant's http.admin_token.
const AdminToken = "chaos-admin-token"

// Proc is one running electd process.
type Proc struct {
	Opts    ProcOptions
	Addr    string // HTTP listen address, 127.0.0.1:port
	Dir     string
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's result, set before exited is closed
	client *http.Client

	mu       sync.Mutex
	paused   bool
	expected bool // the test asked it to exit (Stop or Kill)
}

// ID is the participant's id.
func (p *Proc) ID() string { return p.Opts.ID }

func (o ProcOptions) yaml(httpAddr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %q\nadvertise: %q\n", o.ID, httpAddr)
	b.WriteString("zookeeper:\n  servers:\n")
	for _, s := range o.Servers {
		fmt.Fprintf(&b, "    - %q\n", s)
	}
	fmt.Fprintf(&b, "  session_timeout: %q\n", o.SessionTimeout.String())
	fmt.Fprintf(&b, "election:\n  path: %q\n  mode: %q\n  on_suspend: %q\n", o.Path, o.Mode, o.OnSuspend)
	if o.Mode == "selector" && o.Term > 0 {
		fmt.Fprintf(&b, "  term: %q\n", o.Term.String())
	}
	if o.ClaimDelay > 0 {
		fmt.Fprintf(&b, "  claim_delay: %q\n", o.ClaimDelay.String())
	}
	fmt.Fprintf(&b, "http:\n  addr: %q\n  admin_token: %q\n", httpAddr, AdminToken)
	b.WriteString("log:\n  level: \"debug\"\n  format: \"json\"\n")
	fmt.Fprintf(&b, "shutdown_grace: %q\nshutdown_timeout: \"10s\"\n", o.ShutdownGrace.String())
	return b.String()
}

// StartProc writes the configuration under dir and starts binary on it. The
// process's stdout and stderr go to dir/electd.log.
func StartProc(binary, dir string, opts ProcOptions) (*Proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Proc{
		Opts:    opts,
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:     dir,
		LogPath: filepath.Join(dir, "electd.log"),
		exited:  make(chan struct{}),
		client:  &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "electd.yaml")
	if err := os.WriteFile(cfg, []byte(opts.yaml(p.Addr)), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(binary, "--config", cfg)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Own process group, so a terminal's ^C does not hit it; killed if the
	// test binary dies.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start electd %s: %w", opts.ID, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Alive reports whether the process has not exited.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitErr is the process's exit status once Exited is closed.
func (p *Proc) ExitErr() error {
	<-p.exited
	return p.err
}

// Signal sends sig to the process, if it is still running.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Alive() {
		return errors.New("electd " + p.ID() + " has exited")
	}
	return syscall.Kill(p.Pid(), sig)
}

// Pause stops the process (SIGSTOP).
func (p *Proc) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
	return p.Signal(syscall.SIGSTOP)
}

// Paused reports whether the process is stopped by Pause.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Unexpected reports whether the process exited without the test asking.
func (p *Proc) Unexpected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.Alive() && !p.expected
}

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	return p.Signal(syscall.SIGCONT)
}

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() {
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
	if p.Alive() {
		_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	}
	<-p.exited
}

// Stop sends SIGTERM and waits up to timeout for the exit, then kills.
// It returns the exit status of a graceful exit.
func (p *Proc) Stop(timeout time.Duration) error {
	if !p.Alive() {
		return p.err
	}
	p.mu.Lock()
	p.expected = true
	if p.paused {
		_ = syscall.Kill(p.Pid(), syscall.SIGCONT)
		p.paused = false
	}
	p.mu.Unlock()
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("electd %s did not exit within %s of SIGTERM", p.ID(), timeout)
	}
}

// get performs one request and returns the status and body.
func (p *Proc) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// WaitHTTP blocks until GET path answers want, or ctx ends or the process exits.
func (p *Proc) WaitHTTP(ctx context.Context, path string, want int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, _, err := p.get(ctx, path)
		if err == nil && st == want {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("electd %s exited (%v) before %s answered %d; log tail:\n%s", p.ID(), p.err, path, want, p.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("electd %s: %s did not answer %d (last %d, %v): %w", p.ID(), path, want, st, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// IsLeader asks /healthz/leader once.
func (p *Proc) IsLeader(ctx context.Context) bool {
	st, _, err := p.get(ctx, "/healthz/leader")
	return err == nil && st == http.StatusOK
}

// LeaderView is the part of GET /leader the tests read.
type LeaderView struct {
	Leader *struct {
		ID           string `json:"id"`
		Node         string `json:"node"`
		Session      string `json:"session"`
		FencingToken int64  `json:"fencing_token"`
	} `json:"leader"`
	Self struct {
		ID       string `json:"id"`
		IsLeader bool   `json:"is_leader"`
		State    string `json:"state"`
		Session  string `json:"session"`
	} `json:"self"`
}

// SessionID parses a "0x..." session id; 0 when empty or malformed.
func SessionID(hex string) int64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(hex), "0x"), 16, 64)
	if err != nil {
		return 0
	}
	return int64(v)
}

// View reads GET /leader.
func (p *Proc) View(ctx context.Context) (LeaderView, error) {
	var v LeaderView
	st, body, err := p.get(ctx, "/leader")
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("electd %s: /leader answered %d with %q: %w", p.ID(), st, body, err)
	}
	return v, nil
}

// Metric returns the first sample of the named metric in /metrics.
func (p *Proc) Metric(ctx context.Context, name string) (float64, error) {
	_, body, err := p.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	return 0, fmt.Errorf("electd %s: no metric %s", p.ID(), name)
}

// SessionTimeout is the negotiated session timeout from the metrics, or the
// requested one when that is not available.
func (p *Proc) SessionTimeout(ctx context.Context) time.Duration {
	if v, err := p.Metric(ctx, "electd_zk_session_timeout_seconds"); err == nil && v > 0 {
		return time.Duration(v * float64(time.Second))
	}
	return p.Opts.SessionTimeout
}

// ProbeOn sends GET /healthz/leader on conn (an open connection to the
// process) at once, and reads the answer: used to catch the very first
// answer of a process resumed by SIGCONT.
func ProbeOn(conn net.Conn, now func() time.Duration) Sample {
	send := now()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /healthz/leader HTTP/1.1\r\nHost: electd\r\n\r\n"); err != nil {
		return Sample{Send: send, Recv: now()}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return Sample{Send: send, Recv: now()}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	s := Sample{Status: resp.StatusCode, Send: send, Recv: now()}
	var h healthBody
	if json.Unmarshal(body, &h) == nil {
		s.Token, s.Lease = h.FencingToken, int64(h.LeaseRemainingMs)
	}
	return s
}

// LogTail returns the last n lines of the process's log.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogLines returns the log lines that contain any of words.
func (p *Proc) LogLines(words ...string) []string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// BuildElectd builds ./cmd/electd of the enclosing module into dir.
func BuildElectd(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "electd")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/electd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/electd: %w\n%s", err, b)
	}
	return out, nil
}
