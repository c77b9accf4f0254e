// Package handoff_test runs real electd processes on a real ZooKeeper and
// checks how a leader leaving for good hands leadership on: to whom
// (docs/design/handover.md, "Handoff"), and how soon when ZooKeeper will not delete
// its node ("Failure semantics").
package handoff_test

import (
	"context"
	"encoding/json"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A participant whose application is down is passed over: the leader,
// leaving for good with election.handoff newest, hands over to the newest
// participant whose application takes connections (its forwarding proxy's
// view, published in its meta node), not to the newer one whose
// application refuses them, and that one never leads.
func TestHandOffSkipsAParticipantWhoseAppIsDown(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := func(id, app string) *electdtest.Proc {
		t.Helper()
		listen, err := electdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		p := electdtest.Start(t, electdtest.Spec{Config: &electdtest.Config{
			ID: id, Servers: ens.Servers(), SessionTimeout: 4 * time.Second, Path: "/ready",
			LogFormat: "text", ProxyListen: listen, ProxyApp: app,
		}})
		if err := p.WaitHTTP(ctx, "/readyz", 200); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leader := start("leader", listenApp(t))
	wait.For(t, time.Minute, "the first participant to lead", func() bool { return leader.IsLeader(ctx) })
	older := start("older", listenApp(t))
	newer := start("newer", listenApp(t))
	down, err := electdtest.FreeAddr() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	newest := start("newest-app-down", down)
	procs := []*electdtest.Proc{leader, older, newer, newest}

	// What the handoff relies on: each application's state published, and
	// the leader's view of the queue read.
	c, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	appUp := func(p *electdtest.Proc) *bool {
		v, err := p.View(ctx)
		if err != nil || v.Self.Session == "" {
			return nil
		}
		data, _, err := c.Get("/ready.advertise/" + v.Self.Session)
		var m struct {
			AppUp *bool `json:"app_up"`
		}
		if err != nil || json.Unmarshal(data, &m) != nil {
			return nil
		}
		return m.AppUp
	}
	wait.For(t, time.Minute, "each participant's application state published", func() bool {
		for _, p := range procs {
			up := appUp(p)
			if up == nil || *up != (p != newest) {
				return false
			}
		}
		return true
	})
	wait.For(t, time.Minute, "the leader to count 4 participants", func() bool {
		n, err := leader.Metric(ctx, "electd_participants")
		return err == nil && n == 4
	})
	rests := restOf(t, ctx, procs[1:])

	var newestLed atomic.Bool
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			if newest.IsLeader(watchCtx) {
				newestLed.Store(true)
			}
		}
	}()
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var first *electdtest.Proc
	wait.For(t, time.Minute, "a new leader", func() bool {
		for _, p := range procs[1:] {
			if p.IsLeader(ctx) {
				first = p
				return true
			}
		}
		return false
	})
	if first != newer {
		t.Errorf("%s leads after the handoff, want %s: the newest whose application is up", first.Name, newer.Name)
	}
	if err := electdtest.WaitIdle(ctx, procs[1:], rests, 2*time.Second); err != nil {
		t.Errorf("not idle again after the handoff: %v", err)
	}
	stopWatch()
	if newestLed.Load() {
		t.Errorf("%s led, though its application was down", newest.Name)
	}
	if !newer.IsLeader(ctx) {
		t.Errorf("%s no longer leads", newer.Name)
	}
}

// listenApp is an application that takes connections (and closes them):
// all the forwarding proxy's probe asks of it.
func listenApp(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// restOf is each process's footprint at rest: a window of 2 s.
func restOf(t *testing.T, ctx context.Context, procs []*electdtest.Proc) []invariant.Rest {
	t.Helper()
	rests, err := electdtest.Rests(ctx, procs, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return rests
}
