package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// daemon is one electd process the bench started (tests/harness/electdtest). Its
// log (JSON, debug level) goes to a file that the timeline reads.
type daemon struct {
	*electdtest.Proc
	id      string
	addr    string // its HTTP API, 127.0.0.1:port
	logPath string
	exited  <-chan struct{}
}

// electdOpts says how to run electd processes.
type electdOpts struct {
	binary         string
	dir            string // for the log files
	servers        string // ZooKeeper connect string
	path           string // election path
	sessionTimeout time.Duration
	logLevel       string
	handoff        string // election.handoff; "" is next
}

// startDaemon starts one electd on a port of its own choosing and waits
// until it serves /readyz (joined and knows the leader) or ctx ends.
// extra flags follow the ones every daemon gets.
func startDaemon(ctx context.Context, o electdOpts, id string, extra ...string) (*daemon, error) {
	addr, err := electdtest.FreeAddr()
	if err != nil {
		return nil, err
	}
	handoff := o.handoff
	if handoff == "" {
		handoff = "next"
	}
	args := append([]string{
		"--id", id, "--zookeeper.servers", o.servers,
		"--zookeeper.session_timeout", o.sessionTimeout.String(),
		"--election.path", o.path, "--http.addr", addr,
		"--log.level", o.logLevel, "--log.format", "json",
		// The next in line takes over, as in Curator and ZooKeeper's floor:
		// the handoff compared is the same one, and the bench knows the
		// successor (docs/design/handover.md, "Handoff").
		"--election.handoff", handoff}, extra...)
	p, err := electdtest.Launch(o.binary, electdtest.Spec{Name: id, Addr: addr, Args: args, Dir: o.dir, FreshLog: true})
	if err != nil {
		return nil, fmt.Errorf("start electd: %w", err)
	}
	d := &daemon{Proc: p, id: id, addr: addr, logPath: p.LogPath, exited: p.Exited()}
	if err := d.awaitReady(ctx); err != nil {
		d.kill()
		return nil, err
	}
	return d, nil
}

// awaitReady polls /readyz until 200.
func (d *daemon) awaitReady(ctx context.Context) error {
	if err := d.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		return fmt.Errorf("electd %s not ready: %w", d.id, err)
	}
	return nil
}

// poll calls check every 20 ms (tests/harness/wait) until it holds, or until the
// process exits or ctx ends.
func (d *daemon) poll(ctx context.Context, check func() bool) error {
	return wait.Until(ctx, 0, 20*time.Millisecond, func() error {
		switch {
		case check():
			return nil
		case !d.Alive():
			return wait.Stop(fmt.Errorf("exited; log %s:\n%s", d.logPath, electdtest.TailFile(d.logPath, 20)))
		}
		return errors.New("not yet")
	})
}

var httpClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8}}

// get fetches path and returns the status code and body.
func (d *daemon) get(ctx context.Context, path string) (int, []byte) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr+path, nil)
	if err != nil {
		return 0, nil
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (d *daemon) signal(sig syscall.Signal) error { return d.Signal(sig) }

// kill ends the process (if it still runs) and waits for it.
func (d *daemon) kill() { d.Kill() }

// stop sends SIGTERM and waits up to 15 s, then kills.
func (d *daemon) stop() { _ = d.Stop(15 * time.Second) }

func (d *daemon) pid() int { return d.Pid() }

// logLine is the part of electd's JSON log lines the bench reads.
type logLine struct {
	Time  time.Time `json:"time"`
	Msg   string    `json:"msg"`
	Watch string    `json:"watch"`
	Node  string    `json:"node"`
}

// logLines parses every JSON line of the log so far (others are skipped).
func (d *daemon) logLines() []logLine {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return nil
	}
	var out []logLine
	for line := range bytes.Lines(b) {
		var l logLine
		if json.Unmarshal(line, &l) == nil && l.Msg != "" {
			out = append(out, l)
		}
	}
	return out
}

var errNoLeader = errors.New("no leader")
