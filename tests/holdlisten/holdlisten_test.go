package holdlisten

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/freeport"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// sessionTimeout: a restart of the binary fits in it many times over,
// even on a loaded machine, so the session is resumed.
const sessionTimeout = 10 * time.Second

// window is how long a footprint is watched to call a participant idle.
const window = 3 * time.Second

// rig is one participant with its proxy, its application and its holder,
// as one pod of the proxy flavour runs them.
type rig struct {
	electd, holder       electdtest.Spec
	listen, peer, hold   string
	api                  string // http.addr, fixed: held across restarts too
	app                  *proxykit.App
	fence                *proxykit.Fence
	electdProc, holdProc *electdtest.Proc
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ens := zktest.Start(t, zktest.Options{})
	base, err := freeport.Addrs(2)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(base)
	var p int
	fmt.Sscan(port, &p)
	r := &rig{listen: base, peer: net.JoinHostPort(host, fmt.Sprint(p+1)), hold: t.TempDir(), fence: proxykit.NewFence()}
	if r.api, err = freeport.Addrs(1); err != nil {
		t.Fatal(err)
	}
	// The application's name is electd's id: the fence checks the leader
	// id the proxy sends with every request.
	if r.app, err = proxykit.StartApp("web-1", r.fence); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.app.Close)
	dir := t.TempDir()
	r.electd = electdtest.Spec{Name: "web-1", Dir: dir, Config: &electdtest.Config{
		ID: "web-1", Servers: ens.Servers(), SessionTimeout: sessionTimeout, Path: "/holdlisten/web",
		ProxyListen: r.listen, ProxyPeer: r.peer, ProxyApp: r.app.Addr, LogLevel: "debug", LogFormat: "text",
	}, Addr: r.api, Args: []string{"--zookeeper.session_file", dir + "/session", "--listen_hold_dir", r.hold}}
	r.holder = electdtest.Spec{Name: "holder", Dir: t.TempDir(), Args: []string{"hold-listener", "--dir", r.hold}}
	return r
}

func (r *rig) startHolder(t *testing.T) {
	t.Helper()
	r.holdProc = electdtest.StartProgram(t, electdtest.Binary(t), r.holder)
}

func (r *rig) startElectd(t *testing.T) {
	t.Helper()
	r.electdProc = electdtest.Start(t, r.electd)
}

// holderHolds waits until the holder's log says it keeps the three ports:
// the API's and the proxy's two.
func (r *rig) holderHolds(t *testing.T) {
	t.Helper()
	wait.For(t, 30*time.Second, "the holder keeping the three ports", func() bool {
		return len(r.holdProc.LogLines("holding a listening socket")) >= 3
	})
}

// probeAPI asks GET /healthz/leader on a new connection, as the kubelet
// does, while electd is down: the held port takes the connection and the
// restarted electd answers it. It returns the status code, or the error.
func (r *rig) probeAPI() (int, error) {
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + r.api + "/healthz/leader")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// leads waits until electd leads and its proxy routes to the application.
func (r *rig) leads(t *testing.T) electdtest.LeaderView {
	t.Helper()
	var v electdtest.LeaderView
	wait.For(t, 60*time.Second, "web-1 leading and routing to its application", func() bool {
		var err error
		v, err = r.electdProc.View(context.Background())
		return err == nil && v.Self.IsLeader && v.Proxy != nil && v.Proxy.Route == "app"
	})
	return v
}

// startLoad sends a POST (not safe to repeat) on a new connection every
// 5 ms until Stop, each with its own X-Request-Id.
func startLoad(addr string) *ledger.Load {
	return ledger.StartLoad(ledger.LoadConfig{Rate: 200, PostEvery: 1, Timeout: 30 * time.Second,
		Prefix: fmt.Sprintf("hold-%d", os.Getpid()), NewConnEach: true}, ledger.Target{Name: "web-1", Addr: addr})
}

// okSince counts the requests started after t that the application answered.
func okSince(ld *ledger.Load, t time.Time) int {
	n := 0
	for _, r := range ld.Results() {
		if r.Start.After(t) && r.Err == nil && r.Code == http.StatusOK {
			n++
		}
	}
	return n
}

// kill is one SIGKILL of electd, from the signal to the exit: a request
// in flight then may have been taken by the killed process, and may fail.
type kill struct{ at, dead time.Time }

func (k kill) excuses(r ledger.Request) bool { return r.Start.Before(k.dead) && r.End.After(k.at) }

