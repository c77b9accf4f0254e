package zksession

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

const unitSession = 0x1000

// fakeConn is the part of a ZooKeeper connection a Session calls itself:
// syncs (counted), credentials and the session's id. The recipes' requests
// are internal/election's fake (fakezk_test.go); any of them here panics.
type fakeConn struct {
	Conn // nil: a request the Session does not make
	mu   sync.Mutex
	sid  int64
	ops  map[string]int
}

func newFakeConn(sid int64) *fakeConn { return &fakeConn{sid: sid, ops: map[string]int{}} }

func (f *fakeConn) opCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops[op]
}

func (f *fakeConn) Sync(p string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops["sync"]++
	return p, nil
}

func (f *fakeConn) AddAuth(string, []byte) error { return nil }
func (f *fakeConn) State() zk.State              { return zk.StateHasSession }
func (f *fakeConn) Close()                       {}
func (f *fakeConn) Session() (int64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sid, []byte("fake-password")
}

// unit is a Session on a fakeConn and a fake clock, its loops not started:
// each test starts the one it exercises.
type unit struct {
	f   *fakeConn
	clk *clocktest.Fake
	s   *Session
	log *testkit.Buffer
}

// newUnit is session 0x1000, connected with a long lease.
func newUnit(t *testing.T) *unit {
	t.Helper()
	u := &unit{f: newFakeConn(unitSession), clk: clocktest.NewFake(time.Unix(1000, 0)), log: &testkit.Buffer{}}
	logger := slog.New(slog.NewTextHandler(u.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	u.s = &Session{
		cfg: Config{SessionTimeout: 4 * time.Second}, conn: u.f, log: logger, clock: u.clk,
		subs: map[chan struct{}]struct{}{}, done: make(chan struct{}),
		state: StateConnected, authed: true, hadSess: true, sessionID: unitSession, timeout: 4 * time.Second,
		leaseSID: unitSession, leaseEnd: u.clk.Now().Add(time.Hour),
	}
	return u
}

func waitUntil(t *testing.T, desc string, cond func() bool) {
	t.Helper()
	testkit.For(t, 10*time.Second, desc, cond)
}
