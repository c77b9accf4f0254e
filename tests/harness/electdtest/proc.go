package electdtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/freeport"
	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/wait"
)

// Spec says how to start one electd process.
type Spec struct {
	// Name names the process in errors and its files (<Dir>/<Name>.yaml and .log);
	// default Config.ID, else "electd".
	Name string
	// Config, when set, is written to <Dir>/<Name>.yaml and passed as --config.
	Config *Config
	// Args follow --config on the command line (flags override the file).
	Args []string
	// Env is added to the caller's environment, from which every ELECTD_* variable and
	// POD_NAME are removed: a developer's shell must not reconfigure the tests.
	Env []string
	// Dir holds the process's files. Start defaults it to a t.TempDir(); Launch requires it.
	Dir string
	// Addr is where the process serves HTTP. When empty a free loopback port is chosen
	// and, if Config is set and its HTTPAddr empty, written there.
	Addr string
	// Output, when set, receives the process's stdout and stderr instead of its log
	// file (a pipe a test reads, or stalls); the caller owns it.
	Output *os.File
	// FreshLog empties the log file first; by default a process started again under
	// the same name and Dir appends to it.
	FreshLog bool
}

// Proc is one running (or exited) electd process.
type Proc struct {
	Name       string
	Addr       string // 127.0.0.1:port of its HTTP API
	Dir        string
	LogPath    string
	ConfigPath string // "" without a Config

	proc   *proctest.Process
	client *http.Client

	mu       sync.Mutex
	paused   bool
	expected bool // asked to exit (Stop, Kill or a signal sent through Signal)
}

// Start runs electd (Binary(t): skipped in -short mode) as s says. The process is
// killed when the test ends, and its log printed if the test failed.
func Start(t testing.TB, s Spec) *Proc {
	t.Helper()
	return StartProgram(t, Binary(t), s)
}

// StartProgram runs another program the tests need beside electd (an application
// behind its proxy, in any language) as Start runs electd: Spec.Args are its
// arguments, Spec.Config must be nil, and Spec.Addr is a free loopback address the
// program may be told to listen on. It is killed when the test ends, and its log
// printed if the test failed.
func StartProgram(t testing.TB, bin string, s Spec) *Proc {
	t.Helper()
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	p, err := Launch(bin, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of %s (%s, %s, %v), last 200 lines:\n%s", p.Name, p.Addr, p.LogPath, p.proc.Err(), p.LogTail(200))
		}
	})
	return p
}

// Launch starts bin as s says, for callers without a testing.TB (the demo). The caller
// must end the process (Stop or Kill).
func Launch(bin string, s Spec) (*Proc, error) {
	if s.Dir == "" {
		return nil, errors.New("electdtest: Launch needs Spec.Dir")
	}
	name := s.Name
	if name == "" && s.Config != nil {
		name = s.Config.ID
	}
	if name == "" {
		name = "electd"
	}
	addr := s.Addr
	if addr == "" {
		var err error
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	p := &Proc{
		Name:    name,
		Addr:    addr,
		Dir:     s.Dir,
		LogPath: filepath.Join(s.Dir, name+".log"),
		client:  &http.Client{Transport: &http.Transport{Proxy: nil}},
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("electdtest: %w", err)
	}
	var args []string
	if s.Config != nil {
		cfg := *s.Config
		if cfg.HTTPAddr == "" {
			cfg.HTTPAddr = addr
		}
		if cfg.ProxyListen != "" && cfg.ProxyPeer == "" {
			// proxy.peer_listen defaults to proxy.listen's port plus one,
			// which another test's process may hold by now.
			var err error
			if cfg.ProxyPeer, err = FreeAddr(); err != nil {
				return nil, err
			}
		}
		if cfg.ProxyListen != "" && cfg.ProxyPeerKey == "" {
			cfg.ProxyPeerKey = PeerKey(cfg.Path)
		}
		p.ConfigPath = filepath.Join(s.Dir, name+".yaml")
		if err := os.WriteFile(p.ConfigPath, cfg.YAML(), 0o600); err != nil {
			return nil, fmt.Errorf("electdtest: %w", err)
		}
		args = append(args, "--config", p.ConfigPath)
	}
	args = append(args, s.Args...)
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if s.FreshLog {
		flags |= os.O_TRUNC
	}
	logf, err := os.OpenFile(p.LogPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("electdtest: %w", err)
	}
	out := logf
	if s.Output != nil {
		out = s.Output
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(CleanEnviron(), s.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own: a terminal's Ctrl-C reaches the test or
	// demo, which then stops it in order, and not electd directly.
	cmd.SysProcAttr = proctest.Group()
	if p.proc, err = proctest.Run(cmd, func() { logf.Close() }); err != nil {
		logf.Close()
		return nil, fmt.Errorf("electdtest: start %s: %w", name, err)
	}
	return p, nil
}

// keySalt makes PeerKey random for each test process.
var keySalt = rand.Text()

// PeerKey is the proxy.peer_key of the election at path: random for each
// test process, shared by every participant of that election that the
// process starts, and another for each other election.
func PeerKey(path string) string {
	sum := sha256.Sum256([]byte(keySalt + "\x00" + path))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// CleanEnviron is the caller's environment without what electd reads from it:
// ELECTD_*, POD_* (the downward API) and KUBERNETES_* (the API server).
func CleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_") && !strings.HasPrefix(kv, "KUBERNETES_") {
			out = append(out, kv)
		}
	}
	return out
}

// FreeAddr returns a loopback address free now, drawn below the kernel's ephemeral range
// and locked for this process's life against other test binaries (tests/harness/freeport), never
// returned before in this process.
func FreeAddr() (string, error) { return freeport.Addrs(1) }

// FreeAddrPair is FreeAddr for a port and the next one: the forwarding proxy's peer port
// is proxy.listen's plus one unless set otherwise.
func FreeAddrPair() (string, error) { return freeport.Addrs(2) }

// Pid is the process id.
func (p *Proc) Pid() int { return p.proc.Pid() }

// Alive reports whether the process has not exited.
func (p *Proc) Alive() bool { return !p.proc.Exited() }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.proc.Done() }

