package proxy

// The in-process integration of the proxy with real electors on a real
// ZooKeeper, joined by internal/forward as the daemon joins them:
// participants that each run an elector, a proxy and a fenced application.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// fence is the storage every application writes to: it refuses a token
// lower than one it has seen (docs/design/session-and-faults.md, "Failure semantics"), and
// it is the ledger of the requests the applications ran, by request id:
// none may run twice.
type fence struct {
	mu         sync.Mutex
	max        int64
	violations []string
	ran        map[string]string // request id -> who ran it
}

// once records that who ran request id; a GET may be sent again (RFC
// 9110, 9.2.2): only other methods are checked.
func (f *fence) once(who, id, method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ran == nil {
		f.ran = map[string]string{}
	}
	if first, ok := f.ran[id]; ok && method != http.MethodGet {
		f.violations = append(f.violations, fmt.Sprintf("request %s ran twice: at %s, then at %s", id, first, who))
	}
	f.ran[id] = who
}

func (f *fence) check(who string, token int64, leads bool, own int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !leads || token != own:
		f.violations = append(f.violations, fmt.Sprintf("%s's application got token %d while its elector leads=%v with token %d", who, token, leads, own))
	case token < f.max:
		f.violations = append(f.violations, fmt.Sprintf("%s's application got token %d after token %d: a stale leader served", who, token, f.max))
	}
	f.max = max(f.max, token)
}

func (f *fence) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// inprocMember is one participant: an elector, its proxy, its application.
type inprocMember struct {
	name   string
	sess   *zksession.Session
	el     *election.Elector
	px     *proxy.Proxy
	addr   string // the proxy's, for clients
	peer   string // the proxy's, for the other proxies
	app    *httptest.Server
	served sync.WaitGroup // Serve and Run
	cancel context.CancelFunc
	stopPx context.CancelFunc
}

// startMember joins the election at path with a proxy in front of a fenced
// application; resend is proxy.Config.ResendUnreadBody (the application
// reads every body before it acts).
func startMember(t *testing.T, ens *zktest.Ensemble, path, name string, f *fence, resend bool) *inprocMember {
	t.Helper()
	m := &inprocMember{name: name}
	m.app = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strconv.ParseInt(r.Header.Get(proxy.HeaderFencingToken), 10, 64)
		st := m.el.Status()
		f.check(name, tok, st.IsLeader && r.Header.Get(proxy.HeaderLeaderID) == name, st.FencingToken)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		f.once(name, r.Header.Get("X-Request-Id"), r.Method)
		fmt.Fprintf(w, "%s %d", name, tok)
	}))
	t.Cleanup(m.app.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	peerLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.peer = peerLn.Addr().String()
	m.sess, err = zksession.Connect(zksession.Config{Servers: ens.Servers(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.sess.Close)
	m.el, err = election.New(m.sess, election.Config{Path: path, ID: name, Proxy: m.peer})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	route := forward.NewLeadership(m.el)
	m.px, err = proxy.New(route, proxy.Config{Listen: m.addr, PeerListen: m.peer, App: m.app.Listener.Addr().String(),
		ResendUnreadBody: resend, PeerKey: peerKey})
	if err != nil {
		t.Fatal(err)
	}
	// A withdrawal, as the daemon's candidacy makes it (without the watch
	// that stands again once the application takes connections).
	route.OnStepDown(func(string) {
		go m.px.Yield(ctx, func(ctx context.Context) error {
			return m.el.SetCandidate(ctx, false, election.LossAppUnhealthy)
		})
	})
	m.served.Go(func() { route.Watch(ctx) })
	pctx, stopPx := context.WithCancel(ctx)
	m.stopPx = stopPx
	m.served.Go(func() {
		if err := m.px.Serve(pctx, ln, peerLn); err != nil {
			t.Errorf("%s: Serve: %v", name, err)
		}
	})
	m.served.Go(func() { _ = m.el.Run(ctx) })
	t.Cleanup(m.stop)
	return m
}

// stop ends the member: its proxy, then its elector.
func (m *inprocMember) stop() {
	m.stopPx()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.el.Resign(ctx)
	m.cancel()
	m.served.Wait()
}

// leads reports whether the member leads now.
func (m *inprocMember) leads() bool { return m.el.Status().IsLeader }

// release hands leadership over as the daemon will: through Yield, so
// that the requests its application has finish first.
func (m *inprocMember) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.px.Yield(ctx, m.el.Release)
}

// handOver is what a pod deletion does when the application's preStop
// asks electd to hand over before the application stops: a release
// through Yield that returns once another participant leads.
func (m *inprocMember) handOver() error {
	return m.release()
}

// shutDown stops the member as the daemon will: leave the election for
// good through Yield (a withdrawal: with election.handoff newest, to the
// participant that joined last, so that a rollout costs one hand-over),
// keep forwarding as an observer for a grace period while clients stop
// sending to it (its endpoint leaves the pool), let the proxy drain,
// forwarding what it still holds to the new leader, then resign.
func (m *inprocMember) shutDown(t *testing.T, clients *proxykit.Pool, others []*inprocMember) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.px.Yield(ctx, func(ctx context.Context) error {
		return m.el.SetCandidate(ctx, false, election.LossShutdown)
	})
	if err != nil {
		return err
	}
	wait.For(t, inprocPatience, "a new leader", func() bool {
		for _, o := range others {
			if o != m && o.leads() {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond) // shutdown_grace
	clients.Remove(m.name)
	m.stopPx()
	return m.el.Resign(ctx)
}

// inprocPatience bounds every wait of these tests: it only ends a test that hangs.
const inprocPatience = 15 * time.Second

// peerKey is every test election's proxy.peer_key: the members of one
// share it.
const peerKey = "cHJveHl0ZXN0IHBlZXIga2V5LCBzaGFyZWQgYnkgYWxs"
