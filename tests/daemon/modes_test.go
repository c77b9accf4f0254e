package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

func TestE2EModes(t *testing.T) {
	zk := zktest.Standalone(t)
	for _, mode := range []string{"latch", "selector", "race"} {
		t.Run(mode, func(t *testing.T) {
			ps := electdtest.StartThree(t, zk, "/e2e/modes/"+mode, mode)
			leader := electdtest.OneLeader(t, ps, 15*time.Second)
			electdtest.CheckAgreement(t, ps, leader)

			// SIGTERM hands leadership over at once and exits 0.
			start := time.Now()
			leader.Send(syscall.SIGTERM)
			rest := electdtest.Others(ps, leader)
			next := electdtest.OneLeader(t, rest, 10*time.Second)
			t.Logf("%s: handoff %s -> %s in %d ms (SIGTERM to first 200 elsewhere)",
				mode, leader.Name, next.Name, time.Since(start).Milliseconds())
			if err := leader.WaitExit(15 * time.Second); err != nil {
				t.Errorf("%s exited with %v after SIGTERM, want status 0", leader.Name, err)
			}
			electdtest.CheckAgreement(t, rest, next)
		})
	}
}

// successor is the participant that leads after leader releases: the next
// in queue order on /participants.
func successor(t *testing.T, ps []*electdtest.Member, leader *electdtest.Member) *electdtest.Member {
	t.Helper()
	var list []api.Participant
	// All have joined once each names the leader, but a create may still be
	// on its way: wait for the full queue.
	wait.For(t, 10*time.Second, "all participants on /participants", func() bool {
		st, b := leader.Fetch("/participants")
		list = nil
		return st == http.StatusOK && json.Unmarshal(b, &list) == nil && len(list) == len(ps)
	})
	for _, p := range ps {
		if p.Name == list[1].ID {
			return p
		}
	}
	t.Fatalf("no participant %q", list[1].ID)
	return nil
}

func TestE2EWaitAndRelease(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/api", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	next := successor(t, ps, leader)

	// A wait that ends without leadership: 503 when it ends, not before. (How much
	// later depends on the machine: not asserted.)
	start := time.Now()
	if st, b := next.Fetch("/healthz/leader?wait=300ms"); st != http.StatusServiceUnavailable {
		t.Errorf("?wait=300ms on a follower: %d %s, want 503", st, b)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("?wait=300ms answered after %v, before the wait ended", d)
	}

	// Bad queries and the admin token.
	for _, q := range []string{"?wait=abc", "?wait=6m"} {
		if st, b := next.Fetch("/healthz/leader" + q); st != http.StatusBadRequest {
			t.Errorf("/healthz/leader%s: %d %s, want 400", q, st, b)
		}
	}
	if st, _ := next.Request(http.MethodPost, "/leader/release", electdtest.AdminToken); st != http.StatusConflict {
		t.Errorf("release on a follower: %d, want 409", st)
	}
	for _, tok := range []string{"", "wrong"} {
		if st, _ := leader.Request(http.MethodPost, "/leader/release", tok); st != http.StatusUnauthorized {
			t.Errorf("release with token %q: %d, want 401", tok, st)
		}
	}
	if !leader.Leads() {
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
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+next.Addr+"/healthz/leader?wait=10s", nil)
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
	if st, b := leader.Request(http.MethodPost, "/leader/release", electdtest.AdminToken); st != http.StatusAccepted {
		t.Fatalf("release on the leader: %d %s, want 202", st, b)
	}
	select {
	case a := <-got:
		if a.status != http.StatusOK {
			t.Fatalf("?wait=10s on %s: %d, want 200", next.Name, a.status)
		}
		t.Logf("?wait=10s answered 200 %d ms after the release", a.at.Sub(released).Milliseconds())
	case <-time.After(12 * time.Second):
		t.Fatal("?wait=10s did not answer")
	}
	if got := electdtest.OneLeader(t, ps, 5*time.Second); got != next {
		t.Errorf("after release %s leads, want %s", got.Name, next.Name)
	}
}

func TestE2EEvents(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/events", "latch")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	watcher := electdtest.Others(ps, leader)[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+watcher.Addr+"/events", nil)
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
				var v electdtest.LeaderView
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
	if id := next(); id != leader.Name {
		t.Fatalf("first leader event names %q, want %s", id, leader.Name)
	}
	if st, _ := leader.Request(http.MethodPost, "/leader/release", electdtest.AdminToken); st != http.StatusAccepted {
		t.Fatalf("release: %d", st)
	}
	for {
		if id := next(); id != leader.Name && id != "" {
			t.Logf("leader event after release: %s", id)
			return
		}
	}
}

func TestE2EEnvironmentOnly(t *testing.T) {
	zk := zktest.Standalone(t)
	addr := electdtest.MustFreeAddr(t)
	p := electdtest.StartArgs(t, "env-only", addr, nil, []string{
		"ELECTD_ID=env-only",
		"ELECTD_ZOOKEEPER_SERVERS=" + zk,
		"ELECTD_ZOOKEEPER_SESSION_TIMEOUT=4s",
		"ELECTD_ELECTION_PATH=/e2e/env",
		"ELECTD_HTTP_ADDR=" + addr,
		"ELECTD_LOG_FORMAT=text",
		"ELECTD_PORT=tcp://10.0.0.1:4040", // what Kubernetes injects: a warning only
	})
	electdtest.WaitOK(t, "/healthz", 30*time.Second, p)
	electdtest.OneLeader(t, []*electdtest.Member{p}, 15*time.Second)
	if v, err := p.LeaderNow(); err != nil || v.Leader == nil || v.Leader.ID != "env-only" {
		t.Errorf("/leader: %+v, %v", v, err)
	}
	if !p.LogHasWithin("ELECTD_PORT", 5*time.Second) {
		t.Error("no warning about ELECTD_PORT")
	}
	p.Send(syscall.SIGINT)
	if err := p.WaitExit(15 * time.Second); err != nil {
		t.Errorf("exit after SIGINT: %v, want status 0", err)
	}
}

func TestE2EShutdownGrace(t *testing.T) {
	zk := zktest.Standalone(t)
	ps := electdtest.StartThree(t, zk, "/e2e/grace", "latch", "--shutdown_grace", "1s")
	leader := electdtest.OneLeader(t, ps, 15*time.Second)
	rest := electdtest.Others(ps, leader)
	start := time.Now()
	leader.Send(syscall.SIGTERM)
	// The leader answers 503 at once, before anybody else leads (how soon "at once" is
	// depends on the machine: the deadline only stops a hang).
	wait.For(t, 10*time.Second, "the leader to answer 503 after SIGTERM", func() bool {
		for _, p := range rest {
			if p.Leads() {
				t.Fatalf("%s leads while %s, sent SIGTERM, has not answered 503 yet", p.Name, leader.Name)
			}
		}
		return !leader.Leads()
	})
	draining := time.Since(start)
	next := electdtest.OneLeader(t, rest, 10*time.Second)
	if d := time.Since(start); d < time.Second {
		t.Errorf("%s led %v after SIGTERM, before shutdown_grace (1s) ended", next.Name, d)
	}
	t.Logf("503 after %d ms, next leader after %d ms", draining.Milliseconds(), time.Since(start).Milliseconds())
	if err := leader.WaitExit(15 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}
