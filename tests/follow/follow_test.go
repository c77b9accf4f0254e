package follow

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// Three electd processes on a real ZooKeeper, each with a small HTTP
// application whose health the test flips (docs/design/handover.md, "Candidacy").
func TestE2EAppHealth(t *testing.T) {
	zk := zktest.Standalone(t)
	const interval, failures = 200 * time.Millisecond, 2
	health := []string{"--app.health_interval", interval.String(), "--app.health_timeout", "100ms",
		"--app.failure_threshold", fmt.Sprint(failures), "--app.success_threshold", "1"}
	apps := []*app{startApp(t, true), startApp(t, true), startApp(t, false)}
	var ps []*electdtest.Member
	for i, a := range apps {
		ps = append(ps, electdtest.StartMember(t, zk, "/e2e/app", fmt.Sprintf("p%d", i), "latch", append(health, "--app.health_url", a.url())...))
	}
	electdtest.WaitOK(t, "/healthz", 30*time.Second, ps...)

	// p2's application has never passed a check: p2 does not stand, and
	// says why, but sees the leader.
	first := electdtest.OneLeader(t, ps[:2], 15*time.Second)
	wait.For(t, 10*time.Second, "p2 to see the leader", func() bool {
		v := ps[2].Leader()
		return v.Leader != nil && v.Leader.ID == first.Name
	})
	if v := ps[2].Leader(); v.Self.Candidate || v.Self.AppHealthy == nil || *v.Self.AppHealthy {
		t.Errorf("p2 with an application never healthy: self %+v, want candidate false, app_healthy false", v.Self)
	}
	if got := ps[2].Reason(); got != "not a candidate (app_unhealthy)" {
		t.Errorf("p2's /healthz/leader reason %q", got)
	}
	// Unknown until failure_threshold checks have failed, then unhealthy.
	wait.For(t, 10*time.Second, "p2's application to be found unhealthy", func() bool { return ps[2].Candidacy().AppHealth == "unhealthy" })
	if c := ps[2].Candidacy(); !c.Candidate || c.Standing || c.AppDetail != "HTTP 503 Service Unavailable" {
		t.Errorf("p2's /candidacy: %+v", c)
	}
	// The follower with a healthy application joins once its first check
	// passes, which may come after all of the above.
	wait.For(t, 10*time.Second, "both healthy participants in the queue", func() bool { return len(first.Queue()) >= 2 })
	if n := len(first.Queue()); n != 2 {
		t.Errorf("%d participants, want 2 (p2 owns no node)", n)
	}
	if v := first.Leader(); !v.Self.Candidate || v.Self.AppHealthy == nil || !*v.Self.AppHealthy {
		t.Errorf("the leader's self %+v", v.Self)
	}

	// The leader's application fails: the other healthy one leads within
	// interval x failure_threshold plus a handoff.
	other := electdtest.Others(ps[:2], first)[0]
	start := time.Now()
	apps[slices.Index(ps, first)].healthy.Store(false)
	wait.For(t, 15*time.Second, other.Name+" to lead", func() bool { return len(electdtest.Leaders(t, ps)) == 1 && other.Leads() })
	t.Logf("app health: %s's application failed; %s led %d ms later (interval %v x threshold %d = %v, plus a handoff)",
		first.Name, other.Name, time.Since(start).Milliseconds(), interval, failures, interval*failures)
	wait.For(t, 5*time.Second, first.Name+"'s reason", func() bool { return first.Reason() == "not a candidate (app_unhealthy)" })
	// The loss is counted by the publisher after the status shows it.
	wait.For(t, 5*time.Second, first.Name+"'s loss counted", func() bool {
		return first.MetricOf("electd_leadership_lost_total", "reason", "app_unhealthy") >= 1
	})
	if got := first.MetricOf("electd_leadership_lost_total", "reason", "app_unhealthy"); got != 1 {
		t.Errorf("%s: electd_leadership_lost_total{reason=app_unhealthy} = %v, want 1", first.Name, got)
	}
	if h, c := first.MetricOf("electd_app_healthy"), first.MetricOf("electd_candidate"); h != 0 || c != 0 {
		t.Errorf("%s: electd_app_healthy %v, electd_candidate %v; want 0 and 0", first.Name, h, c)
	}
	if got := first.MetricOf("electd_app_health_checks_total", "result", "failure"); got < failures {
		t.Errorf("%s: %v failed checks counted, want at least %d", first.Name, got, failures)
	}
	if !first.LogHasWithin(`"msg":"application unhealthy"`, 5*time.Second) || !first.LogHasWithin(`"msg":"not standing for leadership"`, 5*time.Second) {
		t.Errorf("%s logged no change of health and standing", first.Name)
	}

	// Every application fails: nobody leads.
	apps[slices.Index(ps, other)].healthy.Store(false)
	electdtest.NobodyLeads(t, ps, 15*time.Second)

	// One recovers: it leads, joining an empty queue.
	apps[2].healthy.Store(true)
	if l := electdtest.OneLeader(t, ps, 15*time.Second); l != ps[2] {
		t.Errorf("%s leads, want p2", l.Name)
	}
	if v := ps[2].Leader(); !v.Self.Candidate || !*v.Self.AppHealthy {
		t.Errorf("p2 recovered: self %+v", v.Self)
	}
}

