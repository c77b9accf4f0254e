package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
)

func TestAwaitFirstView(t *testing.T) {
	leader := &election.Participant{ID: "p0"}
	tests := []struct {
		name    string
		views   []election.Status
		close   bool
		timeout bool
		want    bool
	}{
		{name: "leads", views: []election.Status{{IsLeader: true, Joined: true, Leader: leader}}, want: true},
		{name: "joined, knows the leader", views: []election.Status{{Joined: true, Leader: leader}}, want: true},
		{name: "after views without one", views: []election.Status{{}, {Joined: true}, {Leader: leader}, {Joined: true, Leader: leader}}, want: true},
		{name: "joined, no leader known yet", views: []election.Status{{Joined: true}}, timeout: true, want: false},
		{name: "peeked the leader, not joined", views: []election.Status{{Leader: leader}}, timeout: true, want: false},
		{name: "elector stopped", views: []election.Status{{}}, close: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			views := make(chan election.Status, len(tt.views))
			for _, v := range tt.views {
				views <- v
			}
			if tt.close {
				close(views)
			}
			// The timeout fires only once every queued view was taken,
			// so none is skipped by a timeout that came first.
			timeout := make(chan time.Time)
			done := make(chan bool, 1)
			go func() { done <- awaitFirstView(views, timeout) }()
			if tt.timeout {
				for len(views) > 0 {
					time.Sleep(time.Millisecond)
				}
				select {
				case timeout <- time.Time{}:
				case <-done:
					t.Fatal("returned before its timeout")
				}
			}
			select {
			case got := <-done:
				if got != tt.want {
					t.Errorf("awaitFirstView = %v, want %v", got, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("awaitFirstView did not return")
			}
		})
	}
}

// TestE2EStartupAgreement starts three sidecars at once on a fresh server
// (whose first writes are slow) and, the moment all three answer 200 on
// /healthz, reads /leader from each without waiting: all must name the
// same leader. Without the startup gate on /healthz, a sidecar whose node
// was still being created answered "leader": null there (smoke.py saw it
// in about one run in three).
func TestE2EStartupAgreement(t *testing.T) {
	for _, mode := range []string{"latch", "selector", "race"} {
		t.Run(mode, func(t *testing.T) {
			zk := startZK(t)
			ps := startThree(t, zk, "/e2e/startup/"+mode, mode)
			var first string
			for _, p := range ps {
				v, err := p.leader()
				if err != nil {
					t.Fatalf("right after /healthz answered 200: %v", err)
				}
				if v.Leader == nil || v.Leader.ID == "" {
					t.Fatalf("%s: /leader names no leader right after /healthz answered 200", p.id)
				}
				if first == "" {
					first = v.Leader.ID
				} else if v.Leader.ID != first {
					t.Fatalf("%s: /leader names %s, %s named %s", p.id, v.Leader.ID, ps[0].id, first)
				}
			}
		})
	}
}

// TestE2EStartingWithoutZooKeeper: with no ZooKeeper to reach, /healthz
// first answers 503 "starting", then 200 once startupGrace has passed
// (liveness must not wait on ZooKeeper), and says so in the log.
func TestE2EStartingWithoutZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an electd process; skipped with -short")
	}
	nobody := freeAddr(t) // nothing listens there
	start := time.Now()
	p := startMember(t, nobody, "/e2e/nozk", "p0", "latch")
	var codes []string
	var sawStarting bool
	waitFor(t, startupGrace+10*time.Second, "/healthz to answer 200", func() bool {
		if !p.alive() {
			t.Fatalf("exited: %v", p.err)
		}
		st, b := p.get("/healthz")
		if st == 0 {
			return false // not listening yet
		}
		var body struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(b, &body)
		codes = append(codes, fmt.Sprintf("%d %s", st, body.Status))
		switch {
		case st == http.StatusServiceUnavailable && body.Status == "starting":
			sawStarting = true
			return false
		case st == http.StatusOK:
			return true
		default:
			t.Fatalf("/healthz: %d %s", st, b)
			return false
		}
	})
	if !sawStarting {
		t.Errorf("/healthz never answered 503 starting (answers %v)", codes)
	}
	if took := time.Since(start); took < startupGrace {
		t.Errorf("/healthz answered 200 after %v, before startupGrace (%v) without ZooKeeper", took, startupGrace)
	}
	if !p.logHas("no view of the election yet") {
		t.Error("no log line says /healthz answers without a view of the election")
	}
	if st, _ := p.get("/healthz/leader"); st != http.StatusServiceUnavailable {
		t.Errorf("/healthz/leader = %d without ZooKeeper, want 503", st)
	}
}
