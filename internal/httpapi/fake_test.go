package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/proxy"
)

var _ Election = (*election.Elector)(nil)

// fakeElection is an Election whose status the test sets and whose Observe
// channel the test drives through updates.
type fakeElection struct {
	mu         sync.Mutex
	st         election.Status
	leading    chan struct{} // closed when st becomes leader
	awaiting   chan struct{} // closed when Await is first called
	awaitCtx   context.Context
	observeCtx chan context.Context // each Observe's ctx
	updates    chan election.Status // forwarded to Observe's channel
	released   int
	drained    *proxy.Drained // what a proxy's drain reports in Release
	releaseErr error
	parts      []election.Participant
	partsErr   error
	partsCtx   context.Context
}

func newFake(st election.Status) *fakeElection {
	f := &fakeElection{
		leading:    make(chan struct{}),
		awaiting:   make(chan struct{}),
		observeCtx: make(chan context.Context, 8),
		updates:    make(chan election.Status),
	}
	f.set(st)
	return f
}

func (f *fakeElection) set(st election.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	if st.IsLeader {
		select {
		case <-f.leading:
		default:
			close(f.leading)
		}
	}
}

func (f *fakeElection) Status() election.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeElection) Observe(ctx context.Context) <-chan election.Status {
	out := make(chan election.Status)
	first := f.Status()
	f.observeCtx <- ctx
	go func() {
		defer close(out)
		st, ok := first, true
		for ok {
			select {
			case out <- st:
			case <-ctx.Done():
				return
			}
			select {
			case st, ok = <-f.updates:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (f *fakeElection) Await(ctx context.Context) (<-chan struct{}, error) {
	f.mu.Lock()
	if f.awaitCtx == nil {
		f.awaitCtx = ctx
		close(f.awaiting)
	}
	f.mu.Unlock()
	select {
	case <-f.leading:
		return make(chan struct{}), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeElection) Release(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released++
	if f.drained != nil {
		proxy.NoteDrain(ctx, *f.drained) // as the proxy's Yield around it does
	}
	return f.releaseErr
}

func (f *fakeElection) Participants(ctx context.Context) ([]election.Participant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partsCtx = ctx
	return f.parts, f.partsErr
}

// Statuses the tests start from.
var (
	fixedNow   = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	web1       = &election.Participant{ID: "web-1", Advertise: "10.0.0.7:8080", Node: "_c_a-latch-0000000003", Session: 0x1000a2b3c4d0001, FencingToken: 4294967302}
	web2       = &election.Participant{ID: "web-2", Advertise: "10.0.0.8:8080", Node: "_c_b-latch-0000000004", Session: 0x1000a2b3c4d0002, FencingToken: 4294967310}
	followerSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Node: web2.Node, Candidate: true,
		Reason: "following web-1", LeaseRemaining: 6120 * time.Millisecond,
		State: zksession.StateConnected, Joined: true, Leader: web1, ObservedAt: fixedNow,
	}
	leaderSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Node: web2.Node, Candidate: true,
		IsLeader: true, Reason: "leader", FencingToken: web2.FencingToken, LeaseRemaining: 5873900 * time.Microsecond,
		State: zksession.StateConnected, Joined: true, Leader: web2, ObservedAt: fixedNow,
	}
	noLeaderSt = election.Status{
		Mode: election.ModeLatch, Path: "/services/web", ID: "web-2", Candidate: true,
		Reason: "not joined", State: zksession.StateConnecting,
	}
)

func newTestRouter(f *fakeElection, opts Options) http.Handler {
	if opts.Clock == nil {
		opts.Clock = clocktest.NewFake(fixedNow)
	}
	return NewRouter(f, opts)
}

// serve runs one request through h and returns the response and its body.
func serve(t *testing.T, h http.Handler, req *http.Request) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func doGet(t *testing.T, h http.Handler, target string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return serve(t, h, req)
}

func mustContain(t *testing.T, body, want string) {
	t.Helper()
	if !strings.Contains(body, want) {
		t.Errorf("body %q does not contain %q", body, want)
	}
}

func newRequest(method, target, auth string) *http.Request {
	req := httptest.NewRequest(method, target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}
