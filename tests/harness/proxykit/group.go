package proxykit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
)

// What the clusters of tests/proxy's tests share:
// their members, found, started, settled and back at rest.

// Member is one participant of a test's cluster as the helpers below see
// it: its name, its electd, what it held at rest, and whether its view of
// the election stands still (cut off from ZooKeeper), which leaves it out.
type Member struct {
	Name   string
	Proc   *electdtest.Proc
	Rest   invariant.Rest
	Frozen bool
}

// Participant is a test's own member type (a pointer), which says what it
// is as a Member.
type Participant interface {
	comparable
	Part() Member
}

// Find is the participant called name, failing t when there is none.
func Find[P Participant](t testing.TB, ps []P, name string) P {
	t.Helper()
	for _, p := range ps {
		if p.Part().Name == name {
			return p
		}
	}
	t.Fatalf("no member %s", name)
	var none P
	return none
}

// Procs are the participants' electd processes, in order.
func Procs[P Participant](ps []P) []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, p := range ps {
		out = append(out, p.Part().Proc)
	}
	return out
}

// StartProc runs spec's electd and waits up to within until it is ready.
func StartProc(t *testing.T, spec electdtest.Spec, within time.Duration) *electdtest.Proc {
	t.Helper()
	p := electdtest.Start(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := p.WaitHTTP(ctx, "/readyz", http.StatusOK); err != nil {
		t.Fatal(err)
	}
	return p
}

// Settled waits up to within until one running participant other than
// old (none when old is the zero value) leads and every running
// participant's proxy routes to it, and returns it. One that is stopped
// (SIGSTOP), exited or Frozen is left out. Followers route to the address
// the leader publishes for its peers, which is not necessarily where
// clients send.
func Settled[P Participant](t testing.TB, within time.Duration, old P, ps []P) P {
	t.Helper()
	var none P
	was, what := "", "one leader that every running proxy routes to"
	if old != none {
		was = old.Part().Name
		what = "a leader other than " + was + " that every running proxy routes to"
	}
	leader := ""
	wait.For(t, within, what, func() bool {
		views, advertised := map[string]api.Leader{}, map[string]string{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, p := range ps {
			m := p.Part()
			if !m.Proc.Alive() || m.Proc.Paused() || m.Frozen {
				continue
			}
			v, err := m.Proc.View(ctx)
			if err != nil || v.Proxy == nil {
				return false
			}
			views[m.Name], advertised[m.Name] = v, v.Proxy.Advertise
		}
		leader = Routed(views, advertised)
		return leader != "" && leader != was
	})
	return Find(t, ps, leader)
}

// AtRest waits up to within until every running participant is back at
// its rest: no more goroutines than then, and its election settled
// (tests/harness/invariant's Idle).
func AtRest[P Participant](t testing.TB, within time.Duration, ps []P) {
	t.Helper()
	var procs []*electdtest.Proc
	var rests []invariant.Rest
	for _, p := range ps {
		if m := p.Part(); m.Proc.Alive() {
			procs, rests = append(procs, m.Proc), append(rests, m.Rest)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := electdtest.WaitIdle(ctx, procs, rests, time.Second); err != nil {
		t.Fatal(err)
	}
}

// AdminPost sends an admin POST to p's API with token and wants 202; it
// returns the answer's body.
func AdminPost(t testing.TB, p *electdtest.Proc, path, token string, within time.Duration) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	code, body, err := p.Do(ctx, http.MethodPost, path, token)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s %v", path, code, body, err)
	}
	return body
}
