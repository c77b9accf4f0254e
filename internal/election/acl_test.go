package election

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The credentials of a rotation: old is replaced by new.
const (
	credOld = "electd:old-secret"
	credNew = "electd:new-secret"
)

var (
	readAll = zk.WorldACL(zk.PermRead)
	// The ACLs a path goes through (docs/operations.md, "Rotating the
	// ZooKeeper credential"): made with the old credential, in rotation,
	// rotated.
	aclOld      = slices.Concat(digestACL(zk.PermAll, credOld), readAll)
	aclRotating = slices.Concat(digestACL(zk.PermAll, credNew), digestACL(retiringPerms, credOld), readAll)
	aclNew      = slices.Concat(digestACL(zk.PermAll, credNew), readAll)
)

// hide is acl as ZooKeeper shows it to a client without ADMIN on the node:
// each digest's hash replaced by "x".
func hide(acl []zk.ACL) []zk.ACL {
	out := slices.Clone(acl)
	for i, a := range out {
		if a.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID, ":")
			out[i].ID = user + ":x"
		}
	}
	return out
}

// The three kinds of participant a rolling restart mixes.
var (
	podOld      = credIDs{cur: digestID(credOld)}
	podRotating = credIDs{cur: digestID(credNew), prev: digestID(credOld)}
	podNew      = credIDs{cur: digestID(credNew)}
)

func TestJudgeACL(t *testing.T) {
	other := digestACL(zk.PermAll, "mallory:x")
	for _, tc := range []struct {
		name string
		acl  []zk.ACL
		ids  credIDs
		want aclVerdict
	}{
		// Every pod in every state of a rotation, each ACL as ZooKeeper
		// shows it to that pod (hidden without ADMIN): none refuses a state
		// it can meet in the procedure, and only the pods that hold ADMIN
		// change the ACL. Where the digests are hidden, the first create
		// tells whether this pod may create there.
		{"old pod, old ACL", aclOld, podOld, aclOurs},
		{"old pod, rotating ACL", hide(aclRotating), podOld, aclHidden},
		{"old pod, new ACL", hide(aclNew), podOld, aclHidden},
		{"rotating pod, old ACL", aclOld, podRotating, aclWiden},
		{"rotating pod, rotating ACL", aclRotating, podRotating, aclOurs},
		{"rotating pod, new ACL", aclNew, podRotating, aclOurs},
		{"new pod, old ACL", hide(aclOld), podNew, aclHidden},
		{"new pod, rotating ACL", aclRotating, podNew, aclNarrow},
		{"new pod, new ACL", aclNew, podNew, aclOurs},
		{"hidden, but open to the world", slices.Concat(hide(aclOld), zk.WorldACL(zk.PermCreate)), podNew, aclOpen},
		{"another credential beside ours, ours without ADMIN", slices.Concat(digestACL(retiringPerms, credNew), other), podNew, aclOpen},

		{"open to the world", zk.WorldACL(zk.PermAll), podNew, aclOpen},
		{"open to the world beside ours", slices.Concat(aclNew, zk.WorldACL(zk.PermCreate)), podRotating, aclOpen},
		{"an ip may delete", slices.Concat(aclOld, []zk.ACL{{Perms: zk.PermDelete, Scheme: "ip", ID: "10.0.0.1"}}), podOld, aclOpen},
		{"another credential beside ours, both administer", slices.Concat(aclNew, other), podNew, aclOpen},
		{"a third credential in a rotation", slices.Concat(aclRotating, other), podRotating, aclOpen},
		{"previous retiring towards another", slices.Concat(other, digestACL(retiringPerms, credOld)), podRotating, aclMismatch},
		{"another credential alone", other, podRotating, aclMismatch},
		{"read-only for others is fine", slices.Concat(aclNew, digestACL(zk.PermRead, "mallory:x")), podNew, aclOurs},
		{"nobody may create", readAll, podNew, aclOurs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, others := judgeACL(tc.acl, tc.ids); got != tc.want {
				t.Fatalf("judgeACL = %v (others %v), want %v", got, others, tc.want)
			}
		})
	}
}

