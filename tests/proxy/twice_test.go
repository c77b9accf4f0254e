package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/wait"
)

// appTime is how long the applications of TestPostRunsOnce work on a
// request between acting on it and reading its body.
const appTime = 3 * time.Second

// Issue 28, failure 2: "A POST runs twice." An application that records a
// side effect and only then reads the body (a handler that acts on the URL,
// or reads the body late) is killed with SIGKILL while it has 5 POSTs in
// hand, sent through both followers and straight to the leader. Must have
// 2: what the application had in hand when it died is a 502 or a 503 "may
// or may not have been processed" to the client, never sent again (the
// application never asking for the body, or never answering 100 Continue,
// proves nothing); the ledger shows each request once. Must have 1: each
// ends within the hold time + the application's time + peer_timeout. Once
// for the Go application (net/http, which answers 100 Continue when the
// handler reads the body) and once for Python's http.server (which never
// does).
func TestPostRunsOnce(t *testing.T) {
	eachLang(t, func(t *testing.T, c *cluster, _ string, l *member) {
		reqs := c.killWithPostsInHand(l)
		posts := ledger.Posts(reqs)
		for _, r := range reqs {
			t.Logf("%v", r)
		}
		report(t, "were not told \""+ledger.MaybeProcessed+"\" with a 502 or a 503 (and Retry-After)", reqs, ledger.Failing(reqs, ledger.SaysMaybe))
		bound := holdTime + appTime + peerTimeout + slack
		report(t, "took longer than the hold time + the application's time + peer_timeout + slack ("+bound.String()+")", reqs, ledger.Late(reqs, bound))
		es := c.entries()
		for _, v := range ledger.Twice(es, func(id string) bool { return posts[id] }) {
			t.Errorf("a POST ran twice: %s", v)
		}
		for _, v := range ledger.Unfenced(es) {
			t.Errorf("answered by a participant that did not lead: %s", v)
		}
		l.app.Restart(t)
		c.standing(l)
		c.settled(nil)
		c.idle()
	})
}

// eachLang starts three members whose applications are in Go and Python,
// and runs f as a subtest per language once a member in it leads.
func eachLang(t *testing.T, f func(t *testing.T, c *cluster, lang string, l *member)) {
	langs := []string{ledger.Go, ledger.Python}
	c := startCluster(t, setup{n: 3, langs: langs})
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			c.t = t
			f(t, c, lang, c.leadWith(lang))
		})
	}
}

// leadWith returns the leader, after a switchover to a member whose
// application is in lang if the leader's is not.
func (c *cluster) leadWith(lang string) *member {
	c.t.Helper()
	l := c.settled(nil)
	if l.app.Lang == lang {
		return l
	}
	for _, m := range c.members {
		if m.app.Lang == lang {
			c.post(l, "/leader/release?to="+m.name)
			wait.For(c.t, patience, m.name+" to lead", func() bool { return c.settled(nil) == m })
			return m
		}
	}
	c.t.Fatalf("no member's application is in %s", lang)
	return nil
}

// killWithPostsInHand sends 5 POSTs whose application acts, then works for
// appTime before it reads the body: 2 through each follower, 1 straight to
// l's proxy. Once l's application has acted on all 5 it is SIGKILLed.
func (c *cluster) killWithPostsInHand(l *member) []ledger.Request {
	c.t.Helper()
	via := append(c.others(l), c.others(l)...)
	via = append(via, l)
	client := ledger.Client(holdTime + appTime + peerTimeout + 10*time.Second)
	ids := make([]string, len(via))
	results := make([]ledger.Request, len(via))
	var wg sync.WaitGroup
	for i, m := range via {
		ids[i] = fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(c.t.Name(), "/", "-"), m.name, i)
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://%s/w?sleep=%d", m.proxy, appTime.Milliseconds()),
				strings.NewReader("a body the application reads only after it acted"))
			results[i] = ledger.Do(client, m.name, ids[i], req)
		})
	}
	wait.For(c.t, patience, fmt.Sprintf("%s's application to act on the %d POSTs", l.name, len(via)), func() bool {
		es, err := l.app.Entries()
		if err != nil {
			return false
		}
		seen := ledger.ByID(es)
		for _, id := range ids {
			if len(seen[id]) == 0 {
				return false
			}
		}
		return true
	})
	l.app.Proc.Kill()
	c.t.Logf("SIGKILLed %s's %s application with %d POSTs in hand", l.name, l.app.Lang, len(via))
	wg.Wait()
	return results
}

// standing waits until m stands in the election again (its proxy's
// step-down, which a refusing application causes, is lifted once the
// application takes connections).
func (c *cluster) standing(m *member) {
	c.t.Helper()
	wait.For(c.t, patience, m.name+" to stand again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := m.proc.View(ctx)
		return err == nil && v.Self.Candidate && v.Self.State == "connected"
	})
}
