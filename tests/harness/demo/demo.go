// Package demo is `make demo`: a local ZooKeeper (tests/harness/zktest's launcher) and three
// electd sidecars (tests/harness/electdtest's processes). It shows who leads, stops the
// leader with SIGTERM and times the handoff, then asks the new leader to step down with
// POST /leader/release and the admin token. Run from a terminal it pauses between steps;
// otherwise it runs straight through, and any bad step (no leader, two leaders, no
// handoff, a wrong status) ends it with an error. tests/demotest runs it.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
)

// The demo's settings.
const (
	sidecarCount   = 3
	electionPath   = "/services/demo"
	sessionTimeout = 4 * time.Second
	tickTime       = 500 * time.Millisecond

	// Deadlines: they end a demo that is stuck, they time nothing.
	healthyWithin = 30 * time.Second // a sidecar serves /healthz
	leaderWithin  = 30 * time.Second // the first election
	handoffWithin = 20 * time.Second // SIGTERM or release to a new leader
	exitWithin    = 10 * time.Second // SIGTERM to the exit

	poll = 50 * time.Millisecond
)

// Options configures a run.
type Options struct {
	Bin   string    // the electd binary
	Out   io.Writer // the story
	Err   io.Writer // on failure: what failed and the last lines of every log
	Color bool      // ANSI bold and green
	// Pause, when set, is called between steps (an interactive run): it returns when
	// the reader wants to go on, or an error to stop.
	Pause func(ctx context.Context) error
}

type demo struct {
	opts     Options
	out      *printer
	dir      string
	token    string
	zk       *zktest.Ensemble
	sidecars []*sidecar

	leader    string // who leads now
	token1    int64  // the first leader's fencing token
	handoffMs int64
	releaseMs int64
}

// Run tells the story. Everything it starts listens on 127.0.0.1 only and is stopped and
// removed before it returns, after an error or a cancelled ctx too.
func Run(ctx context.Context, opts Options) error {
	d := &demo{opts: opts, out: newPrinter(opts.Out, opts.Color)}
	defer d.cleanup()
	steps := []func(context.Context) error{d.setup, d.election, d.handoff, d.release}
	for i, step := range steps {
		err := step(ctx)
		if err == nil && opts.Pause != nil && i > 0 && i < len(steps)-1 {
			err = opts.Pause(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			fmt.Fprintf(opts.Err, "\n%sdemo: FAIL: %v%s\n%s", d.out.red, err, d.out.none, d.logs(25))
			return err
		}
	}
	fmt.Fprintf(opts.Out, "\n%sdemo: OK%s (one leader, handoff on SIGTERM in %d ms, release in %d ms)\n",
		d.out.green, d.out.none, d.handoffMs, d.releaseMs)
	return nil
}

func (d *demo) setup(ctx context.Context) error {
	d.out.step("electd demo: three sidecars, one ZooKeeper, one leader")
	if d.opts.Pause == nil {
		d.out.info("(non-interactive: no pauses)")
	}
	version, err := versionOf(ctx, d.opts.Bin)
	if err != nil {
		return err
	}
	d.out.info("electd: " + version)
	if d.dir, err = os.MkdirTemp("", "electd-demo-"); err != nil {
		return err
	}
	d.token = "demo-token-" + randomHex(6)
	if d.zk, err = zktest.StartEnsemble(zktest.Options{Servers: 1, TickTime: tickTime}); err != nil {
		return fmt.Errorf("%w\n(scripts/install-deps.sh zookeeper installs ZooKeeper; `make demo` runs it)", err)
	}
	m := d.zk.Member(1)
	d.out.info(fmt.Sprintf("ZooKeeper %s standalone on %s (tickTime %d ms, log in %s)", zkVersion(m), m.Addr(), tickTime.Milliseconds(), m.LogPath()))
	return nil
}

// cleanup stops the sidecars (SIGTERM, then SIGKILL), ZooKeeper, and removes the files.
func (d *demo) cleanup() {
	done := make(chan struct{})
	for _, s := range d.sidecars {
		go func() {
			defer func() { done <- struct{}{} }()
			if s.proc.Alive() {
				_ = s.proc.Stop(5 * time.Second)
			}
		}()
	}
	for range d.sidecars {
		<-done
	}
	if d.zk != nil {
		d.zk.Close()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// logs returns the last n lines of every log the demo wrote.
func (d *demo) logs(n int) string {
	var b strings.Builder
	if d.zk != nil {
		for _, m := range d.zk.Members() {
			fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s\n", m.LogPath(), tail(m.LogPath(), n))
		}
	}
	for _, s := range d.sidecars {
		fmt.Fprintf(&b, "\n--- last lines of %s.log ---\n%s\n", s.id, s.proc.LogTail(n))
	}
	return b.String()
}

// zkVersion is the server's version as srvr says it ("3.8.0"), or "?".
func zkVersion(m *zktest.Member) string {
	out, err := m.FourLetter("srvr")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zookeeper version: "); ok {
			v, _, _ = strings.Cut(v, "-")
			v, _, _ = strings.Cut(v, ",")
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
