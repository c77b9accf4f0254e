package alerts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/zktest"
)

const (
	// holdTime is how long the sidecars' proxies hold a request while no
	// leader is known before they answer 503.
	holdTime = 2 * time.Second
	// proxyIdle closes the proxies' kept-alive connections (the clients',
	// to the leader's proxy, to the application) a second after the last
	// request, so that the sidecars hold what they held at rest again.
	proxyIdle = time.Second
)

// notOneLeader: three sidecars with their forwarding proxies and
// applications, on a ZooKeeper of their own. ZooKeeper stops: the leader's
// lease lapses, nobody can lead, and ElectdNotOneLeader fires with 0;
// ZooKeeper starts again, a sidecar leads, the alert resolves. Then a
// sidecar of the same election path on another ensemble (the suite's
// ZooKeeper) leads there too: the alert fires with 2, and resolves when
// that sidecar stops. The dashboard's values are checked at rest, during
// the outage and after it, with requests going through the proxies all
// along.
func notOneLeader(t *testing.T, s *suite) {
	const path = "/alerts/leaders"
	zk := zktest.Start(t, zktest.Options{})
	var cfgs []*electdtest.Config
	for i := 1; i <= 3; i++ {
		listen, err := electdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, &electdtest.Config{ID: fmt.Sprintf("lead-%d", i), Servers: zk.Servers(),
			ProxyListen: listen, ProxyApp: startApp(t), ProxyHoldTime: holdTime, ProxyIdle: proxyIdle})
	}
	g := s.start(t, "leaders", path, cfgs...)
	g.settled(t)
	d := loadDashboard(t, path)
	begin := time.Now()

	traffic := startTraffic(t, cfgs)
	atRest(t, s, d)

	// No leader: ZooKeeper stops.
	began := time.Now()
	if err := zk.Member(1).Stop(); err != nil {
		t.Fatal(err)
	}
	pending, firing := s.fired(t, "ElectdNotOneLeader", g, nil, began, func(v float64) bool { return v == 0 })
	duringOutage(t, s, d)
	ended := time.Now()
	if err := zk.Member(1).Start(); err != nil {
		t.Fatal(err)
	}
	resolved := s.resolved(t, "ElectdNotOneLeader", g)
	g.leader(t, nil)
	s.log.add(event{alert: "ElectdNotOneLeader", fault: "no leader: ZooKeeper stopped",
		pending: since(began, pending), firing: firing.Sub(began), resolved: resolved.Sub(ended)})
	afterOutage(t, s, d, ended)
	t.Logf("requests through the proxies: %s", traffic.stop())
	g.idleAgain(t)

	// Two leaders: the same election path on another ensemble.
	began = time.Now()
	other := g.add(t, &electdtest.Config{ID: "lead-elsewhere"}) // the suite's ZooKeeper
	pending, firing = s.fired(t, "ElectdNotOneLeader", g, nil, began, func(v float64) bool { return v == 2 })
	ended = time.Now()
	g.remove(t, other)
	resolved = s.resolved(t, "ElectdNotOneLeader", g)
	s.log.add(event{alert: "ElectdNotOneLeader", fault: "two leaders: a sidecar of the path on another ensemble",
		pending: since(began, pending), firing: firing.Sub(began), resolved: resolved.Sub(ended)})

	s.everyQueryAnswers(t, d, begin)
}

