package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The credentials of the rotation, and one nobody was ever given.
const (
	credOld   = "electd:old-secret"
	credNew   = "electd:new-secret"
	credWrong = "electd:wrong-secret"
)

// aclPaths are an election's path and its meta and ids paths: each is
// ruled by its ACL.
func aclPaths(p string) []string { return []string{p, p + ".advertise", p + ".ids"} }

func digest(perms int32, cred string) []zk.ACL {
	user, pass, _ := strings.Cut(cred, ":")
	return zk.DigestACL(perms, user, pass)
}

// The ACLs the election's paths go through (docs/operations.md, "Rotating
// the ZooKeeper credential").
var (
	aclOld      = slices.Concat(digest(zk.PermAll, credOld), zk.WorldACL(zk.PermRead))
	aclRotating = slices.Concat(digest(zk.PermAll, credNew), digest(zk.PermAll&^zk.PermAdmin, credOld), zk.WorldACL(zk.PermRead))
	aclNew      = slices.Concat(digest(zk.PermAll, credNew), zk.WorldACL(zk.PermRead))
)

// Three participants rotate the ZooKeeper credential as the procedure
// says: a rolling restart with the new credential and the old one as
// zookeeper.auth_previous, then one with the new alone, one participant at
// a time. One leader throughout: no two at once, and a restart of a
// follower does not even blink the leader's claims. No ACL of the
// election's paths ever lets anyone but the two credentials create or
// delete; they go from the old credential to both to the new one. Then a
// participant with the old credential, and one with a credential nobody
// uses, are refused with a credential mismatch, and the others stay idle.
// In latch mode, and in race mode, whose followers own no election node.
func TestE2ECredentialRotation(t *testing.T) {
	zkAddr := zktest.Standalone(t)
	for _, mode := range []string{"latch", "race"} {
		t.Run(mode, func(t *testing.T) { rotate(t, zkAddr, mode) })
	}
}

func rotate(t *testing.T, zkAddr, mode string) {
	rotationPath := "/e2e/rotate/" + mode
	watch := watchACLs(t, zkAddr, aclPaths(rotationPath))
	obs := electdtest.NewObserver(20*time.Millisecond, time.Second)
	defer obs.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := func(id, auth, prev string) *electdtest.Member {
		args := []string{"--zookeeper.auth", auth}
		if prev != "" {
			args = append(args, "--zookeeper.auth_previous", prev)
		}
		m := electdtest.StartMember(t, zkAddr, rotationPath, id, mode, args...)
		electdtest.WaitOK(t, "/healthz", 30*time.Second, m)
		obs.Add(id, m.Addr)
		return m
	}
	ms := make([]*electdtest.Member, 3)
	for i := range ms {
		ms[i] = start(fmt.Sprintf("p%d-old", i), credOld, "")
	}
	joined(t, ms)
	electdtest.OneLeader(t, ms, 30*time.Second)
	watch.want(t, aclOld)

	// One restart at a time: the first rolling restart, in which a pod
	// also restarts with the old Secret (a crash before its turn), then
	// the second. The first pod of each phase rotates the ACLs.
	type step struct {
		i              int
		id, auth, prev string
		acl            []zk.ACL
		log            string
	}
	steps := []step{
		{0, "p0-both", credNew, credOld, aclRotating, "added zookeeper.auth's credential"},
		{1, "p1-old-again", credOld, "", aclRotating, "credentials only its administrators may see"},
		{1, "p1-both", credNew, credOld, aclRotating, ""},
		{2, "p2-both", credNew, credOld, aclRotating, ""},
		{0, "p0-new", credNew, "", aclNew, "removed a retired credential"},
		{1, "p1-new", credNew, "", aclNew, ""},
		{2, "p2-new", credNew, "", aclNew, ""},
	}
	for _, st := range steps {
		leader := electdtest.OneLeader(t, ms, 30*time.Second)
		h, _ := leader.HealthNow()
		others := electdtest.Others(ms, ms[st.i])
		rests := restsOf(t, ctx, others)
		from := obs.Now()

		old := ms[st.i]
		obs.Remove(old.Name)
		old.Send(syscall.SIGTERM)
		if err := old.WaitExit(15 * time.Second); err != nil {
			t.Fatalf("%s exited with %v after SIGTERM, want status 0", old.Name, err)
		}
		ms[st.i] = start(st.id, st.auth, st.prev)
		joined(t, ms)
		next := electdtest.OneLeader(t, ms, 30*time.Second)
		to := obs.Now()
		watch.want(t, st.acl)
		if st.log != "" && !ms[st.i].LogHas(st.log) {
			t.Errorf("%s did not log %q", st.id, st.log)
		}

		samples := obs.Samples()
		if old != leader {
			// A follower's restart: the leader never stops claiming.
			for _, p := range invariant.NoChange(samples, from, to, leader.Name, h.FencingToken, time.Second,
				invariant.Blind(samples, from, to, 100*time.Millisecond)) {
				t.Errorf("restart of follower %s: %s", old.Name, p)
			}
		} else if nh, _ := next.HealthNow(); nh.FencingToken <= h.FencingToken {
			t.Errorf("after the leader's restart %s leads with token %d, was %d", next.Name, nh.FencingToken, h.FencingToken)
		}
		t.Logf("%s -> %s: %s leads", old.Name, st.id, next.Name)
		if err := electdtest.WaitIdle(ctx, procsOf(others), rests, 2*time.Second); err != nil {
			t.Errorf("after %s's restart: %v", old.Name, err)
		}
	}
	if o := invariant.Overlaps(obs.Samples()); len(o) > 0 {
		t.Errorf("two leaders at once: %v", o)
	}

	// Pods started with a Secret older than the rotation, or another one.
	leader := electdtest.OneLeader(t, ms, 30*time.Second)
	h, _ := leader.HealthNow()
	rests := restsOf(t, ctx, ms)
	from := obs.Now()
	for _, c := range []struct{ id, auth string }{{"stale", credOld}, {"wrong", credWrong}} {
		m := electdtest.StartMember(t, zkAddr, rotationPath, c.id, mode, "--zookeeper.auth", c.auth)
		wait.For(t, 30*time.Second, c.id+" refused for a credential mismatch", func() bool {
			return strings.Contains(m.Reason(), "credential mismatch")
		})
		reason := m.Reason()
		// ZooKeeper hides the hashes from a client that may not administer
		// the node: the reason names the user alone.
		for _, want := range []string{"ACL of " + rotationPath, "digest:electd:x", "set zookeeper.auth to", "zookeeper.auth_previous"} {
			if !strings.Contains(reason, want) {
				t.Errorf("%s: reason %q lacks %q", c.id, reason, want)
			}
		}
		if strings.Contains(reason, "anyone with that access") {
			t.Errorf("%s: reason %q blames an open ACL", c.id, reason)
		}
		if lines := m.LogLines("cannot stand in the election: credential mismatch"); len(lines) != 1 {
			t.Errorf("%s: %d log lines of the refusal, want 1", c.id, len(lines))
		}
		if q := leader.Queue(); len(q) != len(ms) {
			t.Errorf("%s: the queue has %d participants, want %d: %+v", c.id, len(q), len(ms), q)
		}
		if err := electdtest.WaitIdle(ctx, procsOf(ms), rests, 2*time.Second); err != nil {
			t.Errorf("while %s refuses: %v", c.id, err)
		}
		m.Send(syscall.SIGTERM)
		if err := m.WaitExit(15 * time.Second); err != nil {
			t.Errorf("%s exited with %v after SIGTERM, want status 0", c.id, err)
		}
	}
	samples := obs.Samples()
	for _, p := range invariant.NoChange(samples, from, obs.Now(), leader.Name, h.FencingToken, time.Second,
		invariant.Blind(samples, from, obs.Now(), 100*time.Millisecond)) {
		t.Errorf("while refused participants came and went: %s", p)
	}
	watch.want(t, aclNew)

	for _, p := range aclPaths(rotationPath) {
		got := watch.states(p)
		if want := [][]zk.ACL{aclOld, aclRotating, aclNew}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("the ACL of %s went through %v, want %v", p, got, want)
		}
	}
	if bad := watch.stop(); len(bad) > 0 {
		t.Errorf("ACLs that let others create or delete: %v", bad)
	}
}

