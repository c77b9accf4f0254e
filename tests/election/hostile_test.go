package election_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// TestZKHostileClient repeats issue 14's attack on a real server: an
// anonymous client on an election path that was created beforehand with an
// open ACL deleted the leader's node and planted a persistent
// `_c_00000000-...-latch-!` with data evil-leader, and nobody led again.
func TestZKHostileClient(t *testing.T) {
	ens := startZK(t)
	auth := func(fix bool) opts {
		return opts{session: func(c *zksession.Config) { c.Auth, c.FixACL = "electd:secret", fix }}
	}
	const evil = "/_c_00000000-0000-0000-0000-000000000000-latch-!"

	t.Run("open path refused with auth", func(t *testing.T) {
		h := newHarness(t, ens, "/hostile/refused", election.ModeLatch)
		ensurePath(t, h.zk(), h.path) // world:anyone, as an operator might have made it
		p := h.start(auth(false))
		waitFor(t, 10*time.Second, "the refusal", func() bool {
			st := p.status()
			return st.Why == election.ReasonRefused && strings.Contains(st.Reason, "ACL of "+h.path)
		})
		if q := h.queue(); len(q) != 0 {
			t.Fatalf("a refusing participant made nodes: %v", q)
		}
	})

	t.Run("open path fixed with fix_acl", func(t *testing.T) {
		h := newHarness(t, ens, "/hostile/fixed", election.ModeLatch)
		ensurePath(t, h.zk(), h.path)
		h.startJoined(2, auth(true))
		l := h.waitOneLeader(10 * time.Second)
		c := h.zk()
		for _, n := range h.queue() {
			if err := c.Delete(h.path+"/"+n.name, -1); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("anonymous delete of %s: %v, want %v", n.name, err, zk.ErrNoAuth)
			}
		}
		if _, err := c.Create(h.path+evil, []byte("evil-leader"), 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("anonymous create under the path: %v, want %v", err, zk.ErrNoAuth)
		}
		if !l.leads() {
			t.Fatalf("%s stopped leading", l)
		}
	})

	t.Run("planted nodes never lead", func(t *testing.T) {
		// Without zookeeper.auth the path is open by design; what a
		// client plants there still never leads.
		h := newHarness(t, ens, "/hostile/planted", election.ModeLatch)
		h.startJoined(3, opts{})
		l := h.waitOneLeader(10 * time.Second)
		c := h.zk()
		if _, err := c.Create(h.path+evil, []byte("evil-leader"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(h.path+"/_c_00000000-0000-0000-0000-000000000001-latch-", []byte("evil-too"),
			zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		tok := h.waitAgreement(l)
		// Both the old leader and its successor learn of the delete from the
		// same notification: an overlap of a few ms is outside the contract,
		// as for an administrator's delete (TestZKCurator, leader-node-deleted);
		// the successor's greater token fences the old leader's writes.
		h.chk.tolerate(time.Second)
		if err := c.Delete(h.path+"/"+l.status().Node, -1); err != nil {
			t.Fatal(err)
		}
		next := h.waitLeaderOtherThan(10*time.Second, l)
		if tok2 := h.waitAgreement(next); tok2 <= tok {
			t.Fatalf("token %d after the delete, was %d", tok2, tok)
		}
		waitFor(t, 10*time.Second, "everyone to name a real participant", func() bool {
			for _, p := range h.live() {
				st := p.status()
				if st.Leader == nil || strings.HasPrefix(st.Leader.ID, "evil") {
					return false
				}
			}
			return true
		})
		t.Logf("%s leads after the attack", next)
		if o := h.chk.tolerated(); len(o) > 0 {
			t.Logf("overlap around the hostile delete (tolerated): %v", o)
		}
	})
}