// ExitErr waits for the exit and returns cmd.Wait's error: nil for status 0.
func (p *Proc) ExitErr() error {
	<-p.proc.Done()
	return p.proc.Err()
}

// Wait waits up to timeout for the exit. ok is false if the process still runs.
func (p *Proc) Wait(timeout time.Duration) (err error, ok bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.proc.Done():
		return p.proc.Err(), true
	case <-t.C:
		return nil, false
	}
}

// ExitStatus is the exit status an exec error stands for: 0 for nil, the status of an
// exit, -1 for anything else (a signal, a failure to start).
func ExitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		return -1
	}
}

// Signal sends sig to the process, if it still runs. SIGTERM, SIGINT, SIGHUP and SIGKILL
// mark the exit that follows as asked for (see Unexpected).
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Alive() {
		return fmt.Errorf("electdtest: %s has exited (%v)", p.Name, p.proc.Err())
	}
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGKILL:
		p.mu.Lock()
		p.expected = true
		p.mu.Unlock()
	}
	return p.proc.Cmd.Process.Signal(sig)
}

// Pause stops the process (SIGSTOP).
func (p *Proc) Pause() error {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	return p.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	return p.Signal(syscall.SIGCONT)
}

// Paused reports whether the process is stopped by Pause.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Unexpected reports whether the process exited without being asked to.
func (p *Proc) Unexpected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.Alive() && !p.expected
}

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() {
	if p.Alive() {
		_ = p.Signal(syscall.SIGKILL)
	}
	<-p.proc.Done()
}

// Stop sends SIGTERM (continuing a paused process first) and waits up to timeout for the
// exit, then kills it. It returns the exit error of a graceful exit.
func (p *Proc) Stop(timeout time.Duration) error {
	if !p.Alive() {
		return p.proc.Err()
	}
	if p.Paused() {
		_ = p.Resume()
	}
	_ = p.Signal(syscall.SIGTERM)
	if err, ok := p.Wait(timeout); ok {
		return err
	}
	p.Kill()
	return fmt.Errorf("electdtest: %s did not exit within %s of SIGTERM", p.Name, timeout)
}

// LogTail returns the last n lines of the process's log.
func (p *Proc) LogTail(n int) string { return TailFile(p.LogPath, n) }

// TailFile returns the last n lines of the file at path, or why it cannot
// be read: for the logs a failing test prints.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
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

// LogHas reports whether the process's log holds s.
func (p *Proc) LogHas(s string) bool {
	b, _ := os.ReadFile(p.LogPath)
	return strings.Contains(string(b), s)
}

// LogHasWithin reports whether the process's log holds s within d. A running
// electd writes its log through a buffer, so a line logged before an answer
// the test has seen may reach the file a little after it; after the process
// exited, LogHas is enough.
func (p *Proc) LogHasWithin(s string, d time.Duration) bool {
	return wait.Until(context.Background(), d, 20*time.Millisecond, func() error {
		if p.LogHas(s) {
			return nil
		}
		return errors.New("not in the log")
	}) == nil
}
