package execmode

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// GuardCommand is the hidden first argument that makes electd a guard.
const GuardCommand = "__exec-guard"

// The guard's file descriptors beyond stdin, stdout and stderr.
const (
	controlFD = 3 // electd -> guard: "lease <ns>", "stop <ns>"; EOF: electd is gone
	reportFD  = 4 // guard -> electd: "started <pid>", "error <text>", "exit <code> <signal> <cause>"
)

// Cause says why the command ended.
type Cause string

const (
	CauseExited   Cause = "exited"   // on its own
	CauseStopped  Cause = "stopped"  // electd asked (SIGTERM, SIGKILL after the kill timeout)
	CauseLease    Cause = "lease"    // electd's lease ended without renewal: SIGKILL
	CauseOrphaned Cause = "orphaned" // electd went away: SIGKILL
	CauseGuard    Cause = "guard"    // the guard failed; electd killed the group itself
)

// guardArgs are what electd passes to the guard after GuardCommand.
type guardArgs struct {
	deadline    int64         // first lease deadline on Mono's clock
	killTimeout time.Duration // for a stop the guard starts itself (a signal)
	argv        []string      // the command
}

func (a guardArgs) encode() []string {
	return append([]string{GuardCommand, strconv.FormatInt(a.deadline, 10), a.killTimeout.String(), "--"}, a.argv...)
}

func parseGuardArgs(args []string) (guardArgs, error) {
	var a guardArgs
	if len(args) < 4 || args[2] != "--" {
		return a, errors.New("usage: " + GuardCommand + " DEADLINE KILL_TIMEOUT -- CMD [ARGS...]")
	}
	var err error
	if a.deadline, err = strconv.ParseInt(args[0], 10, 64); err != nil {
		return a, fmt.Errorf("deadline: %w", err)
	}
	if a.killTimeout, err = time.ParseDuration(args[1]); err != nil || a.killTimeout < 0 {
		return a, fmt.Errorf("kill timeout %q", args[1])
	}
	a.argv = args[3:]
	return a, nil
}

// RunGuard is the guard process's main; args follow GuardCommand. It
// starts the command and returns 0 once the command and its process group
// are gone. It returns 2 when electd did not start it as a guard.
func RunGuard(args []string) int {
	// Pdeathsig fires when the thread that started the command ends. This
	// thread stays locked, and alive, until the guard exits.
	runtime.LockOSThread()
	a, err := parseGuardArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "electd %s: for electd's own use (%v)\n", GuardCommand, err)
		return 2
	}
	// The pipes came without close-on-exec. The command must not inherit
	// them. An inherited pipe stays open after the guard's end, so electd
	// gets no EOF, and the command could write reports.
	syscall.CloseOnExec(controlFD)
	syscall.CloseOnExec(reportFD)
	control, report := os.NewFile(controlFD, "electd-control"), os.NewFile(reportFD, "electd-report")
	g := &guard{args: a, report: report}
	g.run(readLines(control))
	return 0
}

// guard is the state of one guard process.
type guard struct {
	args   guardArgs
	report io.Writer
	pgid   int   // the command's process group (its pid)
	cause  Cause // why it ends, once decided
}

// readLines sends control's lines until EOF or an error, then closes the channel.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func (g *guard) say(format string, args ...any) {
	fmt.Fprintf(g.report, format+"\n", args...) // an error means electd is gone; the pipe's EOF says so too
}

// signal sends sig to the command's whole process group.
func (g *guard) signal(sig syscall.Signal) {
	_ = syscall.Kill(-g.pgid, sig) // ESRCH: the group is gone already
}

// decide records why the command ends. The first reason stands, except
// that the lease's end overrides a stop: its SIGKILL came first.
func (g *guard) decide(c Cause) {
	if g.cause == "" || c == CauseLease && g.cause == CauseStopped {
		g.cause = c
	}
}

func (g *guard) run(control <-chan string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if Mono() >= g.args.deadline {
		g.say("exit -1 - %s", CauseLease) // the lease ended before the command could start
		return
	}
	cmd := exec.Command(g.args.argv[0], g.args.argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // straight through: no copying goroutine
	cmd.SysProcAttr = commandAttr()
	if err := cmd.Start(); err != nil {
		g.say("error %s", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	g.pgid = cmd.Process.Pid
	g.say("started %d", g.pgid)

	exited := make(chan func() (*os.ProcessState, error), 1)
	go func() { exited <- awaitExit(cmd.Process) }()
	lease := time.NewTimer(until(g.args.deadline))
	defer lease.Stop()
	var kill <-chan time.Time
	stop := func(timeout time.Duration) {
		g.decide(CauseStopped)
		g.signal(syscall.SIGTERM)
		if kill == nil {
			kill = time.After(timeout)
		}
	}
	for {
		select {
		case line, ok := <-control:
			if !ok {
				control = nil
				g.decide(CauseOrphaned)
				g.signal(syscall.SIGKILL)
				continue
			}
			verb, arg, _ := strings.Cut(line, " ")
			n, err := strconv.ParseInt(arg, 10, 64)
			switch {
			case err != nil:
			case verb == "lease":
				lease.Reset(until(n))
			case verb == "stop":
				stop(time.Duration(n))
			}
		case <-sigs:
			stop(g.args.killTimeout)
		case <-lease.C:
			g.decide(CauseLease)
			g.signal(syscall.SIGKILL)
		case <-kill:
			g.signal(syscall.SIGKILL)
		case reap := <-exited:
			g.decide(CauseExited)
			g.signal(syscall.SIGKILL) // what the command left running in its group
			st, err := reap()
			g.say("exit %s %s", exitText(st, err), g.cause)
			return
		}
	}
}

// until is how long from now the Mono deadline is.
func until(deadline int64) time.Duration {
	return max(time.Duration(deadline-Mono()), 0)
}

// exitText is "<code> <signal>". It is the exit status and "-", or -1 and
// the signal's name when a signal ended the command.
func exitText(st *os.ProcessState, err error) string {
	if err != nil || st == nil {
		return "-1 -"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if name := unix.SignalName(ws.Signal()); name != "" {
			return "-1 " + name
		}
		return "-1 " + strconv.Itoa(int(ws.Signal()))
	}
	return strconv.Itoa(st.ExitCode()) + " -"
}