// election.candidate: false observes; POST /candidacy withdraws and
// restores at run time (docs/design/handover.md, "Candidacy").
func TestE2ECandidacy(t *testing.T) {
	zk := zktest.Standalone(t)
	p0 := electdtest.StartMember(t, zk, "/e2e/candidacy", "p0", "latch")
	electdtest.WaitOK(t, "/healthz", 30*time.Second, p0)
	electdtest.OneLeader(t, []*electdtest.Member{p0}, 15*time.Second)
	p1 := electdtest.StartMember(t, zk, "/e2e/candidacy", "p1", "latch")
	obs := electdtest.StartMember(t, zk, "/e2e/candidacy", "observer", "latch", "--election.candidate", "false")
	ps := []*electdtest.Member{p0, p1, obs}
	// /readyz: p1 has joined (its node is in the queue), the observer watches.
	electdtest.WaitOK(t, "/readyz", 30*time.Second, p1, obs)
	electdtest.CheckAgreement(t, ps, p0) // the observer's /leader is current
	if n := len(p0.Queue()); n != 2 {
		t.Errorf("%d participants, want 2: the observer owns no node", n)
	}
	if got := obs.Reason(); got != "not a candidate (withdrawn)" {
		t.Errorf("observer's reason %q", got)
	}
	if c := obs.Candidacy(); c.Candidate || c.Standing || c.AppHealth != "disabled" {
		t.Errorf("observer's /candidacy %+v", c)
	}
	events := streamEvents(t, obs)
	if e := <-events; !strings.Contains(e, `"leader":{"id":"p0"`) {
		t.Fatalf("observer's first /events data: %s", e)
	}

	// Bad requests are 4xx JSON errors, through the real server.
	for _, c := range []struct {
		token, body string
		code        int
		want        string
	}{
		{"", `{"candidate": false}`, 401, "missing bearer token"},
		{electdtest.AdminToken, `{"candidate": "no"}`, 400, `\"candidate\" is a JSON string, not true or false`},
		{electdtest.AdminToken, `{"candidate": false, "now": true}`, 400, `unknown field`},
		{electdtest.AdminToken, `{"candidate": false}` + strings.Repeat(" ", 1000), 413, "larger than 256 bytes"},
	} {
		code, b := p0.Post("/candidacy", c.token, c.body)
		if code != c.code || !strings.Contains(string(b), c.want) || !json.Valid(b) {
			t.Errorf("POST /candidacy %q: %d %s, want %d with %q", c.body, code, b, c.code, c.want)
		}
	}
	if !p0.Leads() {
		t.Fatal("a bad request changed leadership")
	}

	// The leader withdraws: it hands over as on release, at once.
	start := time.Now()
	code, b := p0.Post("/candidacy", electdtest.AdminToken, `{"candidate": false}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"candidate":false,"standing":false,"pending":false`) {
		t.Fatalf("POST /candidacy false on the leader: %d %s", code, b)
	}
	if l := electdtest.OneLeader(t, ps, 10*time.Second); l != p1 {
		t.Fatalf("%s leads after the withdrawal, want p1", l.Name)
	}
	t.Logf("candidacy: p0 withdrew; p1 led %d ms after the request", time.Since(start).Milliseconds())
	if e := nextEvent(t, events, `"leader":{"id":"p1"`); e == "" {
		t.Error("the observer's /events did not name p1")
	}
	wait.For(t, 5*time.Second, "p0's loss counted", func() bool {
		return p0.MetricOf("electd_leadership_lost_total", "reason", "withdrawn") >= 1
	})
	if got := p0.MetricOf("electd_leadership_lost_total", "reason", "withdrawn"); got != 1 {
		t.Errorf("electd_leadership_lost_total{reason=withdrawn} = %v", got)
	}
	if !p0.LogHasWithin(`"msg":"candidacy set on request"`, 5*time.Second) {
		t.Error("p0 did not log the request")
	}

	// Restored, p0 and the observer join at the back.
	for _, p := range []*electdtest.Member{p0, obs} {
		if code, b := p.Post("/candidacy", electdtest.AdminToken, `{"candidate":true}`); code != http.StatusOK || !strings.Contains(string(b), `"standing":true`) {
			t.Fatalf("%s: POST /candidacy true: %d %s", p.Name, code, b)
		}
	}
	wait.For(t, 10*time.Second, "three participants", func() bool { return len(p1.Queue()) == 3 })
	if parts := p1.Queue(); parts[0].ID != "p1" {
		t.Errorf("queue %+v, want p1 first", parts)
	}
	if !p1.Leads() || obs.Candidacy().Reason != "following p1" {
		t.Error("the restored participants took leadership or do not follow p1")
	}
}