// joined waits until every member of ms is in the queue.
func joined(t *testing.T, ms []*electdtest.Member) {
	t.Helper()
	wait.For(t, 30*time.Second, "all participants to join", func() bool {
		return len(ms[0].Queue()) == len(ms)
	})
}

func procsOf(ms []*electdtest.Member) []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, m := range ms {
		out = append(out, m.Proc)
	}
	return out
}

// restsOf measures what ms do at rest.
func restsOf(t *testing.T, ctx context.Context, ms []*electdtest.Member) []invariant.Rest {
	t.Helper()
	rests, err := electdtest.Rests(ctx, procsOf(ms), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return rests
}

// aclWatch reads the ACLs of paths over and over: every distinct ACL each
// went through, and every one that let an identity other than a digest
// credential create or delete. It holds both credentials, so that
// ZooKeeper shows it the digests whole in every state.
type aclWatch struct {
	t      *testing.T
	conn   *zk.Conn
	paths  []string
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	seq map[string][][]zk.ACL
	bad []string
}

// watchACLs starts an aclWatch until the test ends or stop.
func watchACLs(t *testing.T, servers string, paths []string) *aclWatch {
	t.Helper()
	c, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	wait.For(t, 30*time.Second, "the watcher's ZooKeeper session", func() bool { return c.State() == zk.StateHasSession })
	for _, cred := range []string{credOld, credNew} {
		if err := c.AddAuth("digest", []byte(cred)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &aclWatch{t: t, conn: c, paths: paths, cancel: cancel, done: make(chan struct{}), seq: map[string][][]zk.ACL{}}
	t.Cleanup(func() { w.stop() })
	go w.run(ctx)
	return w
}

func (w *aclWatch) run(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range w.paths {
			w.read(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// read records p's ACL; a missing path has none.
func (w *aclWatch) read(p string) []zk.ACL {
	acl, _, err := w.conn.GetACL(p)
	if err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.seq[p]; len(s) == 0 || !slices.Equal(s[len(s)-1], acl) {
		w.seq[p] = append(s, acl)
	}
	for _, a := range acl {
		if a.Perms&(zk.PermCreate|zk.PermDelete) != 0 && a.Scheme != "digest" {
			w.bad = append(w.bad, fmt.Sprintf("%s: %v", p, acl))
		}
	}
	return acl
}

// want checks that every path's ACL is acl now.
func (w *aclWatch) want(t *testing.T, acl []zk.ACL) {
	t.Helper()
	for _, p := range w.paths {
		if got := w.read(p); !slices.Equal(got, acl) {
			t.Errorf("ACL of %s: %v, want %v", p, got, acl)
		}
	}
}

// states is every distinct ACL p had, in order.
func (w *aclWatch) states(p string) [][]zk.ACL {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seq[p])
}

// stop ends the watch and returns the open ACLs it saw.
func (w *aclWatch) stop() []string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}
