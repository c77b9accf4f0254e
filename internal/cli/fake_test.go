package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/testkit"
)

// fakeDaemon serves the parts of electd's HTTP API the commands use, from
// state a test sets. It is a fake behind the commands' HTTP seam; the real
// daemon is exercised by tests/cli.
type fakeDaemon struct {
	mu           sync.Mutex
	leader       string // the /leader JSON; its status is 503 when "leader" is null
	participants []byte // nil: 503 with participantsErr
	partsErr     string
	health       string // the /healthz/leader JSON
	healthCode   int
	release      func(r *http.Request) (int, string) // POST /leader/release
	releases     []*http.Request
	events       chan string // each value is written to /events as one event
}

func newFakeDaemon(t *testing.T) (*fakeDaemon, *httptest.Server) {
	f, srv := newUnstartedFakeDaemon(t)
	srv.Start()
	return f, srv
}

// newUnstartedFakeDaemon is newFakeDaemon before its server starts (e.g.
// with StartTLS).
func newUnstartedFakeDaemon(t *testing.T) (*fakeDaemon, *httptest.Server) {
	f := &fakeDaemon{healthCode: http.StatusServiceUnavailable, events: make(chan string, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /leader", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		body := f.leader
		f.mu.Unlock()
		code := http.StatusOK
		if strings.Contains(body, `"leader":null`) {
			code = http.StatusServiceUnavailable
		}
		writeRaw(w, code, body)
	})
	mux.HandleFunc("GET /participants", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.participants == nil {
			writeRaw(w, http.StatusServiceUnavailable, f.partsErr)
			return
		}
		writeRaw(w, http.StatusOK, string(f.participants))
	})
	mux.HandleFunc("GET /healthz/leader", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeRaw(w, f.healthCode, f.health)
	})
	mux.HandleFunc("POST /leader/release", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.releases = append(f.releases, r)
		fn := f.release
		f.mu.Unlock()
		code, body := fn(r)
		writeRaw(w, code, body)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case kind, ok := <-f.events:
				if !ok {
					return // the daemon went away
				}
				fmt.Fprintf(w, "event: %s\ndata: {}\n\n: keepalive\n\n", kind)
				w.(http.Flusher).Flush()
			}
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func writeRaw(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintln(w, body)
}

// set replaces the election the fake reports: ids in queue order, the
// leader's index (-1: none), the asked participant's index.
func (f *fakeDaemon) set(ids []string, leader, self int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ps []api.Participant
	for i, id := range ids {
		node, token := fmt.Sprintf("_c_x-latch-%010d", i), int64(7+3*i)
		ps = append(ps, api.Participant{ID: id, Advertise: fmt.Sprintf("10.0.0.%d:8080", 7+i), Node: &node, Session: fmt.Sprintf("0x%x", 0x10+i),
			FencingToken: &token, IsLeader: i == leader})
	}
	f.participants, _ = json.Marshal(ps)
	// /leader and /healthz/leader are written out, as the daemon sends them.
	leaderJSON := "null"
	if leader >= 0 {
		l := ps[leader]
		leaderJSON = fmt.Sprintf(`{"id":%q,"advertise":%q,"node":%q,"session":%q,"fencing_token":%d}`, l.ID, l.Advertise, *l.Node, l.Session, *l.FencingToken)
	}
	f.leader = fmt.Sprintf(`{"leader":%s,"self":{"id":%q,"is_leader":%v,"state":"connected","session":%q,"observed_at":"2026-11-23T11:09:08Z"},"mode":"latch","path":"/services/web"}`,
		leaderJSON, ids[self], self == leader, ps[self].Session)
	switch {
	case self == leader:
		f.healthCode, f.health = http.StatusOK, `{"is_leader":true,"reason":"leader","lease_remaining_ms":6260,"fencing_token":7}`
	case leader >= 0:
		f.healthCode, f.health = http.StatusServiceUnavailable,
			fmt.Sprintf(`{"is_leader":false,"reason":"following %s","lease_remaining_ms":0,"fencing_token":null}`, ids[leader])
	default:
		f.healthCode, f.health = http.StatusServiceUnavailable, `{"is_leader":false,"reason":"no leader","lease_remaining_ms":0,"fencing_token":null}`
	}
}

// runCLI runs a command as main does, against env, with a fixed clock.
func runCLI(t *testing.T, ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr testkit.Buffer
	status := runCLIWith(ctx, env, &stdout, &stderr, args...)
	return status, stdout.String(), stderr.String()
}

func runCLIWith(ctx context.Context, env map[string]string, stdout, stderr *testkit.Buffer, args ...string) int {
	if !IsCommand(args) {
		panic("unknown command " + args[0])
	}
	return Run(ctx, args, Env{
		Stdout: stdout, Stderr: stderr,
		Getenv: func(k string) string { return env[k] },
		Now:    func() time.Time { return time.Date(2026, 11, 23, 11, 9, 8, 0, time.UTC) },
	})
}
