// Package curatortest runs real Apache Curator 5.4 election participants (LeaderLatch and
// LeaderSelector) in their own JVMs, so tests can check that electd and Curator clients on the
// same ZooKeeper path see each other and agree on one leader.
//
// Each Participant is one JVM running testdata/CuratorParticipant.java, driven over a line
// protocol on its stdin and stdout (see that file). The JVM takes about a second to start and
// join: Start returns once the participant is listed among its own election's participants.
//
// A missing java, javac or jar is a test failure naming the apt package to install, never a
// skip; -short mode, which runs the unit tests alone, skips (zktest.Require).
package curatortest

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// Modes of a Participant.
const (
	Latch    = "latch"    // Curator's LeaderLatch
	Selector = "selector" // Curator's LeaderSelector with autoRequeue
)

// Timeouts.
const (
	ReadyTimeout   = 30 * time.Second // Start: JVM start, connect and join
	CommandTimeout = 10 * time.Second // one status/leading/release round-trip
	CloseTimeout   = 15 * time.Second // Close: until the JVM has exited
	killTimeout    = 10 * time.Second
)

//go:embed testdata/CuratorParticipant.java
var javaSource []byte

const mainClass = "CuratorParticipant"

var compiled struct {
	once sync.Once
	cp   string // Curator classpath
	dir  string // cached class files
	took time.Duration
	err  error
}

// Compile compiles CuratorParticipant.java against Curator 5.4 (zktest.CompileCurator, cached
// across runs) and returns the directory holding its class files.
func Compile(t testing.TB) (classDir string) {
	t.Helper()
	zktest.Require(t)
	_, dir := compile()
	if err := compiled.err; err != nil {
		t.Fatal(err)
	}
	return dir
}

// compile runs javac at most once per test binary; compiled.err says whether it worked.
func compile() (cp, dir string) {
	compiled.once.Do(func() {
		start := time.Now()
		compiled.cp, compiled.dir, compiled.err = compileCached()
		compiled.took = time.Since(start)
	})
	return compiled.cp, compiled.dir
}

func compileCached() (cp, dir string, err error) {
	cp, dir, err = zktest.CompileCurator(mainClass, javaSource)
	if err != nil {
		return "", "", fmt.Errorf("curatortest: %w", err)
	}
	return cp, dir, nil
}

// Status is one answer to the "status" command: Curator's hasLeadership(),
// getLeader().getId() (empty when there is none) and getParticipants() ids in queue order.
type Status struct {
	IsLeader     bool
	Leader       string
	Participants []string
}

func (s Status) String() string {
	l := s.Leader
	if l == "" {
		l = "-"
	}
	return fmt.Sprintf("isLeader=%v leader=%s participants=[%s]", s.IsLeader, l, strings.Join(s.Participants, ","))
}

// Event is a change of this participant's leadership, as the JVM reported it
// (LeaderLatchListener; selector: entering and leaving takeLeadership).
type Event struct {
	Leader bool      // true: became leader; false: stopped leading
	At     time.Time // when the Go side read the line
}

func (e Event) String() string {
	if e.Leader {
		return "leader@" + e.At.Format("15:04:05.000")
	}
	return "notleader@" + e.At.Format("15:04:05.000")
}

// Participant is one Curator election participant in its own JVM.
type Participant struct {
	ID, Path, Mode string
	Term           time.Duration

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  testkit.Buffer
	replies chan string   // every stdout line that is not an EVENT
	exited  chan struct{} // closed once the JVM has exited and been reaped
	exitErr error         // set before exited is closed
	ended   atomic.Bool   // set before exited is closed
	startup time.Duration

	cmdMu  sync.Mutex // one command at a time
	broken error      // a command timed out: replies can no longer be matched; under cmdMu

	evMu   sync.Mutex
	events []Event
}

