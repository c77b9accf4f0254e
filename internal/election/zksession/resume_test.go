package zksession

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// recKeeper records what a Session keeps and forgets.
type recKeeper struct {
	mu     sync.Mutex
	kept   []Credentials
	forgot int
}

func (k *recKeeper) Keep(c Credentials) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = append(k.kept, c)
	return nil
}

func (k *recKeeper) Forget() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forgot++
	return nil
}

func (k *recKeeper) last() (Credentials, int, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kept) == 0 {
		return Credentials{}, 0, k.forgot
	}
	return k.kept[len(k.kept)-1], len(k.kept), k.forgot
}

// resumingSession is a Session before its first session, asking to resume
// 0x1000, on a fake ZooKeeper; its log is returned.
func resumingSession(t *testing.T, k CredentialKeeper) (*Session, *fakeConn, *testkit.Buffer) {
	buf := &testkit.Buffer{}
	f := newFakeConn(unitSession)
	s := &Session{
		cfg: Config{SessionTimeout: 4 * time.Second, Keeper: k,
			Resume: &Credentials{ID: unitSession, Password: []byte("pw")}},
		conn: f, log: slog.New(slog.NewTextHandler(buf, nil)), clock: clocktest.NewFake(time.Unix(1000, 0)),
		subs: map[chan struct{}]struct{}{}, done: make(chan struct{}), state: StateConnecting, authed: true,
	}
	return s, f, buf
}

func TestSessionResumed(t *testing.T) {
	s, _, log := resumingSession(t, nil)
	s.negotiatedID.Store(unitSession)
	s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	if got := s.Resumed(); got != unitSession {
		t.Fatalf("Resumed() = %#x, want %#x", got, unitSession)
	}
	if out := log.String(); !strings.Contains(out, "zookeeper session resumed") || strings.Contains(out, "established") ||
		strings.Contains(out, "pw") {
		t.Fatalf("log:\n%s", out)
	}
}

// ZooKeeper answers expired (a session id of 0), then go-zookeeper makes a
// new session: not resumed, said once, and no expiry counted.
func TestSessionResumeExpired(t *testing.T) {
	s, _, log := resumingSession(t, nil)
	s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateExpired})
	s.negotiatedID.Store(0x2000)
	s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	if got := s.Resumed(); got != 0 {
		t.Fatalf("Resumed() = %#x after an expiry", got)
	}
	out := log.String()
	if n := strings.Count(out, "level=INFO"); n != 1 || !strings.Contains(out, "not resumed") ||
		strings.Contains(out, "level=WARN") {
		t.Fatalf("want one INFO line saying why, got:\n%s", out)
	}
}

// The keeper gets the live session's credentials, and is told to forget
// them when the session is closed.
func TestSessionKeepsAndForgets(t *testing.T) {
	k := &recKeeper{}
	s, _, _ := resumingSession(t, k)
	s.loops.Add(1)
	go s.keepLoop()
	s.negotiatedID.Store(unitSession)
	s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	testkit.For(t, 5*time.Second, "the session kept", func() bool {
		_, n, _ := k.last()
		return n > 0
	})
	if c, _, _ := k.last(); c.ID != unitSession || string(c.Password) != "fake-password" {
		t.Fatalf("kept %v", c)
	}
	s.Close()
	if _, n, forgot := k.last(); n != 1 || forgot != 1 {
		t.Fatalf("kept %d times, forgot %d times; want 1 and 1", n, forgot)
	}
}
