package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/electd/electd/tests/harness/proctest"
)

// stopTimeout is how long Stop waits after SIGTERM before it kills the server.
const stopTimeout = 10 * time.Second

// Member is one ZooKeeper server of an Ensemble. Its config, ports and data dir stay the
// same across restarts. All methods are safe for concurrent use.
type Member struct {
	e        *Ensemble
	id       int
	client   *reservedPort
	secure   *reservedPort // Options.TLS only
	quorum   *reservedPort // nil for a standalone server
	election *reservedPort // nil for a standalone server
	dir      string
	cfgPath  string
	logPath  string

	opMu sync.Mutex // serialises Start, Stop and Kill

	mu   sync.Mutex
	proc *process // the current or last JVM; nil once stopped or killed
	want bool     // started and not stopped or killed since: an exit is a crash
}

// process is one run of a server JVM (tests/harness/proctest).
type process struct {
	*proctest.Process
	logOffset int64 // where this run's output starts in the log file
}

// ID returns the server id (1-based; 1 for a standalone server).
func (m *Member) ID() int { return m.id }

// Addr returns the client address, "127.0.0.1:<client port>".
func (m *Member) Addr() string { return m.client.addr() }

// LogPath returns the server's log file (its stdout and stderr, every run appended), for
// failure messages.
func (m *Member) LogPath() string { return m.logPath }

// Running reports whether the server's JVM is running.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && !m.proc.Exited()
}

// Start starts the server again with the same config, ports and data dir. It returns once
// the JVM runs; use Ensemble.WaitReady to wait until it serves. Starting a running member
// does nothing.
func (m *Member) Start() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if m.e.isClosed() {
		return fmt.Errorf("zktest: server %d: ensemble is closed", m.id)
	}
	if m.Running() {
		return nil
	}
	logf, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zktest: server %d: %w", m.id, err)
	}
	defer logf.Close()
	off, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "==== zktest: starting server %d at %s ====\n", m.id, time.Now().Format(time.RFC3339Nano))

	cmd := exec.Command(m.e.java, m.e.jvmArgs(m.cfgPath)...)
	cmd.Dir = m.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = proctest.Group() // a signal reaches the whole JVM
	m.unholdPorts()
	run, err := proctest.Run(cmd, nil)
	if err != nil {
		m.holdPorts()
		return fmt.Errorf("zktest: server %d: start java: %w", m.id, err)
	}
	p := &process{Process: run, logOffset: off}
	m.mu.Lock()
	m.proc = p
	m.want = true
	m.mu.Unlock()
	return nil
}

// Stop sends SIGTERM to the server and waits for it to exit, killing it after 10 s.
// Stopping a member that is not running does nothing.
func (m *Member) Stop() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	p := m.current()
	if p == nil {
		return nil
	}
	err := signalGroup(p, syscall.SIGTERM)
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-p.Done():
	case <-t.C:
		err = errors.Join(err, signalGroup(p, syscall.SIGKILL))
		<-p.Done()
	case <-m.e.closing:
		_ = signalGroup(p, syscall.SIGKILL)
		<-p.Done()
	}
	m.afterExit(p)
	if err != nil {
		return fmt.Errorf("zktest: stop server %d: %w", m.id, err)
	}
	return nil
}

// Kill sends SIGKILL to the server (its whole process group) and waits for it to exit.
func (m *Member) Kill() {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.killLocked()
}

func (m *Member) killLocked() {
	p := m.current()
	if p == nil {
		return
	}
	_ = signalGroup(p, syscall.SIGKILL)
	<-p.Done()
	m.afterExit(p)
}

// current returns the process to stop, marking the member as intentionally stopped.
func (m *Member) current() *process {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.want = false
	return m.proc
}

// afterExit forgets an exited process and holds the ports again while nothing listens.
func (m *Member) afterExit(p *process) {
	m.mu.Lock()
	if m.proc == p {
		m.proc = nil
	}
	m.mu.Unlock()
	if !m.e.isClosed() {
		m.holdPorts()
	}
}

func signalGroup(p *process, sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	pid := p.Pid()
	err := syscall.Kill(-pid, sig) // the JVM leads its own process group (Setpgid)
	if errors.Is(err, syscall.ESRCH) {
		err = syscall.Kill(pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func (m *Member) ports() []*reservedPort {
	out := []*reservedPort{m.client}
	if m.secure != nil {
		out = append(out, m.secure)
	}
	if m.quorum != nil {
		out = append(out, m.quorum, m.election)
	}
	return out
}

func (m *Member) unholdPorts() {
	for _, p := range m.ports() {
		p.unhold()
	}
}

func (m *Member) holdPorts() {
	for _, p := range m.ports() {
		p.hold()
	}
}

// FourLetter sends a four-letter-word command ("srvr", "mntr", "cons", "ruok", ...) to the
// client port and returns the whole answer.
func (m *Member) FourLetter(cmd string) (string, error) {
	return fourLetter(m.Addr(), cmd)
}

func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if len(b) > 0 {
		return string(b), nil // the server closes (sometimes with a reset) after answering
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return "", err
}

// Mode returns the server's mode from srvr: "leader", "follower", "standalone" (or
// "observer"), or "" when it does not answer or is not serving (e.g. during an election).
func (m *Member) Mode() string {
	out, err := m.FourLetter("srvr")
	if err != nil {
		return ""
	}
	return parseMode(out)
}

func parseMode(srvr string) string { return srvrField(srvr, "Mode") }

// srvrField returns the value of field ("Mode", "Zxid", ...) in a srvr
// answer, "" when it has none.
func srvrField(srvr, field string) string {
	for _, line := range strings.Split(srvr, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// exitError describes a run that ended without Stop or Kill.
func (m *Member) exitError() error {
	m.mu.Lock()
	p, want := m.proc, m.want
	m.mu.Unlock()
	if p == nil || !want || !p.Exited() {
		return nil
	}
	status := p.Err()
	err := fmt.Errorf("zktest: server %d (%s) exited unexpectedly (%v); log %s:\n%s",
		m.id, m.Addr(), status, m.logPath, m.logTail(40))
	if m.portCollision() {
		err = fmt.Errorf("%w: %w", errPortCollision, err)
	}
	return err
}

var errPortCollision = errors.New("zktest: port already in use")

// portCollision reports whether the current run's log shows a port that was taken.
func (m *Member) portCollision() bool {
	b := m.runLog(256 << 10)
	return bytes.Contains(b, []byte("Address already in use"))
}

// runLog returns up to max trailing bytes of the current (or last) run's output.
func (m *Member) runLog(max int64) []byte {
	m.mu.Lock()
	var off int64
	if m.proc != nil {
		off = m.proc.logOffset
	}
	m.mu.Unlock()
	f, err := os.Open(m.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	if st.Size()-off > max {
		off = st.Size() - max
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return b
}

// logTail returns the last n lines of the current (or last) run's log.
func (m *Member) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(string(m.runLog(64<<10)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (m *Member) String() string {
	return "server " + strconv.Itoa(m.id) + " (" + m.Addr() + ")"
}