// check holds every request to the bar: answered 200 by the application,
// which ran it exactly once, but for those in flight at a kill.
func check(t *testing.T, r *rig, results []ledger.Request, kills []kill) {
	t.Helper()
	failed, excused, slowest := 0, 0, time.Duration(0)
	for _, res := range results {
		slowest = max(slowest, res.Latency())
		ok := res.Err == nil && res.Code == http.StatusOK && strings.HasPrefix(res.Body, "web-1 ") && r.fence.Ran(res.ID)
		if ok {
			continue
		}
		inFlight := false
		for _, k := range kills {
			inFlight = inFlight || k.excuses(res)
		}
		if inFlight {
			excused++
			continue
		}
		if failed++; failed <= 10 {
			t.Errorf("request %s (sent +%v after the first kill, took %v): %d %q %v", res.ID,
				res.Start.Sub(kills[0].at).Round(time.Millisecond), res.Latency().Round(time.Millisecond), res.Code, res.Body, res.Err)
		}
	}
	for _, v := range r.fence.Violations() {
		t.Error(v)
	}
	t.Logf("%d requests, %d failed, %d in flight at a kill and lost with the process; the slowest took %v",
		len(results), failed, excused, slowest.Round(time.Millisecond))
	if failed > 0 {
		t.Errorf("%d requests failed that were not in flight at a kill", failed)
	}
}

// restOf takes electd's footprint at rest, for WaitIdle later.
func restOf(t *testing.T, p *electdtest.Proc) []invariant.Rest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, err := electdtest.FootprintWindow(ctx, []*electdtest.Proc{p}, window)
	if err != nil {
		t.Fatal(err)
	}
	return []invariant.Rest{invariant.RestOf(ws[0])}
}

func waitIdle(t *testing.T, p *electdtest.Proc, rest []invariant.Rest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := electdtest.WaitIdle(ctx, []*electdtest.Proc{p}, rest, window); err != nil {
		t.Error(err)
	}
}

// electd SIGKILLed and started again while a client sends every 5 ms:
// its ports refuse nothing (the holder keeps them; a probe of the API sent
// meanwhile is answered by the restarted electd), what arrives meanwhile
// waits in the accept queue, and the restarted electd, which resumed its
// session and leadership, serves it. Then the holder is SIGKILLed alone
// (the port keeps serving), started again (it takes the ports back from
// electd), and electd is SIGKILLed once more: still nothing is refused.
// electd is idle again afterwards.
func TestKilledElectdRefusesNothing(t *testing.T) {
	r := newRig(t)
	r.startHolder(t)
	r.startElectd(t)
	was := r.leads(t)
	r.holderHolds(t)
	rest := restOf(t, r.electdProc)

	ld := startLoad(r.listen)
	defer ld.Stop()
	start := time.Now()
	wait.For(t, 30*time.Second, "requests answered before the kill", func() bool { return okSince(ld, start) >= 50 })

	var kills []kill
	killElectd := func() {
		k, sent := kill{at: time.Now()}, ld.Sent()
		r.electdProc.Kill()
		k.dead = time.Now()
		kills = append(kills, k)
		probed := make(chan error, 1)
		go func() {
			code, err := r.probeAPI()
			if err == nil && code != http.StatusOK && code != http.StatusServiceUnavailable {
				err = fmt.Errorf("status %d", code)
			}
			t.Logf("a probe of /healthz/leader sent while electd was down: %d %v", code, err)
			probed <- err
		}()
		// Sent while electd is down: they wait in the accept queue.
		wait.For(t, 30*time.Second, "requests sent while electd is down", func() bool { return ld.Sent()-sent >= 40 })
		r.startElectd(t)
		if err := <-probed; err != nil {
			t.Errorf("the API's port did not keep a probe sent while electd was down: %v", err)
		}
		v := r.leads(t)
		if v.Leader.FencingToken != was.Leader.FencingToken || v.Leader.Node != was.Leader.Node {
			t.Errorf("leads with node %s token %d after the restart, was %s token %d: the session was not resumed",
				v.Leader.Node, v.Leader.FencingToken, was.Leader.Node, was.Leader.FencingToken)
		}
		back := time.Now()
		wait.For(t, 60*time.Second, "requests answered after the restart", func() bool { return okSince(ld, back) >= 50 })
	}
	killElectd()

	r.holdProc.Kill()
	holderGone := time.Now()
	wait.For(t, 30*time.Second, "requests answered without the holder", func() bool { return okSince(ld, holderGone) >= 50 })
	r.startHolder(t)
	wait.For(t, 30*time.Second, "the restarted holder keeping the three ports", func() bool {
		return len(r.holdProc.LogLines("holding a listening socket")) >= 6 // three per run, in one log
	})
	killElectd()

	check(t, r, ld.Stop(), kills)
	waitIdle(t, r.electdProc, rest)
}
