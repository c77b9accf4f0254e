package forward

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
)

// A scenario moves leadership away from the leader l while the load runs,
// and returns when it is done (a new leader may not be settled yet).
type scenario struct {
	name string
	do   func(c *cluster, l *member)
	// graceful scenarios fail no request; the others may fail what was
	// in flight to the dead leader (crash) or answer a clean 503 (cut off).
	graceful bool
	// unproven says which POSTs an application that stops on its own may
	// fail, each with a clean 502 or 503 saying it may or may not have been
	// processed, and run nowhere else; nothing else may fail. "unread":
	// over HTTP/1.1 it drops what it reads after its shutdown began, which
	// no proxy can prove unprocessed, and those never ran. "ran": over
	// HTTP/2 its GOAWAY proves what it never took, which goes to the new
	// leader, and what may fail is the answer of one it ran (net/http's
	// HTTP/2 server may close an idle connection before its last frame is
	// written). "": none may fail.
	unproven string
	// after restores what the scenario stopped, once a new leader leads.
	after func(c *cluster, l *member)
	// judge checks a scenario that is not graceful, whose fault began at
	// at and was done (the signal sent, the cut made) at done.
	judge func(t *testing.T, c *cluster, results []Result, at, done time.Time)
}

// fenced fails the test for any request answered by a participant that
// did not lead at that moment.
func (c *cluster) fenced() {
	c.t.Helper()
	if v := c.fence.Violations(); len(v) > 0 {
		c.t.Fatalf("%d requests answered by a participant that did not lead; first: %s", len(v), v[0])
	}
}

// TestForwardingThroughHandovers runs three electd processes with their
// proxies and applications on real ZooKeeper, and sends about 300 requests
// a second through every proxy while leadership moves in each way it can.
// Throughout, no application sees a request that its participant did not
// lead for at that moment (the fence), and every request gets an answer,
// or a clean 503 with Retry-After, within the hold time; graceful
// hand-overs fail none. After each, every participant is back at rest.
func TestForwardingThroughHandovers(t *testing.T) {
	c := startCluster(t, 3, nil)
	run(t, c, scenarios(t, "unread"))
}

// TestForwardingResendUnreadBody: with proxy.resend_unread_body, which
// suits this application (it reads every body before it acts), an
// application that stops on its own loses nothing either: what it dropped
// unread goes to the new leader.
func TestForwardingResendUnreadBody(t *testing.T) {
	c := startCluster(t, 3, func(cfg *electdtest.Config) { cfg.ProxyResendUnread = true })
	run(t, c, appStops(t, ""))
}

// TestForwardingH2CApplicationStops: an application that speaks HTTP/2
// without TLS, with proxy.app_protocol h2c, stops on its own and loses no
// request it never took: its GOAWAY names the last one it took, and the
// rest go to the new leader (docs/design/proxy-app.md, "Forwarding": hand-overs).
func TestForwardingH2CApplicationStops(t *testing.T) {
	c := startClusterWith(t, 3, options{h2c: true})
	run(t, c, appStops(t, "ran"))
}

// appStops are the scenarios in which the application stops on its own,
// with unproven as given.
func appStops(t *testing.T, unproven string) []scenario {
	var stops []scenario
	for _, sc := range scenarios(t, "unread") {
		if sc.unproven != "" {
			sc.unproven = unproven
			stops = append(stops, sc)
		}
	}
	return stops
}

