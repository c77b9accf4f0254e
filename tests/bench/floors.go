package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/proctest"
)

// The forward section's floors: proxies that are not electd, in processes of
// their own, in front of the same application, one hop or two chained as a
// follower's proxy is chained to the leader's. A hop through one costs what
// any proxy process costs on this machine (two wake-ups of a process and
// two loopback round trips), so electd's forward is judged against them,
// not against an in-process call.
const (
	// floorGo is a bare net/http/httputil.ReverseProxy (tests/bench/floorproxy).
	floorGo = "bare ReverseProxy"
	// floorHAProxy is Debian's HAProxy, configured as haproxyConfig says.
	floorHAProxy = "HAProxy"
)

// chain is one floor's processes, front first: clients send to addr.
type chain struct {
	addr string
	pids []int
	stop []func()
}

func (c *chain) close() {
	for _, s := range c.stop {
		s()
	}
}

// startChain runs hops processes of the floor kind in front of app, each
// in front of the next, and returns the chain once each takes connections.
func startChain(ctx context.Context, env *env, kind, app string, hops int) (*chain, error) {
	c := &chain{}
	target := app
	for i := range hops {
		var (
			addr string
			pid  int
			stop func()
			err  error
		)
		switch kind {
		case floorGo:
			addr, pid, stop, err = startFloorProxy(env, target)
		case floorHAProxy:
			addr, pid, stop, err = startHAProxy(ctx, env, fmt.Sprintf("hop%d-%d", hops, i), target)
		default:
			err = fmt.Errorf("no floor %q", kind)
		}
		if err != nil {
			c.close()
			return nil, err
		}
		c.pids = append([]int{pid}, c.pids...)
		c.stop = append(c.stop, stop)
		c.addr, target = addr, addr
	}
	return c, nil
}

// startFloorProxy runs tests/bench/floorproxy in front of target and
// returns its address, its pid and a function that stops it.
func startFloorProxy(env *env, target string) (string, int, func(), error) {
	bin, err := env.floorProxy()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, target)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := proctest.Start(cmd); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("floorproxy printed no address: %w", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid, stop, nil
}

// floorProxy builds tests/bench/floorproxy once per run.
func (e *env) floorProxy() (string, error) {
	if e.floorBin != "" {
		return e.floorBin, nil
	}
	bin, err := buildGo(e.dir, "floorproxy", "github.com/electd/electd/tests/bench/floorproxy")
	e.floorBin = bin
	return bin, err
}

// haproxyBinary is Debian's haproxy (scripts/install-deps.sh installs it).
// A missing one fails the section: the floor is part of the figures.
const haproxyBinary = "haproxy"

// haproxyConfig is HAProxy set up as an operator would put it in front of
// one application, and as electd's proxy works: HTTP mode, keep-alive on
// both sides (option http-keep-alive; http-reuse always shares idle server
// connections between client connections, as a Go Transport's pool does),
// no logging, its default threads (one per CPU, as GOMAXPROCS); and the
// headers electd's proxy sets (docs/design/proxy.md, "Forwarding"): an
// X-Forwarded-For (option forwardfor), an X-Request-Id unless the request
// has one, and the fencing token and leader id, so that each floor and
// electd do the same work and the same application serves them all.
func haproxyConfig(listen, target string) string {
	return fmt.Sprintf(`global
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    option forwardfor
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s
    timeout http-request 10s

frontend bench
    bind %s
    unique-id-format %%{+X}o\ %%ci:%%cp_%%fi:%%fp_%%Ts_%%rt:%%pid
    http-request set-header X-Request-Id %%[unique-id] unless { req.hdr(x-request-id) -m found }
    default_backend app

backend app
    http-reuse always
    http-request set-header Electd-Fencing-Token 1
    http-request set-header Electd-Leader-Id direct
    server app %s
`, listen, target)
}

// startHAProxy runs haproxy in the foreground (-db) in front of target and
// returns its address and pid once it takes connections, and a function
// that stops it.
func startHAProxy(ctx context.Context, env *env, name, target string) (string, int, func(), error) {
	bin, err := exec.LookPath(haproxyBinary)
	if err != nil {
		return "", 0, nil, fmt.Errorf("the HAProxy floor needs Debian's haproxy (scripts/install-deps.sh installs it): %w", err)
	}
	addr, err := electdtest.FreeAddr()
	if err != nil {
		return "", 0, nil, err
	}
	cfg := filepath.Join(env.dir, "haproxy-"+name+".cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(addr, target)), 0o644); err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := proctest.Start(cmd); err != nil {
		return "", 0, nil, fmt.Errorf("start haproxy: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	if err := awaitListening(ctx, addr, exited); err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("haproxy (%s): %w", cfg, err)
	}
	return addr, cmd.Process.Pid, stop, nil
}

// awaitListening waits until addr takes a connection, the process exits
// (exited closes) or 10 s pass.
func awaitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before it listened")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after 10 s: %w", addr, err)
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}