// atRest checks the dashboard with one leader of three, requests flowing.
func atRest(t *testing.T, s *suite, d *dashboard) {
	t.Helper()
	timeout := sessionTimeout.Seconds()
	s.expect(t, d, "at rest",
		panelValue{"Leaders now", "A", "1", each(1, is(1))},
		panelValue{"Participants", "A", "3", each(1, is(3))},
		panelValue{"Leader's lease remaining", "A", "a lease within the session timeout", each(1, within(0, timeout))},
		panelValue{"Who leads, per pod", "A", "one pod of three", func(v model.Vector) bool { return each(3, nil01)(v) && total(is(1))(v) }},
		panelValue{"ZooKeeper session state, per pod", "A", "connected (1) everywhere", each(3, is(1))},
		panelValue{"Lease remaining, per pod", "B", "the session timeout", each(1, is(timeout))},
		panelValue{"Participants and fencing token", "A", "3", each(1, is(3))},
		panelValue{"Participants and fencing token", "B", "a fencing token", each(1, above(0))},
		panelValue{"ZooKeeper sessions", "B", "no reconnection", each(3, is(0))},
		panelValue{"Queue re-checks, per pod", "A", "none", each(3, is(0))},
		panelValue{"ZooKeeper requests, by operation", "A", "none, read or write", each(2, is(0))},
		panelValue{"ZooKeeper requests, by operation", "B", "none", each(1, is(0))},
		panelValue{"Goroutines, per pod", "A", "some, per pod", each(3, above(0))},
		panelValue{"Versions", "A", "three sidecars of one version", each(1, is(3))},
		panelValue{"Proxy requests, by result", "A", "requests answered (ok)", with("result", "ok", above(0))},
		panelValue{"Proxy: waiting for a leader", "A", "none held", each(1, is(0))},
		panelValue{"Proxy: forward latency", "B", "followers' forwards to the leader", with("target", "leader", above(0))},
		panelValue{"Proxy: forward latency", "B", "the leader's requests to its application", with("target", "app", above(0))},
	)
}

// duringOutage checks the dashboard while ZooKeeper is down.
func duringOutage(t *testing.T, s *suite, d *dashboard) {
	t.Helper()
	s.expect(t, d, "ZooKeeper down",
		panelValue{"Leaders now", "A", "0", each(1, is(0))},
		panelValue{"Who leads, per pod", "A", "nobody", each(3, is(0))},
		panelValue{"Leader's lease remaining", "A", "no leader, no lease", none},
		panelValue{"Lease remaining, per pod", "A", "no lease anywhere", each(3, is(0))},
		panelValue{"ZooKeeper session state, per pod", "A", "no pod connected", each(3, not(1))},
		panelValue{"Proxy: waiting for a leader", "A", "requests held", each(1, above(0))},
		panelValue{"Proxy requests, by result", "A", "503 after the hold time (no_leader)", with("result", "no_leader", above(0))},
		panelValue{"Proxy: waiting for a leader", "B", "how long requests waited", each(1, above(0))},
	)
}

// afterOutage checks the dashboard once ZooKeeper is back (since back) and
// one sidecar leads.
func afterOutage(t *testing.T, s *suite, d *dashboard, back time.Time) {
	t.Helper()
	s.expect(t, d, "ZooKeeper back",
		panelValue{"Leaders now", "A", "1", each(1, is(1))},
		panelValue{"ZooKeeper session state, per pod", "A", "connected (1) everywhere", each(3, is(1))},
	)
	// The reconnections' own work shows for a few seconds: what the
	// panels showed since ZooKeeper came back.
	s.expectSince(t, d, "ZooKeeper back", back,
		// Within its session, or, when the outage outlasted it, in a new
		// one: either way the panel shows each pod's.
		panelValue{"ZooKeeper sessions", "A B", "every pod reconnected or its session expired", members(3, above(0))},
		panelValue{"Queue re-checks, per pod", "A", "the re-checks after reconnecting", each(3, above(0))},
		panelValue{"ZooKeeper requests, by operation", "A", "reads after reconnecting", with("op", "read", above(0))},
	)
}

// nil01 accepts 0 and 1.
func nil01(v float64) bool { return v == 0 || v == 1 }

// startApp runs an application for a sidecar's proxy, on loopback, and
// returns its host:port.
func startApp(t *testing.T) string {
	t.Helper()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	t.Cleanup(app.Close)
	return strings.TrimPrefix(app.URL, "http://")
}

// traffic sends requests through the proxies of cfgs, three at a time, one
// proxy after the other, until stop; stop returns the answers by status.
type traffic struct {
	stop func() string
}

func startTraffic(t *testing.T, cfgs []*electdtest.Config) traffic {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 2 * holdTime}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				url := "http://" + cfgs[i%len(cfgs)].ProxyListen + "/"
				what := "error"
				if resp, err := client.Get(url); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					what = resp.Status
				}
				mu.Lock()
				counts[what]++
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return traffic{stop: func() string {
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(counts)
	}}
}
