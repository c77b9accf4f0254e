package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/zktest"
)

// What a client sees through the forwarding proxies while something fails
// (issue 28, must have 10): three electd processes with their proxies, each
// in front of a Go application of its own process that keeps a ledger by
// request id (tests/harness/ledger), each reaching ZooKeeper and its peers through a
// relay that can be cut (zktest.Proxy), and a paced load of GETs and POSTs
// through the proxies. The settings are a careful operator's for an
// application that answers at once: a short session timeout, so that a lost
// leader is replaced within the hold time, and a response timeout sized to
// the application.
const (
	faultSession  = 2 * time.Second // zookeeper.session_timeout
	faultHold     = 5 * time.Second // proxy.hold_time
	faultResponse = 2 * time.Second // proxy.response_timeout
	faultIdle     = time.Second     // proxy.idle_timeout
	// faultPatience is the load's client's patience with one request: well
	// past every bound the proxy promises (the hold time, the peer timeout,
	// the response timeout), so that a request that hangs is seen to.
	faultPatience = 15 * time.Second
	faultRate     = 100 // requests a second through all proxies, every other one a POST
	faultToken    = "bench-fault-token"
	faultPath     = "/bench/faults"
)

// faultRig is the section's participants on one election.
type faultRig struct {
	env     *env
	dir     string
	peers   bool // peers forward to proxy.listen's port + 1 (the data plane's peer port), else to proxy.listen
	members []*faultMember
}

type faultMember struct {
	name  string
	app   *ledger.App
	spec  electdtest.Spec
	proc  *electdtest.Proc
	proxy string        // proxy.listen: where clients send
	zk    *zktest.Proxy // its way to ZooKeeper
	relay *zktest.Proxy // in front of its peer port; published as proxy.advertise
	out   bool          // taken out of the load (stopped or dead)
	blind bool          // cannot know the election (its ZooKeeper link is cut)
}

func startFaultRig(ctx context.Context, env *env) (*faultRig, error) {
	r := &faultRig{env: env, dir: filepath.Join(env.dir, "faults")}
	var err error
	if r.peers, err = peerPort(ctx, env.electd); err != nil {
		return nil, err
	}
	for i := range 3 {
		m := &faultMember{name: fmt.Sprintf("x%d", i)}
		r.members = append(r.members, m) // before anything can fail: close stops it
		if err := r.prepare(m); err != nil {
			r.close()
			return nil, err
		}
		if err := r.launch(ctx, m); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// prepare starts m's application and relays and writes its configuration.
func (r *faultRig) prepare(m *faultMember) error {
	var err error
	if m.app, err = ledger.Launch(ledger.Go, m.name, r.dir); err != nil {
		return err
	}
	if m.zk, err = zktest.NewProxy(r.env.single.Servers()[0]); err != nil {
		return err
	}
	if m.proxy, err = electdtest.FreeAddrPair(); err != nil {
		return err
	}
	peer := m.proxy
	if r.peers {
		host, port, _ := net.SplitHostPort(m.proxy)
		n, _ := strconv.Atoi(port)
		peer = net.JoinHostPort(host, strconv.Itoa(n+1))
	}
	if m.relay, err = zktest.NewProxy(peer); err != nil {
		return err
	}
	m.spec = electdtest.Spec{Dir: filepath.Join(r.dir, m.name), Config: &electdtest.Config{
		ID: m.name, Servers: []string{m.zk.Addr()}, SessionTimeout: faultSession,
		Path: faultPath, AdminToken: faultToken, LogLevel: "info", LogFormat: "json",
		ShutdownGrace: 500 * time.Millisecond, ShutdownTimeout: 10 * time.Second,
		ProxyListen: m.proxy, ProxyApp: m.app.Addr, ProxyAdvertise: m.relay.Addr(),
		ProxyHoldTime: faultHold, ProxyResponseTimeout: faultResponse, ProxyIdle: faultIdle,
	}}
	if r.peers {
		m.spec.Config.ProxyPeer = peer
	}
	return nil
}

// launch starts m's electd (again) and waits until it serves /readyz.
func (r *faultRig) launch(ctx context.Context, m *faultMember) error {
	var err error
	if m.proc, err = electdtest.Launch(r.env.electd, m.spec); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := m.proc.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		return fmt.Errorf("electd %s: %w\n%s", m.name, err, m.proc.LogTail(20))
	}
	return nil
}

func (r *faultRig) close() {
	for _, m := range r.members {
		if m.proc != nil {
			m.proc.Kill()
		}
		if m.app != nil && m.app.Proc != nil {
			m.app.Proc.Kill()
		}
		for _, p := range []*zktest.Proxy{m.zk, m.relay} {
			if p != nil {
				p.Close()
			}
		}
	}
}

// targets are the proxies the load sends to: every member's not taken out.
func (r *faultRig) targets() []ledger.Target {
	var out []ledger.Target
	for _, m := range r.members {
		if !m.out {
			out = append(out, ledger.Target{Name: m.name, Addr: m.proxy})
		}
	}
	return out
}

// routed names the member that leads and that every member able to know
// routes to (not one stopped, dead or cut from ZooKeeper); "" while they do
// not agree yet.
func (r *faultRig) routed(ctx context.Context) string {
	views, proxies := map[string]api.Leader{}, map[string]string{}
	for _, m := range r.members {
		if m.blind || !m.proc.Alive() || m.proc.Paused() {
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, time.Second)
		v, err := m.proc.View(vctx)
		cancel()
		if err != nil || v.Proxy == nil {
			return ""
		}
		views[m.name], proxies[m.name] = v, v.Proxy.Advertise // the relay
	}
	return proxykit.Routed(views, proxies)
}

// settled waits up to limit until a member other than old leads and every
// member able to know routes to it, and returns it (nil past the limit).
func (r *faultRig) settled(ctx context.Context, old *faultMember, limit time.Duration) (*faultMember, error) {
	deadline := time.Now().Add(limit)
	for {
		if name := r.routed(ctx); name != "" && (old == nil || name != old.name) {
			for _, m := range r.members {
				if m.name == name {
					return m, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// peerPort reports whether the electd binary takes proxy.peer_listen in
// HTTP mode, where the data plane's peers forward (issue 28), rather than
// on proxy.listen: an electd that does not refuses the key with exit
// status 2 at once; one that does keeps running (here, trying to reach a
// ZooKeeper that is not there) until it is stopped.
func peerPort(ctx context.Context, bin string) (bool, error) {
	var addrs [3]string
	for i := range addrs {
		var err error
		if addrs[i], err = electdtest.FreeAddr(); err != nil {
			return false, err
		}
	}
	cmd := exec.CommandContext(ctx, bin, "--zookeeper.servers", "127.0.0.1:1", "--election.path", "/bench/probe", "--http.addr", addrs[0],
		"--proxy.listen", addrs[1], "--proxy.peer_listen", addrs[2], "--proxy.app", "127.0.0.1:1",
		"--proxy.peer_key", electdtest.PeerKey("/bench/probe"))
	cmd.Env = electdtest.CleanEnviron()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(out.String(), "proxy.peer_listen") {
			return false, nil
		}
		return false, fmt.Errorf("electd with proxy.peer_listen in http mode: %v: %s", err, out.String())
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return true, nil
	}
}
