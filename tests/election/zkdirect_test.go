package election_test

// The tests' own ZooKeeper client: how they look at the nodes, whatever the participants
// believe.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/tests/harness/wait"
)

// ---------------------------------------------------------------------------
// direct ZooKeeper access

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// directSession is the direct client's session timeout: the longest the
// servers grant (20 x tickTime), so that it outlives the outages the tests make
// when it can; when it cannot, go-zookeeper makes it a new session (see zkRead).
const directSession = 20 * tickTime

// dialZK connects a plain go-zookeeper client and waits for its session.
func dialZK(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(servers, directSession, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false), zk.WithDialer(boundedDial))
	if err != nil {
		t.Fatalf("direct zk client: %v", err)
	}
	t.Cleanup(c.Close)
	waitFor(t, liveWithin, "the direct zk client's session", func() bool { return c.State() == zk.StateHasSession })
	return c
}

// zk returns the harness's direct client (no auth).
func (h *harness) zk() *zk.Conn {
	h.zkMu.Lock()
	defer h.zkMu.Unlock()
	if h.zkc == nil {
		h.zkc = dialZK(h.t, h.servers())
	}
	return h.zkc
}

// redialZK replaces the direct client with a new one, if c is still it.
func (h *harness) redialZK(c *zk.Conn) {
	h.zkMu.Lock()
	defer h.zkMu.Unlock()
	if h.zkc == c {
		c.Close()
		h.zkc = nil
	}
}

// boundedDial dials a server for the direct client and caps every read deadline
// go-zookeeper sets at the session timeout: it waits 10 x 2/3 of it (27 s) for
// the answer to its connect request, so a connection made to a server on its
// way down or up could hold it far longer than the outage (electd bounds its own
// handshake likewise, in internal/election/zksession). Deadlines in a session are shorter.
func boundedDial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return cappedConn{c}, nil
}

type cappedConn struct{ net.Conn }

func (c cappedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(capped(t))
}

func (c cappedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(capped(t)) }

func capped(t time.Time) time.Time {
	if limit := time.Now().Add(directSession); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// zkRead runs read on the direct client, again while the client is between
// connections, up to liveWithin: after the tests stop and restart the server,
// the client needs a reconnect (go-zookeeper waits a second between rounds of
// its server list) and sometimes a new session, and on a loaded machine that
// takes a while. Any other error is returned at once.
//
// A client still between connections after two session timeouts is replaced by
// a new one: whatever holds it, a fresh connection and session can read.
func (h *harness) zkRead(read func(c *zk.Conn) error) error {
	start := time.Now()
	since := start // the current client's first failure
	for {
		c := h.zk()
		err := read(c)
		if err == nil || !reconnecting(err) || time.Since(start) > liveWithin {
			return err
		}
		if time.Since(since) > 2*directSession {
			h.t.Logf("direct zk client still between connections after %v (%v): dialling a new one", time.Since(since).Round(time.Millisecond), err)
			h.redialZK(c)
			since = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reconnecting says whether err means the client was between connections.
func reconnecting(err error) bool {
	for _, e := range []error{zk.ErrNoServer, zk.ErrConnectionClosed, zk.ErrSessionExpired, zk.ErrSessionMoved, zk.ErrClosing} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

type znode struct {
	name  string
	id    string
	owner int64
	czxid int64
}

func (n znode) String() string {
	return fmt.Sprintf("%s(id=%s owner=0x%x czxid=%d)", n.name, n.id, n.owner, n.czxid)
}

// readQueue lists the path's children in Curator's order with their data
// and stat. A missing path is an empty queue. Children that vanish while
// being read are skipped.
func readQueue(c *zk.Conn, path string, mode election.Mode) ([]znode, error) {
	kids, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tag := "latch-"
	if mode == election.ModeSelector {
		tag = "lock-"
	}
	key := func(s string) string {
		if i := strings.LastIndex(s, tag); i >= 0 {
			return s[i+len(tag):]
		}
		return s
	}
	sort.SliceStable(kids, func(i, j int) bool { return key(kids[i]) < key(kids[j]) })
	var out []znode
	for _, k := range kids {
		data, st, err := c.Get(path + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, znode{name: k, id: string(data), owner: st.EphemeralOwner, czxid: st.Czxid})
	}
	return out, nil
}

func (h *harness) queue() []znode {
	h.t.Helper()
	var q []znode
	err := h.zkRead(func(c *zk.Conn) (err error) { q, err = readQueue(c, h.path, h.mode); return err })
	if err != nil {
		h.t.Fatalf("reading %s: %v", h.path, err)
	}
	return q
}

// owned lists the queue's nodes owned by the session sid.
func (h *harness) owned(sid int64) []znode {
	h.t.Helper()
	var out []znode
	for _, n := range h.queue() {
		if n.owner == sid {
			out = append(out, n)
		}
	}
	return out
}

// nodesConsistent says whether the path holds exactly one node per live
// participant, each owned by that participant's current session and named
// as its Status().Node, and nothing else. In race mode only the leader's.
func (h *harness) nodesConsistent() (bool, string) {
	var q []znode
	err := h.zkRead(func(c *zk.Conn) (err error) { q, err = readQueue(c, h.path, h.mode); return err })
	if err != nil {
		return false, err.Error()
	}
	live := h.live()
	if h.mode == election.ModeRace {
		ls := h.leaders()
		if len(ls) != 1 || len(q) != 1 || q[0].owner != ls[0].sess.ID() {
			return false, fmt.Sprintf("race: leaders %v, nodes %v", ls, q)
		}
		return true, ""
	}
	if len(q) != len(live) {
		return false, fmt.Sprintf("%d nodes for %d participants: %v", len(q), len(live), q)
	}
	owners := map[int64]*participant{}
	for _, p := range live {
		owners[p.sess.ID()] = p
	}
	seen := map[*participant]bool{}
	for _, n := range q {
		p := owners[n.owner]
		if p == nil {
			return false, fmt.Sprintf("node %v is owned by no live participant's session", n)
		}
		if seen[p] {
			return false, fmt.Sprintf("%s owns two nodes: %v", p, q)
		}
		seen[p] = true
		if st := p.status(); st.Node != n.name {
			return false, fmt.Sprintf("%s owns %v but reports node %q", p, n, st.Node)
		}
	}
	return true, ""
}

// waitNodesConsistent waits for nodesConsistent, then checks it keeps
// holding for a while (a late orphan would break it).
func (h *harness) waitNodesConsistent(d, hold time.Duration) {
	h.t.Helper()
	err := wait.Until(context.Background(), d, pollEvery, func() error {
		if ok, why := h.nodesConsistent(); !ok {
			return errors.New(why)
		}
		return nil
	})
	if err != nil {
		h.t.Fatalf("nodes not one per participant: %v", err)
	}
	holdFor(h.t, hold, "one node per participant", func() bool {
		ok, w := h.nodesConsistent()
		if !ok {
			h.t.Logf("nodes: %s", w)
		}
		return ok
	})
}

// newUUID makes a random 36-character dashed UUID, as Curator writes them.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ensurePath creates path and its parents as persistent nodes.
func ensurePath(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	cur := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + seg
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}
