package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Three electd processes on a real ZooKeeper, each with a small HTTP
// application whose health the test flips (docs/DESIGN.md, "Candidacy").
func TestE2EAppHealth(t *testing.T) {
	zk := startZK(t)
	const interval, failures = 200 * time.Millisecond, 2
	health := []string{"--app.health_interval", interval.String(), "--app.health_timeout", "100ms",
		"--app.failure_threshold", fmt.Sprint(failures), "--app.success_threshold", "1"}
	apps := []*app{startApp(t, true), startApp(t, true), startApp(t, false)}
	var ps []*proc
	for i, a := range apps {
		ps = append(ps, startMember(t, zk, "/e2e/app", fmt.Sprintf("p%d", i), "latch", append(health, "--app.health_url", a.url())...))
	}
	waitHealthy(t, ps...)

	// p2's application has never passed a check: p2 does not stand, and
	// says why, but sees the leader.
	first := oneLeader(t, ps[:2], 15*time.Second)
	waitFor(t, 10*time.Second, "p2 to see the leader", func() bool {
		v := ps[2].view()
		return v.Leader != nil && v.Leader.ID == first.id
	})
	if v := ps[2].view(); v.Self.Candidate || v.Self.AppHealthy == nil || *v.Self.AppHealthy {
		t.Errorf("p2 with an application never healthy: self %+v, want candidate false, app_healthy false", v.Self)
	}
	if got := ps[2].leaderReason(); got != "not a candidate (app_unhealthy)" {
		t.Errorf("p2's /healthz/leader reason %q", got)
	}
	// Unknown until failure_threshold checks have failed, then unhealthy.
	waitFor(t, 10*time.Second, "p2's application to be found unhealthy", func() bool { return ps[2].candidacy().AppHealth == "unhealthy" })
	if c := ps[2].candidacy(); !c.Candidate || c.Standing || c.AppDetail != "HTTP 503 Service Unavailable" {
		t.Errorf("p2's /candidacy: %+v", c)
	}
	if n := len(participantsOf(t, first)); n != 2 {
		t.Errorf("%d participants, want 2 (p2 owns no node)", n)
	}
	if v := first.view(); !v.Self.Candidate || v.Self.AppHealthy == nil || !*v.Self.AppHealthy {
		t.Errorf("the leader's self %+v", v.Self)
	}

	// The leader's application fails: the other healthy one leads within
	// interval x failure_threshold plus a handoff.
	other := others(ps[:2], first)[0]
	start := time.Now()
	apps[index(ps, first)].healthy.Store(false)
	waitFor(t, 15*time.Second, other.id+" to lead", func() bool { return len(leaders(t, ps)) == 1 && other.leads() })
	t.Logf("app health: %s's application failed; %s led %d ms later (interval %v x threshold %d = %v, plus a handoff)",
		first.id, other.id, time.Since(start).Milliseconds(), interval, failures, interval*failures)
	waitFor(t, 5*time.Second, first.id+"'s reason", func() bool { return first.leaderReason() == "not a candidate (app_unhealthy)" })
	if got := first.metricOf("electd_leadership_lost_total", "reason", "app_unhealthy"); got != 1 {
		t.Errorf("%s: electd_leadership_lost_total{reason=app_unhealthy} = %v, want 1", first.id, got)
	}
	if h, c := first.metricOf("electd_app_healthy"), first.metricOf("electd_candidate"); h != 0 || c != 0 {
		t.Errorf("%s: electd_app_healthy %v, electd_candidate %v; want 0 and 0", first.id, h, c)
	}
	if got := first.metricOf("electd_app_health_checks_total", "result", "failure"); got < failures {
		t.Errorf("%s: %v failed checks counted, want at least %d", first.id, got, failures)
	}
	if !first.logHas(`"msg":"application unhealthy"`) || !first.logHas(`"msg":"not standing for leadership"`) {
		t.Errorf("%s logged no change of health and standing", first.id)
	}

	// Every application fails: nobody leads.
	apps[index(ps, other)].healthy.Store(false)
	nobodyLeads(t, ps, 15*time.Second)

	// One recovers: it leads, joining an empty queue.
	apps[2].healthy.Store(true)
	if l := oneLeader(t, ps, 15*time.Second); l != ps[2] {
		t.Errorf("%s leads, want p2", l.id)
	}
	if v := ps[2].view(); !v.Self.Candidate || !*v.Self.AppHealthy {
		t.Errorf("p2 recovered: self %+v", v.Self)
	}
}

func index(ps []*proc, p *proc) int {
	for i, q := range ps {
		if q == p {
			return i
		}
	}
	return -1
}