// Start starts a Curator participant in its own JVM on the ensemble at connect (a ZooKeeper
// connect string) and election path, in mode Latch or Selector with the given id; term is the
// selector's takeLeadership length (0: hold until Release). It returns once the participant
// is listed among the election's participants, and fails t (with the JVM's stderr) when that
// takes longer than ReadyTimeout. The JVM is killed when t ends.
func Start(t testing.TB, connect, path, mode, id string, term time.Duration) *Participant {
	t.Helper()
	if mode != Latch && mode != Selector {
		t.Fatalf("curatortest: mode %q is not %q or %q", mode, Latch, Selector)
	}
	if strings.ContainsAny(id, " ,\n") || id == "" || id == "-" {
		t.Fatalf("curatortest: id %q must be non-empty, not \"-\", without spaces or commas (the line protocol)", id)
	}
	classDir := Compile(t)
	java, err := zktest.JavaPath()
	if err != nil {
		t.Fatal(err)
	}
	p := &Participant{
		ID: id, Path: path, Mode: mode, Term: term,
		replies: make(chan string, 64),
		exited:  make(chan struct{}),
		stderr:  testkit.Buffer{Max: 1 << 20}, // bounded; the start of stderr matters most
	}
	p.cmd = exec.Command(java,
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", // faster start; plenty for one client
		"-cp", compiled.cp+string(os.PathListSeparator)+classDir,
		mainClass, connect, path, mode, id, strconv.FormatInt(term.Milliseconds(), 10))
	p.cmd.Stderr = &p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatalf("curatortest: %v", err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("curatortest: %v", err)
	}
	begin := time.Now()
	if err := proctest.Start(p.cmd); err != nil { // dies with the test binary
		t.Fatalf("curatortest: start %s: %v", java, err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			if s := strings.TrimSpace(p.Stderr()); s != "" {
				t.Logf("curatortest: %s stderr:\n%s", p, s)
			}
			t.Logf("curatortest: %s events: %v", p, p.Events())
		}
	})
	go p.read(stdout)

	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case line := <-p.replies:
		if line != "READY" {
			t.Fatalf("curatortest: %s: first line %q, want READY; stderr:\n%s", p, line, p.Stderr())
		}
		p.startup = time.Since(begin)
	case <-p.exited:
		t.Fatalf("curatortest: %s exited before READY (%v); stderr:\n%s", p, p.exitErr, p.Stderr())
	case <-timer.C:
		p.Kill()
		t.Fatalf("curatortest: %s not READY within %v; stderr:\n%s", p, ReadyTimeout, p.Stderr())
	}
	return p
}

func (p *Participant) String() string {
	return fmt.Sprintf("curator %s %s(%s)", p.Mode, p.ID, p.Path)
}

// StartupTime is how long the JVM took from exec to READY (started and joined).
func (p *Participant) StartupTime() time.Duration { return p.startup }

// CompileTime is how long compiling (or finding the cached classes) took in this test binary.
func CompileTime() time.Duration { return compiled.took }

// read turns stdout lines into events and replies, then reaps the JVM.
func (p *Participant) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch line {
		case "EVENT leader", "EVENT notleader":
			p.evMu.Lock()
			p.events = append(p.events, Event{Leader: line == "EVENT leader", At: time.Now()})
			p.evMu.Unlock()
			continue
		}
		select {
		case p.replies <- line:
		default: // nobody is asking and the buffer is full: drop (commands are serialized)
		}
	}
	p.exitErr = p.cmd.Wait()
	p.ended.Store(true)
	close(p.exited)
}

// Events returns the leadership changes reported so far, oldest first.
func (p *Participant) Events() []Event {
	p.evMu.Lock()
	defer p.evMu.Unlock()
	return append([]Event(nil), p.events...)
}

// Stderr returns what the JVM wrote to stderr so far.
func (p *Participant) Stderr() string { return p.stderr.String() }

// Exited is closed once the JVM has exited.
func (p *Participant) Exited() <-chan struct{} { return p.exited }

// roundTrip sends one command and returns its reply line.
func (p *Participant) roundTrip(cmd string, timeout time.Duration) (string, error) {
	p.cmdMu.Lock()
	defer p.cmdMu.Unlock()
	if p.broken != nil {
		return "", p.broken
	}
	select {
	case <-p.exited:
		return "", fmt.Errorf("%s: %s: the JVM has exited (%v)", p, cmd, p.exitErr)
	default:
	}
	// Drop stale lines (none expected: every command waits for its reply).
	for len(p.replies) > 0 {
		<-p.replies
	}
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("%s: %s: %w", p, cmd, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line := <-p.replies:
		if msg, ok := strings.CutPrefix(line, "ERR "); ok {
			return "", fmt.Errorf("%s: %s: %s", p, cmd, msg)
		}
		return line, nil
	case <-p.exited:
		// The reader may have queued the reply just before EOF.
		select {
		case line := <-p.replies:
			return line, nil
		default:
		}
		return "", fmt.Errorf("%s: %s: the JVM exited (%v); stderr:\n%s", p, cmd, p.exitErr, p.Stderr())
	case <-timer.C:
		p.broken = fmt.Errorf("%s: %s: no reply within %v (later commands refused)", p, cmd, timeout)
		return "", p.broken
	}
}

