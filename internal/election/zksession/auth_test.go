package zksession

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/testkit"
)

const (
	credOld = "electd:old-secret"
	credNew = "electd:new-secret"
)

// authRecorder records the credentials a Session adds, failing the ones
// in fail once each.
type authRecorder struct {
	*fakeConn
	mu   sync.Mutex
	got  []string
	fail map[string]bool
}

func (a *authRecorder) AddAuth(_ string, auth []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail[string(auth)] {
		delete(a.fail, string(auth))
		return errors.New("connection lost")
	}
	a.got = append(a.got, string(auth))
	return nil
}

// A rotating Session adds both credentials before it reports connected,
// each once: a failure of the second retries the second alone
// (go-zookeeper re-sends every credential added on each reconnect).
func TestSessionAddsBothCredentials(t *testing.T) {
	rec := &authRecorder{fakeConn: newFakeConn(1), fail: map[string]bool{credOld: true}}
	clk := clocktest.NewFake(time.Unix(1000, 0))
	s := &Session{
		cfg: Config{Auth: credNew, AuthPrevious: credOld}, conn: rec, log: slog.New(slog.DiscardHandler), clock: clk,
		subs: map[chan struct{}]struct{}{}, done: make(chan struct{}), state: StateConnected, sessionID: 1,
	}
	s.loops.Add(1)
	go s.authLoop()
	defer func() { close(s.done); s.loops.Wait() }()
	if st := s.State(); st != StateConnecting {
		t.Fatalf("state %v before authenticating, want connecting", st)
	}
	testkit.For(t, 5*time.Second, "both credentials added", func() bool {
		clk.Advance(time.Second) // the retry's timer
		return s.State() == StateConnected
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []string{credNew, credOld}; !slices.Equal(rec.got, want) {
		t.Fatalf("added %q, want %q", rec.got, want)
	}
}
