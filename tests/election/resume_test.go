package election_test

// What ZooKeeper does when a session's id and password are presented on a
// second connection while the first still runs (docs/design/session-and-faults.md,
// "What stops a wrong resume"): the premise of zookeeper.session_file's flock. ZooKeeper does
// not fence the first connection: on the same server it closes it, and the
// first client, whose lease still runs, reconnects and takes the session
// back; on another server of an ensemble the first connection keeps
// working and its syncs renew its lease. So electd itself must never let
// two processes present one session.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// keeper is a CredentialKeeper in memory.
type keeper struct {
	mu sync.Mutex
	c  zksession.Credentials
}

func (k *keeper) Keep(c zksession.Credentials) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c = c
	return nil
}

func (k *keeper) Forget() error { return nil }

func (k *keeper) kept() zksession.Credentials {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.c
}

// leaseRenewals counts lease renewals and reconnects.
type leaseRenewals struct{ n, reconnects atomic.Int64 }

func (r *leaseRenewals) SessionExpired()            {}
func (r *leaseRenewals) Reconnected()               { r.reconnects.Add(1) }
func (r *leaseRenewals) LeaseRenewed(time.Duration) { r.n.Add(1) }
func (r *leaseRenewals) count() int64               { return r.n.Load() }

// leaderOn is a latch leader whose session dials servers alone, with its
// credentials kept in memory and its renewals counted.
func leaderOn(t *testing.T, servers []string, path string) (*election.Elector, *keeper, *leaseRenewals) {
	t.Helper()
	k, rc := &keeper{}, &leaseRenewals{}
	s, err := zksession.Connect(zksession.Config{Servers: servers, SessionTimeout: 4 * time.Second,
		Keeper: k, Recorder: rc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	el, err := election.New(s, election.Config{Path: path, ID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		<-el.Done()
	})
	go func() { _ = el.Run(ctx) }()
	waitFor(t, liveWithin, "the first process leading, its session kept", func() bool {
		return el.Status().IsLeader && k.kept().ID == el.Status().SessionID
	})
	return el, k, rc
}

// second presents c on servers, as a second process with the file would.
func second(t *testing.T, servers []string, c zksession.Credentials) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithSession(c.ID, c.Password),
		zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	waitFor(t, liveWithin, "the second connection in the session", func() bool {
		id, _ := conn.Session()
		return conn.State() == zk.StateHasSession && id == c.ID
	})
	return conn
}

// On one server the session moves to the new connection and the server
// closes the old one at once; the old client sees a disconnect, nothing
// that tells it apart from a network fault (it keeps its lease and its
// node, and may take the session back).
func TestSessionMoveOnOneServer(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{Servers: 1, TickTime: tickTime})
	el, k, rc := leaderOn(t, ens.Servers(), "/resume/move1")
	sid := el.Status().SessionID
	if n := rc.reconnects.Load(); n != 0 {
		t.Fatalf("%d reconnects before the move", n)
	}
	second(t, ens.Servers(), k.kept())
	// The old client is back so soon that a poll of its state can miss
	// the gap: its reconnect says the server closed its connection.
	waitFor(t, liveWithin, "the old connection closed by the server, and the old client back", func() bool {
		return rc.reconnects.Load() > 0
	})
	if st := el.Status(); st.SessionID != sid {
		t.Fatalf("the old client is in session %#x, was %#x: the move expired it", st.SessionID, sid)
	}
}

// On an ensemble, a second connection to another server leaves the first
// working: its syncs are answered and renew its lease while the second
// holds the session too.
func TestSessionMoveOnAnotherServer(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{Servers: 3, TickTime: tickTime})
	servers := ens.Servers()
	el, k, rc := leaderOn(t, servers[:1], "/resume/move3")
	conn := second(t, servers[2:], k.kept())
	from := rc.count()
	waitFor(t, liveWithin, "the old connection renewing its lease after the move", func() bool {
		return rc.count() >= from+3 && conn.State() == zk.StateHasSession
	})
	if !el.Status().IsLeader {
		t.Fatalf("the old client stopped leading: %s", el.Status().Reason)
	}
}