// streamEvents reads p's /events and sends each data line.
func streamEvents(t *testing.T, p *electdtest.Member) <-chan string {
	t.Helper()
	resp, err := (&http.Client{}).Get("http://" + p.Addr + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- d
			}
		}
	}()
	return ch
}

// nextEvent returns the first data line holding want within 10s, or "".
func nextEvent(t *testing.T, ch <-chan string, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ch:
			if strings.Contains(e, want) {
				return e
			}
		case <-deadline:
			return ""
		}
	}
}

// POST /leader/release?to=<id> through the real binary (the engine's
// protocol has its own real-server tests in internal/election).
func TestE2ESwitchover(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/switchover", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	wait.For(t, 10*time.Second, "the full queue", func() bool { return len(leader.Queue()) == 3 })
	queue := leader.Queue()
	last := electdtest.ByID(ps, queue[2].ID)
	before, _ := leader.LeaderNow()

	// To an unknown id, or on a follower: 409 with the reason; nothing changes.
	if code, b := leader.Request(http.MethodPost, "/leader/release?to=nobody", electdtest.AdminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "nobody") {
		t.Errorf("switchover to an unknown id: %d %s, want 409 naming it", code, b)
	}
	if code, b := last.Request(http.MethodPost, "/leader/release?to=p0", electdtest.AdminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "not the leader") {
		t.Errorf("switchover on a follower: %d %s, want 409", code, b)
	}
	if !leader.Leads() {
		t.Fatal("a refused switchover changed leadership")
	}

	// To the last in the queue: it leads next, not the one behind the leader.
	start := time.Now()
	code, b := leader.Request(http.MethodPost, "/leader/release?to="+last.Name, electdtest.AdminToken)
	if code != http.StatusAccepted || !strings.Contains(string(b), `"to":"`+last.Name+`"`) {
		t.Fatalf("switchover to %s: %d %s", last.Name, code, b)
	}
	if l := electdtest.OneLeader(t, ps, 10*time.Second); l != last {
		t.Fatalf("%s leads after a switchover to %s", l.Name, last.Name)
	}
	t.Logf("switchover: %s -> %s (the last of three) in %d ms", leader.Name, last.Name, time.Since(start).Milliseconds())
	after, _ := last.LeaderNow()
	if after.Leader.FencingToken <= before.Leader.FencingToken {
		t.Errorf("fencing token %d after the switchover, %d before", after.Leader.FencingToken, before.Leader.FencingToken)
	}
	electdtest.CheckAgreement(t, ps, last)

	// electd release --to does the same from the command line.
	status, stdout, stderr := electdtest.Run(t, []string{"ELECTD_HTTP_ADMIN_TOKEN=" + electdtest.AdminToken}, "release", "--addr", last.Addr, "--to", leader.Name).Outcome()
	t.Logf("electd release --to %s:\n%s%s", leader.Name, stdout, stderr)
	if status != 0 || electdtest.OneLeader(t, ps, 10*time.Second) != leader {
		t.Errorf("electd release --to %s: status %d", leader.Name, status)
	}

	// Race mode has no queue: 409.
	race := electdtest.StartThree(t, zk, "/e2e/switchover-race", "race")
	rl := electdtest.OneLeader(t, race, 15*time.Second)
	if code, b := rl.Request(http.MethodPost, "/leader/release?to="+electdtest.Others(race, rl)[0].Name, electdtest.AdminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "race") {
		t.Errorf("switchover in race mode: %d %s, want 409", code, b)
	}
	if !rl.Leads() {
		t.Error("a refused switchover in race mode changed leadership")
	}
}
