package bench

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
	"strings"
	"syscall"
	"time"

	"github.com/electd/electd/tests/electdtest"
)

// daemon is one electd process the bench started. Its log (JSON, debug
// level) goes to a file that the timeline reads.
type daemon struct {
	id      string
	addr    string // its HTTP API, 127.0.0.1:port
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
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
	spawn          *spawner
}

// startDaemon starts one electd on a port of its own choosing and waits
// until it serves /readyz (joined and knows the leader) or ctx ends.
// extra flags follow the ones every daemon gets.
func startDaemon(ctx context.Context, o electdOpts, id string, extra ...string) (*daemon, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	d := &daemon{id: id, addr: addr, logPath: filepath.Join(o.dir, id+".log"), exited: make(chan struct{})}
	f, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	handoff := o.handoff
	if handoff == "" {
		handoff = "next"
	}
	d.cmd = exec.Command(o.binary,
		"--id", id, "--zookeeper.servers", o.servers,
		"--zookeeper.session_timeout", o.sessionTimeout.String(),
		"--election.path", o.path, "--http.addr", addr,
		"--log.level", o.logLevel, "--log.format", "json",
		// The next in line takes over, as in Curator and ZooKeeper's floor:
		// the handoff compared is the same one, and the bench knows the
		// successor (docs/DESIGN.md, "Handoff").
		"--election.handoff", handoff)
	d.cmd.Args = append(d.cmd.Args, extra...)
	d.cmd.Env = cleanEnv()
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := o.spawn.start(d.cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("start electd: %w", err)
	}
	go func() {
		_ = d.cmd.Wait()
		f.Close()
		close(d.exited)
	}()
	if err := d.awaitReady(ctx); err != nil {
		d.kill()
		return nil, err
	}
	return d, nil
}

// cleanEnv is the bench's environment without ELECTD_* and POD_NAME, which
// would configure the daemons behind the flags' back.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_NAME=") {
			out = append(out, kv)
		}
	}
	return out
}

// freeAddr returns a loopback address with a port free a moment ago
// (electd's http.addr takes no port 0).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// awaitReady polls /readyz until 200.
func (d *daemon) awaitReady(ctx context.Context) error {
	for {
		if code, _ := d.get(ctx, "/readyz"); code == http.StatusOK {
			return nil
		}
		if err := d.pause(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("electd %s not ready: %w", d.id, err)
		}
	}
}

// pause waits d unless the process exits or ctx ends first.
func (d *daemon) pause(ctx context.Context, wait time.Duration) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-d.exited:
		return fmt.Errorf("exited; log %s:\n%s", d.logPath, electdtest.TailFile(d.logPath, 20))
	case <-ctx.Done():
		return ctx.Err()
	}
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

func (d *daemon) signal(sig syscall.Signal) error { return d.cmd.Process.Signal(sig) }

// kill ends the process (if it still runs) and waits for it.
func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// stop sends SIGTERM and waits up to 15 s, then kills.
func (d *daemon) stop() {
	_ = d.signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(15 * time.Second):
		d.kill()
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// logLine is the part of electd's JSON log lines the bench reads.
type logLine struct {
	Time  time.Time `json:"time"`
	Msg   string    `json:"msg"`
	Watch string    `json:"watch"`
	Node  string    `json:"node"`
}

// logLines parses every JSON line of the log so far (others are skipped).
func (d *daemon) logLines() []logLine {
	f, err := os.Open(d.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			out = append(out, l)
		}
	}
	return out
}

var errNoLeader = errors.New("no leader")