// scenarios are the ways leadership moves; app-stop ones fail as
// unproven says.
func scenarios(t *testing.T, unproven string) []scenario {
	return []scenario{
		{name: "SIGTERM", graceful: true, do: func(c *cluster, l *member) {
			if err := l.proc.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			c.pool.Remove(l.name) // its endpoint goes while it forwards (shutdown_grace)
		}, after: func(c *cluster, l *member) {
			if err, ok := l.proc.Wait(patience); !ok || err != nil {
				t.Fatalf("%s after SIGTERM: exit %v (exited %v)", l.name, err, ok)
			}
			c.start(l)
		}},
		{name: "release", graceful: true, do: func(c *cluster, l *member) {
			c.post(l, "/leader/release")
		}},
		{name: "switchover", graceful: true, do: func(c *cluster, l *member) {
			to := c.follower(l, 1) // not the next in line: the switchover moves it ahead
			c.post(l, "/leader/release?to="+to.name)
		}},
		{name: "the application stops, then starts again", graceful: true, unproven: unproven, do: func(c *cluster, l *member) {
			c.stopApp(l)
		}, after: func(c *cluster, l *member) {
			if err := l.app.Restart(); err != nil {
				t.Fatal(err)
			}
			waitStanding(t, l) // it stands again once its application takes connections
		}},
		{name: "pod deletion: the application stops, then electd gets SIGTERM", graceful: true, unproven: unproven, do: func(c *cluster, l *member) {
			c.stopApp(l)
			if err := l.proc.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			c.pool.Remove(l.name)
		}, after: func(c *cluster, l *member) {
			if err, ok := l.proc.Wait(patience); !ok || err != nil {
				t.Fatalf("%s after SIGTERM: exit %v (exited %v)", l.name, err, ok)
			}
			if err := l.app.Restart(); err != nil {
				t.Fatal(err)
			}
			c.start(l)
		}},
		{name: "SIGKILL", do: func(c *cluster, l *member) {
			c.pool.Drop(l.name) // its endpoint goes with it; what was in flight through it is lost
			if err := l.proc.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, after: func(c *cluster, l *member) {
			l.proc.Wait(patience)
			c.start(l)
		}, judge: judgeCrash},
		{name: "ZooKeeper cut off from the leader", do: func(c *cluster, l *member) {
			l.cut = true
			l.zk.Blackhole()
		}, after: func(c *cluster, l *member) {
			l.cut = false
			l.zk.Heal()
			waitStanding(t, l) // back, a follower in a new session
		}, judge: judgeCutOff},
	}
}

// run runs the scenarios one after another on c.
func run(t *testing.T, c *cluster, scs []scenario) {
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			c.t = t
			l := c.settled(nil)
			ld := c.load()
			wait.For(t, patience, "requests before the fault", func() bool { return ld.Count() >= 60 })
			at := time.Now()
			sc.do(c, l)
			done := time.Now()
			nl := c.settled(l)
			took := time.Since(at)
			// The load goes on through the new leader for a while.
			n := ld.Count()
			wait.For(t, patience, "requests after the hand-over", func() bool { return ld.Count() >= n+60 })
			results := ld.Stop()
			if len(results) < 120 {
				t.Fatalf("only %d requests were sent", len(results))
			}
			failed := Failed(results)
			if sc.unproven != "" {
				failed = judgeUnproven(t, c.fence, failed, sc.unproven == "ran")
			}
			t.Logf("%s -> %s in %v; %d requests, %d failed, slowest %v", l.name, nl.name, took.Round(time.Millisecond),
				len(results), len(failed), Slowest(results).Round(time.Millisecond))
			for _, r := range results {
				if r.Latency() > holdTime+slack {
					t.Errorf("answered after %v, past the hold time: %v", r.Latency(), r)
				}
			}
			switch {
			case sc.graceful && len(failed) > 0:
				t.Errorf("%d of %d requests failed in a graceful hand-over; first: %v", len(failed), len(results), failed[0])
			case !sc.graceful:
				sc.judge(t, c, results, at, done)
			}
			c.fenced()
			mark := time.Now()
			if sc.after != nil {
				sc.after(c, l)
			}
			restored := time.Since(mark)
			c.idle()
			c.fenced()
			t.Logf("restored in %v, at rest %v later", restored.Round(time.Millisecond), (time.Since(mark) - restored).Round(time.Millisecond))
		})
		if t.Failed() {
			return
		}
	}
}

// judgeUnproven returns the failures that are not POSTs answered a clean
// 502 or 503 saying they may or may not have been processed, and that ran
// (or did not) as ran says, and logs how many were.
func judgeUnproven(t *testing.T, fence *Fence, failed []Result, ran bool) []Result {
	var rest []Result
	maybe := 0
	for _, r := range failed {
		if r.Post && r.Err == nil && (r.Code == http.StatusBadGateway || r.Code == http.StatusServiceUnavailable) &&
			strings.Contains(r.Body, "may or may not have been processed") && fence.Ran(r.ID) == ran {
			maybe++
			continue
		}
		rest = append(rest, r)
	}
	if maybe > 0 {
		how := "the application dropped them unread"
		if ran {
			how = "the application ran them and its server lost the answers"
		}
		t.Logf("%d POSTs answered that they may or may not have been processed (%s)", maybe, how)
	}
	return rest
}

// follower is a running member other than l: the i-th in the members'
// order.
func (c *cluster) follower(l *member, i int) *member {
	var fs []*member
	for _, m := range c.members {
		if m != l && m.proc.Alive() {
			fs = append(fs, m)
		}
	}
	return fs[i%len(fs)]
}

// stopApp stops l's application as a Go application stops on SIGTERM.
func (c *cluster) stopApp(l *member) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := l.app.Stop(ctx); err != nil {
		c.t.Fatal(err)
	}
}

// waitStanding waits until m is joined and stands again.
func waitStanding(t *testing.T, m *member) {
	t.Helper()
	wait.For(t, patience, m.name+" to stand and join again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := m.proc.View(ctx)
		return err == nil && v.Self.Candidate && v.Self.State == "connected"
	})
}