// election.candidate: false observes; POST /candidacy withdraws and
// restores at run time (docs/DESIGN.md, "Candidacy").
func TestE2ECandidacy(t *testing.T) {
	zk := startZK(t)
	p0 := startMember(t, zk, "/e2e/candidacy", "p0", "latch")
	waitHealthy(t, p0)
	oneLeader(t, []*proc{p0}, 15*time.Second)
	p1 := startMember(t, zk, "/e2e/candidacy", "p1", "latch")
	obs := startMember(t, zk, "/e2e/candidacy", "observer", "latch", "--election.candidate", "false")
	ps := []*proc{p0, p1, obs}
	waitHealthy(t, p1, obs)
	checkAgreement(t, ps, p0) // the observer's /leader is current
	if n := len(participantsOf(t, p0)); n != 2 {
		t.Errorf("%d participants, want 2: the observer owns no node", n)
	}
	if got := obs.leaderReason(); got != "not a candidate (withdrawn)" {
		t.Errorf("observer's reason %q", got)
	}
	if c := obs.candidacy(); c.Candidate || c.Standing || c.AppHealth != "disabled" {
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
		{adminToken, `{"candidate": "no"}`, 400, "cannot unmarshal"},
		{adminToken, `{"candidate": false, "now": true}`, 400, `unknown field`},
		{adminToken, `{"candidate": false}` + strings.Repeat(" ", 1000), 413, "larger than 256 bytes"},
	} {
		code, b := p0.post("/candidacy", c.token, c.body)
		if code != c.code || !strings.Contains(string(b), c.want) || !json.Valid(b) {
			t.Errorf("POST /candidacy %q: %d %s, want %d with %q", c.body, code, b, c.code, c.want)
		}
	}
	if !p0.leads() {
		t.Fatal("a bad request changed leadership")
	}

	// The leader withdraws: it hands over as on release, at once.
	start := time.Now()
	code, b := p0.post("/candidacy", adminToken, `{"candidate": false}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"candidate":false,"standing":false,"pending":false`) {
		t.Fatalf("POST /candidacy false on the leader: %d %s", code, b)
	}
	if l := oneLeader(t, ps, 10*time.Second); l != p1 {
		t.Fatalf("%s leads after the withdrawal, want p1", l.id)
	}
	t.Logf("candidacy: p0 withdrew; p1 led %d ms after the request", time.Since(start).Milliseconds())
	if e := nextEvent(t, events, `"leader":{"id":"p1"`); e == "" {
		t.Error("the observer's /events did not name p1")
	}
	if got := p0.metricOf("electd_leadership_lost_total", "reason", "withdrawn"); got != 1 {
		t.Errorf("electd_leadership_lost_total{reason=withdrawn} = %v", got)
	}
	if !p0.logHas(`"msg":"candidacy set on request"`) {
		t.Error("p0 did not log the request")
	}

	// Restored, p0 and the observer join at the back.
	for _, p := range []*proc{p0, obs} {
		if code, b := p.post("/candidacy", adminToken, `{"candidate":true}`); code != http.StatusOK || !strings.Contains(string(b), `"standing":true`) {
			t.Fatalf("%s: POST /candidacy true: %d %s", p.id, code, b)
		}
	}
	waitFor(t, 10*time.Second, "three participants", func() bool { return len(participantsOf(t, p1)) == 3 })
	if parts := participantsOf(t, p1); parts[0].ID != "p1" {
		t.Errorf("queue %+v, want p1 first", parts)
	}
	if !p1.leads() || obs.candidacy().Reason != "following p1" {
		t.Error("the restored participants took leadership or do not follow p1")
	}
}

// streamEvents reads p's /events and sends each data line.
func streamEvents(t *testing.T, p *proc) <-chan string {
	t.Helper()
	resp, err := (&http.Client{}).Get("http://" + p.addr + "/events")
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
	zk := startZK(t)
	ps := startThree(t, zk, "/e2e/switchover", "latch")
	leader := oneLeader(t, ps, 15*time.Second)
	waitFor(t, 10*time.Second, "the full queue", func() bool { return len(participantsOf(t, leader)) == 3 })
	queue := participantsOf(t, leader)
	last := byID(ps, queue[2].ID)
	before, _ := leader.leader()

	// To an unknown id, or on a follower: 409 with the reason; nothing changes.
	if code, b := leader.do(http.MethodPost, "/leader/release?to=nobody", adminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "nobody") {
		t.Errorf("switchover to an unknown id: %d %s, want 409 naming it", code, b)
	}
	if code, b := last.do(http.MethodPost, "/leader/release?to=p0", adminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "not the leader") {
		t.Errorf("switchover on a follower: %d %s, want 409", code, b)
	}
	if !leader.leads() {
		t.Fatal("a refused switchover changed leadership")
	}

	// To the last in the queue: it leads next, not the one behind the leader.
	start := time.Now()
	code, b := leader.do(http.MethodPost, "/leader/release?to="+last.id, adminToken)
	if code != http.StatusAccepted || !strings.Contains(string(b), `"to":"`+last.id+`"`) {
		t.Fatalf("switchover to %s: %d %s", last.id, code, b)
	}
	if l := oneLeader(t, ps, 10*time.Second); l != last {
		t.Fatalf("%s leads after a switchover to %s", l.id, last.id)
	}
	t.Logf("switchover: %s -> %s (the last of three) in %d ms", leader.id, last.id, time.Since(start).Milliseconds())
	after, _ := last.leader()
	if after.Leader.FencingToken <= before.Leader.FencingToken {
		t.Errorf("fencing token %d after the switchover, %d before", after.Leader.FencingToken, before.Leader.FencingToken)
	}
	checkAgreement(t, ps, last)

	// electd release --to does the same from the command line.
	status, stdout, stderr := runBinary(t, []string{"ELECTD_HTTP_ADMIN_TOKEN=" + adminToken}, "release", "--addr", last.addr, "--to", leader.id)
	t.Logf("electd release --to %s:\n%s%s", leader.id, stdout, stderr)
	if status != exitOK || oneLeader(t, ps, 10*time.Second) != leader {
		t.Errorf("electd release --to %s: status %d", leader.id, status)
	}

	// Race mode has no queue: 409.
	race := startThree(t, zk, "/e2e/switchover-race", "race")
	rl := oneLeader(t, race, 15*time.Second)
	if code, b := rl.do(http.MethodPost, "/leader/release?to="+others(race, rl)[0].id, adminToken); code != http.StatusConflict ||
		!strings.Contains(string(b), "race") {
		t.Errorf("switchover in race mode: %d %s, want 409", code, b)
	}
	if !rl.leads() {
		t.Error("a refused switchover in race mode changed leadership")
	}
}

func byID(ps []*proc, id string) *proc {
	for _, p := range ps {
		if p.id == id {
			return p
		}
	}
	return nil
}
