package chaos

import (
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/zktest"
)

// Traffic through the proxies (issue 28, must have 9): every participant
// runs its forwarding proxy in front of an application of its own that
// keeps a ledger by request id (tests/harness/ledger; Go and Python in turn), and
// a paced load goes through the proxies of the participants that run, for
// as long as each fault lasts. At the end of the run the answers and the
// ledgers must show:
//
//   - no POST ran twice (a request not safe to repeat runs at most once);
//   - no request reached an application whose participant did not lead at
//     that moment (the fencing token check of tests/proxy's Fence);
//   - every request ended within the hold time + proxy.peer_timeout + the
//     application's time + trafficSlack, in the application's answer, a clean 503/504 with
//     Retry-After, or a 502/503 saying it may or may not have been
//     processed;
//   - no Electd-* header reached a client.
//
// A participant is taken out of the load before it is stopped, paused or
// killed, as a Service's endpoint is; a request already on its way through
// it then may fail with the connection, or, paused, wait for the SIGCONT:
// nothing can bound what a stopped process holds, so those are not judged.
const (
	proxyHold = 5 * time.Second // proxy.hold_time, set
	// peerTimeout is proxy.peer_timeout's default (not set, so that the
	// faults without a peer relay also run on an electd without the key).
	peerTimeout = 2 * time.Second
	// proxyIdle is proxy.idle_timeout: kept-alive connections close soon
	// after the load, and well after the clients close theirs
	// (proxykit.ClientIdle).
	proxyIdle = 2 * time.Second
	// trafficSlack is what a request may take past its bound on a machine
	// loaded with the chaos suite's ZooKeeper, electd and applications.
	trafficSlack = 2 * time.Second
	trafficRate  = 40 // requests a second, through all proxies
	postEvery    = 4  // one request in 4 is a POST
	// appTime is what the applications take on each request (before they
	// read its body), so that a fault finds requests in their hands.
	appTime = 50 * time.Millisecond
	// trafficBound is what every request must end within.
	trafficBound = proxyHold + peerTimeout + appTime + trafficSlack
)

// participant is what the run keeps of one participant besides its
// process: its application, its proxy's client address, and (PeerRelay) the
// relay in front of its peer port that a fault can cut.
type participant struct {
	app   *ledger.App
	proxy string
	relay *zktest.Proxy
}

// proxyConfig starts id's application (and relay) and sets cfg's proxy
// keys.
func (r *run) proxyConfig(id string, cfg *electdtest.Config) {
	r.t.Helper()
	lang := []string{ledger.Go, ledger.Python}[len(r.parts)%2]
	a, err := ledger.Launch(lang, id, r.dir)
	if err != nil {
		r.fatalf("application of %s: %v", id, err)
	}
	pt := &participant{app: a}
	r.mu.Lock()
	r.parts[id] = pt // before anything can fail: teardown kills it
	r.mu.Unlock()
	var peer string
	if pt.proxy, err = electdtest.FreeAddr(); err == nil {
		peer, err = electdtest.FreeAddr()
	}
	if err != nil {
		r.fatalf("%v", err)
	}
	cfg.ProxyListen, cfg.ProxyPeer, cfg.ProxyApp, cfg.ProxyHoldTime, cfg.ProxyIdle = pt.proxy, peer, a.Addr, proxyHold, proxyIdle
	if r.spec.PeerRelay {
		// The relay stands in front of the peer port, and the participant
		// publishes the relay as the address its peers forward to.
		if pt.relay, err = zktest.NewProxy(peer); err != nil {
			r.fatalf("peer relay of %s: %v", id, err)
		}
		cfg.ProxyAdvertise = pt.relay.Addr()
	}
}

func (r *run) part(p *electdtest.Proc) *participant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parts[p.Name]
}

// away takes p out of the load before it is stopped, paused or killed, and
// notes when: requests through it from then on are not judged.
func (r *run) away(p *electdtest.Proc) {
	r.mu.Lock()
	r.out[p.Name] = true
	r.gone[p.Name] = append(r.gone[p.Name], time.Now())
	r.mu.Unlock()
	r.retarget()
}

// back puts p into the load again.
func (r *run) back(p *electdtest.Proc) {
	r.mu.Lock()
	delete(r.out, p.Name)
	r.mu.Unlock()
	r.retarget()
}

// pause and resume SIGSTOP and SIGCONT p, out of the load meanwhile.
func (r *run) pause(p *electdtest.Proc) error {
	r.away(p)
	return p.Pause()
}

func (r *run) resume(p *electdtest.Proc) error {
	err := p.Resume()
	r.back(p)
	return err
}

// retarget points the load at the proxies of the live participants that
// are not out.
func (r *run) retarget() {
	live := r.live()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.load == nil {
		return
	}
	var ts []ledger.Target
	for _, p := range live {
		if pt := r.parts[p.Name]; pt != nil && !r.out[p.Name] {
			ts = append(ts, ledger.Target{Name: p.Name, Addr: pt.proxy})
		}
	}
	r.load.Targets(ts...)
}

// warmUp sends a few requests through every live participant's proxy, so
// that what a proxy keeps once it has forwarded is part of its rest, and
// lets the idle connections close.
func (r *run) warmUp() {
	r.t.Helper()
	client := ledger.Client(30 * time.Second)
	defer client.CloseIdleConnections()
	for _, p := range r.live() {
		for i := range 2 {
			req, _ := http.NewRequest(http.MethodGet, "http://"+r.part(p).proxy+"/warm", nil)
			if q := ledger.Do(client, p.Name, fmt.Sprintf("warm-%s-%d", p.Name, i), req); q.Code != http.StatusOK {
				r.fatalf("warming %s's proxy up: %v", p.Name, q)
			}
		}
	}
	time.Sleep(proxyIdle + 500*time.Millisecond)
}

// startTraffic starts the load, once the participants are at rest.
func (r *run) startTraffic() {
	ld := ledger.StartLoad(ledger.LoadConfig{Rate: trafficRate, PostEvery: postEvery, Query: fmt.Sprintf("sleep=%d", appTime.Milliseconds()),
		Timeout: trafficBound + 10*time.Second, Prefix: filepath.Base(r.dir)})
	r.mu.Lock()
	r.load = ld
	r.mu.Unlock()
	r.retarget()
	r.event("traffic: %d requests a second through the proxies, one in %d a POST", trafficRate, postEvery)
}

// stopTraffic ends the load and the applications (teardown).
func (r *run) stopTraffic() {
	r.mu.Lock()
	ld, parts := r.load, r.parts
	r.mu.Unlock()
	if ld != nil {
		ld.Stop()
	}
	for _, pt := range parts {
		if pt.app.Proc != nil {
			pt.app.Proc.Kill()
		}
		if pt.relay != nil {
			pt.relay.Close()
		}
	}
}
