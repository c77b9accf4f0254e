package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
)

// startThree starts three participants on one path and waits until they serve.
func startThree(t *testing.T, zk, path, mode string, extra ...string) []*proc {
	t.Helper()
	var ps []*proc
	for i := range 3 {
		ps = append(ps, startMember(t, zk, path, fmt.Sprintf("p%d", i), mode, extra...))
	}
	waitHealthy(t, ps...)
	return ps
}

func others(ps []*proc, not *proc) []*proc {
	var out []*proc
	for _, p := range ps {
		if p != not {
			out = append(out, p)
		}
	}
	return out
}

func TestE2EModes(t *testing.T) {
	zk := startZK(t)
	for _, mode := range []string{"latch", "selector", "race"} {
		t.Run(mode, func(t *testing.T) {
			ps := startThree(t, zk, "/e2e/modes/"+mode, mode)
			leader := oneLeader(t, ps, 15*time.Second)
			checkAgreement(t, ps, leader)

			// SIGTERM hands leadership over at once and exits 0.
			start := time.Now()
			leader.signal(syscall.SIGTERM)
			rest := others(ps, leader)
			next := oneLeader(t, rest, 10*time.Second)
			t.Logf("%s: handoff %s -> %s in %d ms (SIGTERM to first 200 elsewhere)",
				mode, leader.id, next.id, time.Since(start).Milliseconds())
			if err := leader.wait(15 * time.Second); err != nil {
				t.Errorf("%s exited with %v after SIGTERM, want status 0", leader.id, err)
			}
			checkAgreement(t, rest, next)
		})
	}
}

// checkAgreement waits until every participant's /leader names leader with
// one fencing token, and checks electd_is_leader on each.
func checkAgreement(t *testing.T, ps []*proc, leader *proc) {
	t.Helper()
	var views []leaderView
	waitFor(t, 10*time.Second, "/leader to agree on "+leader.id, func() bool {
		views = views[:0]
		for _, p := range ps {
			v, err := p.leader()
			if err != nil || v.Leader == nil || v.Leader.ID != leader.id {
				return false
			}
			views = append(views, v)
		}
		return true
	})
	for i, v := range views {
		if v.Leader.FencingToken != views[0].Leader.FencingToken || v.Leader.FencingToken <= 0 {
			t.Errorf("%s: fencing token %d, %s says %d", ps[i].id, v.Leader.FencingToken, ps[0].id, views[0].Leader.FencingToken)
		}
		if v.Self.IsLeader != (ps[i] == leader) {
			t.Errorf("%s: self.is_leader = %v", ps[i].id, v.Self.IsLeader)
		}
	}
	for _, p := range ps {
		want := 0.0
		if p == leader {
			want = 1
		}
		if got, err := p.metric("electd_is_leader"); err != nil || got != want {
			t.Errorf("%s: electd_is_leader = %v (%v), want %v", p.id, got, err, want)
		}
	}
}

// successor is the participant that leads after leader releases: the next
// in queue order on /participants.
func successor(t *testing.T, ps []*proc, leader *proc) *proc {
	t.Helper()
	var list []api.Participant
	// All have joined once each names the leader, but a create may still be
	// on its way: wait for the full queue.
	waitFor(t, 10*time.Second, "all participants on /participants", func() bool {
		st, b := leader.get("/participants")
		list = nil
		return st == http.StatusOK && json.Unmarshal(b, &list) == nil && len(list) == len(ps)
	})
	for _, p := range ps {
		if p.id == list[1].ID {
			return p
		}
	}
	t.Fatalf("no participant %q", list[1].ID)
	return nil
}

func TestE2EWaitAndRelease(t *testing.T) {
	zk := startZK(t)
	ps := startThree(t, zk, "/e2e/api", "latch")
	leader := oneLeader(t, ps, 15*time.Second)
	next := successor(t, ps, leader)

	// A wait that ends without leadership: 503 when it ends, not before. (How much
	// later depends on the machine: not asserted.)
	start := time.Now()
	if st, b := next.get("/healthz/leader?wait=300ms"); st != http.StatusServiceUnavailable {
		t.Errorf("?wait=300ms on a follower: %d %s, want 503", st, b)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("?wait=300ms answered after %v, before the wait ended", d)
	}

	// Bad queries and the admin token.
	for _, q := range []string{"?wait=abc", "?wait=6m"} {
		if st, b := next.get("/healthz/leader" + q); st != http.StatusBadRequest {
			t.Errorf("/healthz/leader%s: %d %s, want 400", q, st, b)
		}
	}
	if st, _ := next.do(http.MethodPost, "/leader/release", adminToken); st != http.StatusConflict {
		t.Errorf("release on a follower: %d, want 409", st)
	}
	for _, tok := range []string{"", "wrong"} {
		if st, _ := leader.do(http.MethodPost, "/leader/release", tok); st != http.StatusUnauthorized {
			t.Errorf("release with token %q: %d, want 401", tok, st)
		}
	}
	if !leader.leads() {
		t.Fatal("the refused releases moved leadership")
	}

	// A wait on the successor returns 200 as soon as the leader releases.
	type answer struct {
		status int
		at     time.Time
	}
	sent, got := make(chan struct{}), make(chan answer, 1)
	go func() {
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+next.addr+"/healthz/leader?wait=10s", nil)
		resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
		if err != nil {
			got <- answer{}
			return
		}
		resp.Body.Close()
		got <- answer{resp.StatusCode, time.Now()}
	}()
	<-sent
	released := time.Now()
	if st, b := leader.do(http.MethodPost, "/leader/release", adminToken); st != http.StatusAccepted {
		t.Fatalf("release on the leader: %d %s, want 202", st, b)
	}
	select {
	case a := <-got:
		if a.status != http.StatusOK {
			t.Fatalf("?wait=10s on %s: %d, want 200", next.id, a.status)
		}
		t.Logf("?wait=10s answered 200 %d ms after the release", a.at.Sub(released).Milliseconds())
	case <-time.After(12 * time.Second):
		t.Fatal("?wait=10s did not answer")
	}
	if got := oneLeader(t, ps, 5*time.Second); got != next {
		t.Errorf("after release %s leads, want %s", got.id, next.id)
	}
}