func TestNodeACLFor(t *testing.T) {
	for _, tc := range []struct {
		name, auth, prev string
		want             []zk.ACL
	}{
		{"no credentials", "", "", zk.WorldACL(zk.PermAll)},
		{"one", credNew, "", aclNew},
		{"rotating", credNew, credOld, aclRotating},
		{"previous equal to current", credNew, credNew, aclNew},
	} {
		if got := nodeACLFor(tc.auth, tc.prev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// credUnit is a unit whose session holds auth (and prev while rotating),
// on a fake where the election's paths exist with acl.
func credUnit(t *testing.T, auth, prev string, acl []zk.ACL) *unit {
	t.Helper()
	u := newUnit(t, Config{})
	u.reconfigure(func(c *zksession.Config) { c.Auth, c.AuthPrevious = auth, prev })
	for _, p := range aclPaths("/e") {
		u.f.put(p, "", 0, 0)
		u.f.mu.Lock()
		u.f.nodes[p].acl = acl
		u.f.mu.Unlock()
	}
	return u
}

func (u *unit) aclOf(p string) []zk.ACL {
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	return u.f.nodes[p].acl
}

// A whole rotation on one path, each step by the pod that meets it: the
// rotating pod widens, the new pod narrows, every pod leads at its step.
func TestCheckACLRotates(t *testing.T) {
	for _, tc := range []struct {
		name       string
		auth, prev string
		from, to   []zk.ACL
		log        string
	}{
		{"old pod on the old ACL", credOld, "", aclOld, aclOld, ""},
		{"rotating pod widens", credNew, credOld, aclOld, aclRotating, "added zookeeper.auth's credential"},
		{"old pod stands on the rotating ACL", credOld, "", hide(aclRotating), hide(aclRotating), "credentials only its administrators may see"},
		{"rotating pod on the rotating ACL", credNew, credOld, aclRotating, aclRotating, ""},
		{"new pod narrows", credNew, "", aclRotating, aclNew, "removed a retired credential"},
		{"rotating pod on the new ACL", credNew, credOld, aclNew, aclNew, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := credUnit(t, tc.auth, tc.prev, tc.from)
			u.settle()
			u.wantLeader(true)
			for _, p := range aclPaths("/e") {
				if got := u.aclOf(p); !slices.Equal(got, tc.to) {
					t.Errorf("ACL of %s: %v, want %v", p, got, tc.to)
				}
			}
			writes := 0
			if !slices.Equal(tc.from, tc.to) {
				writes = len(aclPaths("/e"))
			}
			if n := u.f.opCount("setacl"); n != writes {
				t.Errorf("%d setAcl, want %d", n, writes)
			}
			if tc.log != "" && !strings.Contains(u.log.String(), tc.log) {
				t.Errorf("no %q in the log:\n%s", tc.log, u.log.String())
			}
			// The nodes it made carry its own ACL: both credentials while rotating.
			u.f.mu.Lock()
			defer u.f.mu.Unlock()
			for p, n := range u.f.nodes {
				if n.stat.EphemeralOwner == unitSession && !slices.Equal(n.acl, u.e.acl) {
					t.Errorf("%s made with %v, want %v", p, n.acl, u.e.acl)
				}
			}
		})
	}
}

// The refusal of issue 38: a pod restarted with a newer Secret than its
// peers found the path naming the old credential and blamed an open ACL.
// ZooKeeper hides the digests from a pod without ADMIN there, so its
// create is what tells; the refusal then names the mismatch and the key.
func TestCheckACLNamesACredentialMismatch(t *testing.T) {
	for _, tc := range []struct {
		name, auth, prev string
		acl              []zk.ACL
		want             []string
	}{
		{"new credential, old path", credNew, "", hide(aclOld),
			[]string{"credential mismatch", "ACL of /e.ids", "digest:electd:x", "not zookeeper.auth's credential", "set zookeeper.auth_previous", "set zookeeper.auth to", "Rotating the ZooKeeper credential"}},
		{"rotating with a wrong previous", credNew, "electd:wrong", hide(aclOld),
			[]string{"credential mismatch", "neither zookeeper.auth's nor zookeeper.auth_previous's"}},
		{"old credential, rotated path", credOld, "", hide(aclNew),
			[]string{"credential mismatch", "digest:electd:x", "set zookeeper.auth to"}},
		{"another credential, seen whole", credNew, "", digestACL(zk.PermAll, "mallory:x"),
			[]string{"credential mismatch", "ACL of /e lets", "digest:mallory:", "not zookeeper.auth's credential"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := credUnit(t, tc.auth, tc.prev, tc.acl)
			u.reconfigure(func(c *zksession.Config) { c.FixACL = true }) // never applied to another credential's path
			u.f.fail("create", "/e.ids/", zk.ErrNoAuth, false).times = 100
			_ = u.settleErr()
			st := u.e.Status()
			if st.IsLeader || st.Why != ReasonRefused {
				t.Fatalf("status %+v; want a refusal", st)
			}
			for _, w := range tc.want {
				if !strings.Contains(st.Reason, w) {
					t.Errorf("reason %q lacks %q", st.Reason, w)
				}
			}
			if strings.Contains(st.Reason, "anyone with that access") {
				t.Errorf("reason %q blames an open ACL", st.Reason)
			}
			if u.f.opCount("setacl") != 0 || u.f.opCount("create /e/") != 0 {
				t.Errorf("a refusing participant wrote: %v", u.f.ops)
			}
		})
	}
}

// Hidden digests that admit this pod are no refusal: an old pod joins
// during a rotation, and its first create succeeds.
func TestCheckACLHiddenButAdmitted(t *testing.T) {
	u := credUnit(t, credOld, "", hide(aclRotating))
	u.settle()
	u.wantLeader(true)
	if n := u.f.opCount("setacl"); n != 0 {
		t.Fatalf("%d setAcl from a pod that may not administer", n)
	}
}

// A widen that races with another client's change of the ACL reads it
// again rather than overwrite what the other wrote.
func TestCheckACLReadsAgainAfterAConcurrentChange(t *testing.T) {
	u := credUnit(t, credNew, credOld, aclOld)
	u.f.fail("setacl", "/e", zk.ErrBadVersion, false)
	u.settle()
	u.wantLeader(true)
	if got := u.aclOf("/e"); !slices.Equal(got, aclRotating) {
		t.Fatalf("ACL of /e: %v, want %v", got, aclRotating)
	}
	if n := u.f.opCount("getacl /e"); n < 2 {
		t.Fatalf("read the ACL of /e %d times, want it read again after the conflict", n)
	}
}

// A path that must be widened but whose previous credential may not
// administer it is refused, naming the step that failed.
func TestCheckACLWidenRefused(t *testing.T) {
	u := credUnit(t, credNew, credOld, aclOld)
	u.f.fail("setacl", "/e", zk.ErrNoAuth, false)
	if err := u.settleErr(); !errors.Is(err, errCredentialMismatch) {
		t.Fatalf("settle: %v, want a refusal", err)
	}
	if st := u.e.Status(); st.Why != ReasonRefused || !strings.Contains(st.Reason, "zookeeper.auth_previous's ADMIN right") {
		t.Fatalf("status %+v, want the failed widening named", st)
	}
}

func TestSessionConfigAuthPrevious(t *testing.T) {
	base := zksession.Config{Servers: []string{"127.0.0.1:2181"}, Auth: credNew}
	for _, tc := range []struct {
		name       string
		auth, prev string
		err        string
	}{
		{"rotating", credNew, credOld, ""},
		{"equal", credNew, credNew, ""},
		{"without auth", "", credOld, "set without Auth"},
		{"malformed", credNew, "nocolon", "want user:password"},
	} {
		c := base
		c.Auth, c.AuthPrevious = tc.auth, tc.prev
		err := c.Validate()
		var fe *FieldError
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "":
		case !errors.As(err, &fe) || fe.Field != "AuthPrevious" || !strings.Contains(err.Error(), tc.err):
			t.Errorf("%s: %v, want a field error of AuthPrevious saying %q", tc.name, err, tc.err)
		}
	}
}
