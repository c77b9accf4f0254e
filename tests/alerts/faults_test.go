package alerts

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/curatortest"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/zktest"
)

// flapping: leadership released four times in a row, as an operator's
// script gone wrong would, moves it four times inside the (sped-up) window
// of ElectdLeadershipFlapping, which fires at the fourth and resolves when
// the first has left the window. The election's ZooKeeper work is no busy
// election meanwhile: a handful of requests per change.
func flapping(t *testing.T, s *suite) {
	g := s.start(t, "flapping", "/alerts/flapping",
		&electdtest.Config{ID: "flap-1"}, &electdtest.Config{ID: "flap-2"}, &electdtest.Config{ID: "flap-3"})
	l := g.settled(t)

	began := time.Now()
	for i := 1; i <= 4; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := release(ctx, l)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		l = g.leader(t, l)
		t.Logf("release %d: %s leads", i, l.Name)
	}
	ended := time.Now()
	_, firing := s.fired(t, "ElectdLeadershipFlapping", g, nil, began, func(v float64) bool { return v >= 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if as, err := s.alerts(ctx, "ElectdElectionBusy", g.path); err != nil || len(as) > 0 {
		t.Errorf("four leader changes made the election busy: %s (%v)", describe(as), err)
	}
	resolved := s.resolved(t, "ElectdLeadershipFlapping", g)
	s.log.add(event{alert: "ElectdLeadershipFlapping", fault: "4 releases (POST /leader/release)",
		firing: firing.Sub(began), resolved: resolved.Sub(ended)})
	g.idleAgain(t)
}

// misconfigured: a Curator LeaderSelector joins the path of an electd
// latch. The latch sees the selector's node (of the other recipe), steps
// down and refuses the path; ElectdMisconfigured fires at once. The
// selector closes, the latch finds the path clean at its next look (every
// 2 s), leads again, and the alert resolves.
func misconfigured(t *testing.T, s *suite) {
	g := s.start(t, "misconfigured", "/alerts/misconfigured",
		&electdtest.Config{ID: "misc-1", Mode: "latch"}, &electdtest.Config{ID: "misc-2", Mode: "latch"})
	g.settled(t)

	curatortest.Compile(t) // once per machine, and minutes on a busy one: not part of the fault
	began := time.Now()
	c := curatortest.Start(t, s.zk.ConnectString(), g.path, curatortest.Selector, "curator-selector", 0)
	_, firing := s.fired(t, "ElectdMisconfigured", g, nil, began, func(v float64) bool { return v == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	resolved := s.resolved(t, "ElectdMisconfigured", g)
	g.leader(t, nil)
	s.log.add(event{alert: "ElectdMisconfigured", fault: "a Curator LeaderSelector on a latch's path",
		firing: firing.Sub(began), resolved: resolved.Sub(ended)})
	g.idleAgain(t)
}

// slowRenewals: each sidecar reaches ZooKeeper through a fault proxy, which
// then holds every reply for 1.5 s: the lease renewals (sync round-trips)
// take longer than their interval, a tenth of the 10 s session timeout, but
// well inside the lease (6.4 s) and the client's read timeout (6.7 s), so
// the leader keeps leading. ElectdLeaseRenewalSlow fires for the leader, and
// resolves once the replies are prompt again and the slow renewals have
// left the window.
func slowRenewals(t *testing.T, s *suite) {
	const delay = 1500 * time.Millisecond
	var proxies []*zktest.Proxy
	var cfgs []*electdtest.Config
	for i := 1; i <= 2; i++ {
		px, err := zktest.NewProxy(s.zk.Servers()[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		proxies = append(proxies, px)
		cfgs = append(cfgs, &electdtest.Config{ID: fmt.Sprintf("slow-%d", i), Servers: []string{px.Addr()}})
	}
	g := s.start(t, "renewals", "/alerts/renewals", cfgs...)
	l := g.settled(t)

	began := time.Now()
	for _, px := range proxies {
		px.Delay(delay)
	}
	pending, firing := s.fired(t, "ElectdLeaseRenewalSlow", g, []string{l.Addr}, began,
		func(v float64) bool { return v >= sessionTimeout.Seconds()/10 })
	for _, px := range proxies {
		px.Delay(0)
	}
	ended := time.Now()
	resolved := s.resolved(t, "ElectdLeaseRenewalSlow", g)
	s.log.add(event{alert: "ElectdLeaseRenewalSlow", fault: fmt.Sprintf("ZooKeeper's replies delayed %v (fault proxy)", delay),
		pending: since(began, pending), firing: firing.Sub(began), resolved: resolved.Sub(ended)})
	g.idleAgain(t)
}

// busy: in one mode, candidates and an observer, and leadership released
// again as soon as someone leads, a few times a second, until
// ElectdElectionBusy fires for every one of them: each change makes every
// participant read the election again (the next in line re-checks the
// queue, race followers race again, observers read the new leader).
// Released no more, the election settles and the alert resolves. Race mode
// has three candidates: one that released stays out of the race for half a
// second, so with two the releases would wait for it.
func busy(mode string) func(*testing.T, *suite) {
	return func(t *testing.T, s *suite) {
		candidates := 2
		if mode == "race" {
			candidates = 3
		}
		var cfgs []*electdtest.Config
		for i := 1; i <= candidates; i++ {
			cfgs = append(cfgs, &electdtest.Config{ID: fmt.Sprintf("%s-%d", mode, i), Mode: mode})
		}
		cfgs = append(cfgs, &electdtest.Config{ID: mode + "-observer", Mode: mode, Observer: true})
		g := s.start(t, "busy-"+mode, "/alerts/busy-"+mode, cfgs...)
		g.settled(t)

		began := time.Now()
		stop := releaseLoop(g)
		pending, firing := s.fired(t, "ElectdElectionBusy", g, g.addrs(), began, func(v float64) bool { return v > 5 })
		n := stop()
		ended := time.Now()
		t.Logf("%d releases in %v", n, ended.Sub(began).Round(time.Millisecond))
		resolved := s.resolved(t, "ElectdElectionBusy", g)
		g.leader(t, nil)
		s.log.add(event{alert: "ElectdElectionBusy", fault: fmt.Sprintf("%s: leadership released %.1f times a second", mode, float64(n)/ended.Sub(began).Seconds()),
			pending: since(began, pending), firing: firing.Sub(began), resolved: resolved.Sub(ended)})
		g.idleAgain(t)
	}
}

// releaseGap is how often the release loop asks: at most five changes a
// second, each costing every participant a few requests (an observer 2 to
// 3), twice the rate ElectdElectionBusy looks for.
const releaseGap = 200 * time.Millisecond

// releaseLoop asks every candidate of g to release leadership every
// releaseGap, all at once, until stop is called; the leader does, the
// others answer 409. stop returns how many releases there were.
func releaseLoop(g *group) (stop func() int) {
	var candidates []*electdtest.Proc
	for _, p := range g.procs {
		if !strings.HasSuffix(p.Name, "-observer") {
			candidates = append(candidates, p)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(releaseGap)
		defer tick.Stop()
		for ctx.Err() == nil {
			var round sync.WaitGroup
			for _, p := range candidates {
				round.Add(1)
				go func() {
					defer round.Done()
					rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
					defer rcancel()
					if release(rctx, p) == nil {
						mu.Lock()
						n++
						mu.Unlock()
					}
				}()
			}
			round.Wait()
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return func() int {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