func TestE2EEvents(t *testing.T) {
	zk := startZK(t)
	ps := startThree(t, zk, "/e2e/events", "latch")
	leader := oneLeader(t, ps, 15*time.Second)
	watcher := others(ps, leader)[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+watcher.addr+"/events", nil)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET /events: %d %s", resp.StatusCode, ct)
	}
	leaders := make(chan string, 16)
	go func() {
		defer close(leaders)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:") && event == "leader":
				var v leaderView
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data:")), &v) == nil && v.Leader != nil {
					leaders <- v.Leader.ID
				} else {
					leaders <- ""
				}
			case line == "":
				event = ""
			}
		}
	}()
	next := func() string {
		select {
		case id, ok := <-leaders:
			if !ok {
				t.Fatal("/events ended")
			}
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no leader event within 10s")
		}
		return ""
	}
	if id := next(); id != leader.id {
		t.Fatalf("first leader event names %q, want %s", id, leader.id)
	}
	if st, _ := leader.do(http.MethodPost, "/leader/release", adminToken); st != http.StatusAccepted {
		t.Fatalf("release: %d", st)
	}
	for {
		if id := next(); id != leader.id && id != "" {
			t.Logf("leader event after release: %s", id)
			return
		}
	}
}

func TestE2EEnvironmentOnly(t *testing.T) {
	zk := startZK(t)
	addr := freeAddr(t)
	p := startElectd(t, "env-only", addr, nil, []string{
		"ELECTD_ID=env-only",
		"ELECTD_ZOOKEEPER_SERVERS=" + zk,
		"ELECTD_ZOOKEEPER_SESSION_TIMEOUT=4s",
		"ELECTD_ELECTION_PATH=/e2e/env",
		"ELECTD_HTTP_ADDR=" + addr,
		"ELECTD_LOG_FORMAT=text",
		"ELECTD_PORT=tcp://10.0.0.1:4040", // what Kubernetes injects: a warning only
	})
	waitHealthy(t, p)
	oneLeader(t, []*proc{p}, 15*time.Second)
	if v, err := p.leader(); err != nil || v.Leader == nil || v.Leader.ID != "env-only" {
		t.Errorf("/leader: %+v, %v", v, err)
	}
	if !p.logHas("ELECTD_PORT") {
		t.Error("no warning about ELECTD_PORT")
	}
	p.signal(syscall.SIGINT)
	if err := p.wait(15 * time.Second); err != nil {
		t.Errorf("exit after SIGINT: %v, want status 0", err)
	}
}

func TestE2EShutdownGrace(t *testing.T) {
	zk := startZK(t)
	ps := startThree(t, zk, "/e2e/grace", "latch", "--shutdown_grace", "1s")
	leader := oneLeader(t, ps, 15*time.Second)
	rest := others(ps, leader)
	start := time.Now()
	leader.signal(syscall.SIGTERM)
	// The leader answers 503 at once, before anybody else leads (how soon "at once" is
	// depends on the machine: the deadline only stops a hang).
	waitFor(t, 10*time.Second, "the leader to answer 503 after SIGTERM", func() bool {
		for _, p := range rest {
			if p.leads() {
				t.Fatalf("%s leads while %s, sent SIGTERM, has not answered 503 yet", p.id, leader.id)
			}
		}
		return !leader.leads()
	})
	draining := time.Since(start)
	next := oneLeader(t, rest, 10*time.Second)
	if d := time.Since(start); d < time.Second {
		t.Errorf("%s led %v after SIGTERM, before shutdown_grace (1s) ended", next.id, d)
	}
	t.Logf("503 after %d ms, next leader after %d ms", draining.Milliseconds(), time.Since(start).Milliseconds())
	if err := leader.wait(15 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}
