package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
)

// observer streams status changes from memory.
type observer interface {
	Observe(ctx context.Context) <-chan election.Status
}

// events serves GET /events as Server-Sent Events. On connect it sends one
// "leader" event with the /leader JSON. Then it sends a "leader" event per
// change of leader and a "state" event per change of own state. Every
// keepAlive it sends a ": keepalive" comment. It ends when the client goes,
// stops reading for WriteTimeout, or Observe's channel closes. Streams are
// capped by streams.
func events(el observer, now func() time.Time, keepAlive time.Duration, log *slog.Logger, streams capped, c Candidacy, px func() *api.ProxyStatus) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			sseHeaders(w.Header())
			w.WriteHeader(http.StatusOK)
			return
		}
		done, ok := streams.enter(w, r)
		if !ok {
			return
		}
		defer done()
		sseHeaders(w.Header())
		ch := el.Observe(r.Context())
		s := sse{w: w, rc: http.NewResponseController(w), now: now, c: c, px: px}
		s.deadline()
		w.WriteHeader(http.StatusOK)
		if err := s.stream(r.Context(), ch, keepAlive); err != nil {
			log.Debug("GET /events ended", "err", err)
		}
	}
}

func sseHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
}

type sse struct {
	w   io.Writer
	rc  *http.ResponseController
	now func() time.Time
	c   Candidacy
	px  func() *api.ProxyStatus
}

// stream writes events from ch until it closes, ctx ends or a write fails.
func (s sse) stream(ctx context.Context, ch <-chan election.Status, keepAlive time.Duration) error {
	prev, ok := <-ch
	if !ok {
		return nil
	}
	if err := s.event("leader", prev); err != nil {
		return err
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case st, ok := <-ch:
			if !ok {
				return nil
			}
			if err := s.changes(prev, st); err != nil {
				return err
			}
			prev = st
		case <-tick.C:
			if err := s.write([]byte(": keepalive\n\n")); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changes writes a "leader" event if the leader changed, then a "state"
// event if this participant's own state changed.
func (s sse) changes(prev, st election.Status) error {
	if leaderChanged(prev, st) {
		if err := s.event("leader", st); err != nil {
			return err
		}
	}
	if stateChanged(prev, st) {
		return s.event("state", st)
	}
	return nil
}

func (s sse) event(name string, st election.Status) error {
	b := newLeaderBody(st, s.now)
	selfCandidacy(&b.Self, s.c)
	withProxy(&b, s.px)
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(name)+len(data)+20)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	return s.write(buf)
}

// write sends b at once. Each write gets WriteTimeout: a stream outlives
// the server's deadline, a client that stops reading does not.
func (s sse) write(b []byte) error {
	s.deadline()
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s sse) deadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout)) // not supported: a test recorder
}

// leaderChanged compares the leaders by id, node and session.
func leaderChanged(a, b election.Status) bool {
	if a.Leader == nil || b.Leader == nil {
		return (a.Leader == nil) != (b.Leader == nil)
	}
	x, y := a.Leader, b.Leader
	return x.ID != y.ID || x.Node != y.Node || x.Session != y.Session
}

// stateChanged compares this participant's leadership, connection state
// and candidacy.
func stateChanged(a, b election.Status) bool {
	return a.IsLeader != b.IsLeader || a.State != b.State || a.Candidate != b.Candidate
}
