package chaos

import (
	"net/http"
	"time"

	"github.com/electd/electd/tests/ledger"
)

// faultAppKill (fault 9) kills the leader's application with SIGKILL while
// the traffic runs, once it has a POST in hand (acted on, its body not
// read yet): its proxy finds the application refusing connections
// and steps down (docs/design/proxy-app.md, "Forwarding": the application stops
// first), another participant leads, and what the dead application had in
// hand ends as "may or may not have been processed", never run again. The
// application then starts again in place and its participant stands again.
func faultAppKill(r *run) {
	l := r.setup(3, nil)
	a := r.part(l).app
	id := r.postInHand(a)
	t0 := r.now()
	a.Proc.Kill()
	r.event("kill -9 %s's %s application with POST %s in hand", l.Name, a.Lang, id)
	r.expectLeader("another leader after "+l.Name+"'s application died", t0, l)
	if err := a.Relaunch(); err != nil {
		r.fatalf("starting %s's application again: %v", l.Name, err)
	}
	r.event("%s's application started again", l.Name)
	r.finish()
}

// postInHand waits until a has a POST in hand: its arrival in the ledger
// and no done line yet.
func (r *run) postInHand(a *ledger.App) string {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		es, err := a.Entries()
		if err != nil {
			r.fatalf("ledger of %s: %v", a.Name, err)
		}
		open := map[string]bool{}
		for _, e := range es {
			switch {
			case e.Ev == ledger.Arrive && e.Method == http.MethodPost:
				open[e.ID] = true
			case e.Ev == ledger.Done:
				delete(open, e.ID)
			}
		}
		for id := range open {
			return id
		}
		time.Sleep(time.Millisecond)
	}
	r.fatalf("%s's application had no POST in hand for 10 s", a.Name)
	return ""
}

// faultPeerCut (fault 10) cuts the leader's proxy off from its peers'
// (blackhole: silence; refuse: connections reset and refused) for three
// times proxy.peer_timeout, ZooKeeper untouched: the leader keeps leading,
// and what the followers forward to it ends within the bound (given up
// after peer_timeout, sent again only if provably unprocessed or safe, held
// within the hold time) until the cut heals.
func faultPeerCut(kind string) func(*run) {
	return func(r *run) {
		l := r.setup(3, nil)
		relay := r.part(l).relay
		if relay == nil {
			r.fatalf("no peer relay: the run must set spec.PeerRelay")
		}
		if kind == "blackhole" {
			relay.Blackhole()
		} else {
			relay.Refuse()
		}
		r.event("cut %s's proxy off from its peers (%s) for %s", l.Name, kind, 3*peerTimeout)
		r.holdUntil(r.now() + 3*peerTimeout)
		relay.Heal()
		r.event("healed %s's peer port", l.Name)
		r.finish()
	}
}