// judgeCrash lets fail what was in flight to the dead leader: a request
// sent before the crash (before the SIGKILL was sent: the load's pool may
// have picked the dead proxy just before it was dropped) and answered after
// the fault began (through the dead proxy itself, or forwarded to it). What
// was sent after the crash waits for the new leader, but for a forward
// written to the dead leader's connection before its peer learnt of the
// crash: the reset that tells the peer cannot say whether the leader took
// it before it died, so it ends as "may or may not have been processed",
// and the fence shows it ran nowhere.
func judgeCrash(t *testing.T, c *cluster, results []Result, at, done time.Time) {
	t.Helper()
	lost, unproven := 0, 0
	for _, r := range Failed(results) {
		switch {
		case r.Start.Before(done) && r.End.After(at):
			lost++
			t.Logf("lost in flight: %v", r)
		case r.Err == nil && r.Code == http.StatusServiceUnavailable &&
			strings.Contains(r.Body, "the leader's proxy stopped answering") &&
			strings.Contains(r.Body, "may or may not have been processed") && !c.fence.Ran(r.ID):
			unproven++
			t.Logf("written to the dead leader before its peer knew, ran nowhere: %v", r)
		default:
			t.Errorf("failed, not in flight at the crash: %v", r)
		}
	}
	t.Logf("lost in flight at the crash: %d; written to the dead leader after it: %d", lost, unproven)
}

// judgeCutOff lets requests fail only with a clean 503 (with Retry-After):
// what the leader cut off from ZooKeeper held, and POSTs cut from it as the
// others learnt of the new leader.
func judgeCutOff(t *testing.T, _ *cluster, results []Result, _, _ time.Time) {
	t.Helper()
	n := 0
	for _, r := range Failed(results) {
		if !Clean503(r) {
			t.Errorf("failed, not with a clean 503: %v", r)
			continue
		}
		n++
	}
	if n > 0 {
		t.Logf("clean 503s while the leader was cut off: %d; e.g. %s", n, strings.TrimSpace(Failed(results)[0].Body))
	}
}

// In selector mode leadership rotates at the end of every term, a
// hand-over the election starts on its own: it goes through the proxy's
// Yield too (election.Config.TermEnd), and fails no request.
func TestForwardingThroughSelectorTerms(t *testing.T) {
	const term = 300 * time.Millisecond
	c := startCluster(t, 3, func(cfg *electdtest.Config) { cfg.Mode, cfg.Term = "selector", term })
	first := c.settled(nil)
	ld := c.load()
	start := c.fence.Max()
	wait.For(t, patience, "several terms", func() bool { return c.fence.Max() >= start+5 && ld.Count() >= 600 })
	results := ld.Stop()
	failed := Failed(results)
	t.Logf("from %s: %d requests over %d leaderships, %d failed, slowest %v", first.name, len(results),
		c.leaderships(), len(failed), Slowest(results).Round(time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("%d of %d requests failed as terms ended; first: %v", len(failed), len(results), failed[0])
	}
	if v := c.fence.Violations(); len(v) > 0 {
		t.Fatalf("%d requests answered by a participant that did not lead; first: %s", len(v), v[0])
	}
}

// A leader whose application hangs (it takes connections and answers
// nothing) hands leadership on: an answer timeout starts its proxy's own
// checks (HEAD /, which hangs too), and proxy.app_timeout_stepdown (3)
// failed in a row step it down. Every
// request ends within the hold time plus the response timeout: those the
// hung application had end 504, POSTs forwarded to it may end with a clean
// 503, the rest go to the new leader. Then the application answers again,
// its participant stands again, and everyone is back at rest.
func TestForwardingHungApplication(t *testing.T) {
	const response = 500 * time.Millisecond
	c := startCluster(t, 3, func(cfg *electdtest.Config) { cfg.ProxyResponseTimeout = response })
	l := c.settled(nil)
	ld := c.load()
	wait.For(t, patience, "requests before the fault", func() bool { return ld.Count() >= 60 })
	at := time.Now()
	l.app.Hang()
	t.Cleanup(l.app.Unhang)
	nl := c.settled(l)
	took := time.Since(at)
	n := ld.Count()
	wait.For(t, patience, "requests after the hand-over", func() bool { return ld.Count() >= n+60 })
	results := ld.Stop()
	l.app.Unhang()
	t.Logf("%s's application hung: %s leads %v later; %d requests, %d failed, slowest %v", l.name, nl.name,
		took.Round(time.Millisecond), len(results), len(Failed(results)), Slowest(results).Round(time.Millisecond))
	for _, r := range results {
		if r.Latency() > holdTime+response+slack {
			t.Errorf("answered after %v, past the hold time and the response timeout: %v", r.Latency(), r)
		}
	}
	for _, r := range Failed(results) {
		if r.Err != nil || r.Code != http.StatusGatewayTimeout && !Clean503(r) {
			t.Errorf("failed, not with a 504 or a clean 503: %v", r)
		}
	}
	if v := c.fence.Violations(); len(v) > 0 {
		t.Fatalf("%d violations; first: %s", len(v), v[0])
	}
	waitStanding(t, l)
	c.idle()
}