// Status asks Curator for hasLeadership(), getLeader().getId() and getParticipants() (which
// read ZooKeeper).
func (p *Participant) Status() (Status, error) {
	line, err := p.roundTrip("status", CommandTimeout)
	if err != nil {
		return Status{}, err
	}
	return parseStatus(line)
}

func parseStatus(line string) (Status, error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "STATUS" || (f[1] != "true" && f[1] != "false") {
		return Status{}, fmt.Errorf("curatortest: bad status line %q", line)
	}
	s := Status{IsLeader: f[1] == "true"}
	if f[2] != "-" {
		s.Leader = f[2]
	}
	if f[3] != "-" {
		s.Participants = strings.Split(f[3], ",")
	}
	return s, nil
}

// Leading asks only hasLeadership(): no ZooKeeper read, a sub-millisecond round-trip, for
// sampling leadership often. In latch mode it turns false before the latch is closed (the
// participant stops acting before it lets go, unlike Curator 5.4's own flag, which clears only
// after the node is deleted).
func (p *Participant) Leading() (bool, error) {
	line, err := p.roundTrip("leading", CommandTimeout)
	if err != nil {
		return false, err
	}
	switch line {
	case "LEADING true":
		return true, nil
	case "LEADING false":
		return false, nil
	}
	return false, fmt.Errorf("curatortest: bad leading line %q", line)
}

// WaitStatus polls Status every 10 ms until cond holds and returns that status; after timeout
// it returns the last status (or error) seen, wrapped in an error.
func (p *Participant) WaitStatus(timeout time.Duration, cond func(Status) bool) (Status, error) {
	var last Status
	err := wait.Until(context.Background(), timeout, 10*time.Millisecond, func() error {
		s, err := p.Status()
		last = s
		switch {
		case err == nil && cond(s):
			return nil
		case p.ended.Load():
			return wait.Stop(fmt.Errorf("%s: the JVM exited (%v) while waiting; stderr:\n%s", p, p.exitErr, p.Stderr()))
		case err != nil:
			return fmt.Errorf("condition not met; last error: %w", err)
		}
		return fmt.Errorf("condition not met; last status: %s", s)
	})
	if err != nil && !p.ended.Load() {
		return last, fmt.Errorf("%s: %w", p, err)
	}
	return last, err
}

// Release ends leadership and re-queues: selector: the current takeLeadership returns now (a
// no-op when not leading); latch: the latch is closed and a new one with the same id is started
// at the back of the queue. It returns once the new latch is among the participants.
func (p *Participant) Release() error {
	line, err := p.roundTrip("release", ReadyTimeout)
	if err != nil {
		return err
	}
	if line != "OK" {
		return fmt.Errorf("%s: release: reply %q, want OK", p, line)
	}
	return nil
}

// Close closes the latch or selector and the Curator client (which deletes the node at once)
// and waits until the JVM has exited.
func (p *Participant) Close() error {
	line, err := p.roundTrip("close", CloseTimeout)
	if err != nil {
		p.Kill()
		return err
	}
	if line != "CLOSED" {
		p.Kill()
		return fmt.Errorf("%s: close: reply %q, want CLOSED", p, line)
	}
	select {
	case <-p.exited:
	case <-time.After(CloseTimeout):
		p.Kill()
		return fmt.Errorf("%s: still running %v after CLOSED", p, CloseTimeout)
	}
	p.stdin.Close()
	if p.exitErr != nil {
		return fmt.Errorf("%s: exit: %v; stderr:\n%s", p, p.exitErr, p.Stderr())
	}
	return nil
}

// Kill kills the JVM with SIGKILL and waits until it has exited. Its ZooKeeper session is
// not closed: its node stays until the session times out (4 s). A no-op once exited.
func (p *Participant) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(killTimeout):
	}
	p.stdin.Close()
}
