package election

import (
	"strings"
	"testing"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The attack from issue 14: an anonymous client deleted the leader's node
// and planted a persistent `_c_00000000-...-latch-!` with data evil-leader;
// every sidecar then named evil-leader and nobody led, forever. A child
// with a malformed name, or one no session owns, is not a participant.
func TestQueueIgnoresPlantedNodes(t *testing.T) {
	u := newUnit(t, Config{})
	u.f.put("/e/_c_00000000-0000-0000-0000-000000000000-latch-!", "evil-leader", 0, 0)
	planted := u.f.put("/e/_c_00000000-0000-0000-0000-000000000001-latch-", "evil-too", 0, zk.FlagSequence)
	u.settle()
	st := u.wantLeader(true)
	if st.Leader == nil || st.Leader.ID != "me" {
		t.Fatalf("leader %+v, want me", st.Leader)
	}
	if n := strings.Count(u.log.String(), "ignoring a node that is not a participant"); n != 2 {
		t.Fatalf("%d reports of ignored nodes, want 2 (once each):\n%s", n, u.log.String())
	}
	ps, err := u.e.r.participants(u.f)
	if err != nil || len(ps) != 1 || ps[0].ID != "me" {
		t.Fatalf("participants %+v (%v), want me alone", ps, err)
	}
	// A follower whose predecessor is planted skips it too.
	v := newUnit(t, Config{ID: "other"})
	v.f.put(planted, "evil-too", 0, 0)
	v.other(0x2000, "web-1")
	v.settle()
	if st := v.wantLeader(false); st.Leader == nil || st.Leader.ID != "web-1" {
		t.Fatalf("follower names %+v, want web-1", st.Leader)
	}
}

func TestRacePersistentNodeRefused(t *testing.T) {
	u := newUnit(t, Config{Mode: ModeRace})
	u.f.put("/e/leader", "evil-leader", 0, 0)
	u.settle()
	st := u.wantLeader(false)
	if st.Leader != nil || st.Why != ReasonRefused || !strings.Contains(st.Reason, "not ephemeral") {
		t.Fatalf("status %+v, want no leader and the refusal", st)
	}
	u.f.remove("/e/leader")
	u.event()
	u.settle()
	u.wantLeader(true)
}

func TestACLCheck(t *testing.T) {
	open := zk.WorldACL(zk.PermAll)
	for _, tc := range []struct {
		name   string
		fix    bool
		acl    []zk.ACL
		leads  bool
		setACL bool
	}{
		{name: "open path refused", acl: open},
		{name: "open path fixed", fix: true, acl: open, leads: true, setACL: true},
		{name: "read-only world is fine", acl: append(zk.DigestACL(zk.PermAll, "electd", "pw"), zk.WorldACL(zk.PermRead)...), leads: true},
		{name: "another user may create", acl: zk.DigestACL(zk.PermCreate, "mallory", "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			u.reconfigure(func(c *zksession.Config) { c.Auth, c.FixACL = "electd:pw", tc.fix })
			u.e.acl = append(zk.DigestACL(zk.PermAll, "electd", "pw"), zk.WorldACL(zk.PermRead)...)
			u.f.put("/e", "", 0, 0)
			u.f.mu.Lock()
			u.f.nodes["/e"].acl = tc.acl
			u.f.mu.Unlock()
			err := u.settleErr()
			st := u.e.Status()
			if st.IsLeader != tc.leads {
				t.Fatalf("IsLeader %v (%s, err %v), want %v", st.IsLeader, st.Reason, err, tc.leads)
			}
			if !tc.leads && (st.Why != ReasonRefused || !strings.Contains(st.Reason, "ACL of /e")) {
				t.Fatalf("reason %q, want the ACL named", st.Reason)
			}
			if got := u.f.opCount("setacl") > 0; got != tc.setACL {
				t.Fatalf("setAcl sent: %v, want %v", got, tc.setACL)
			}
		})
	}
}
