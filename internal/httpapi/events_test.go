package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/testkit"
)

// frame is one SSE event, or one comment line.
type frame struct {
	event, data, comment string
}

// readFrames parses an SSE stream; the channel closes at EOF.
func readFrames(r io.Reader) <-chan frame {
	out := make(chan frame, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":"):
				out <- frame{comment: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			case line == "" && f != frame{}:
				out <- f
				f = frame{}
			}
		}
	}()
	return out
}

// eventStream is a client connected to /events of a test server.
type eventStream struct {
	f      *electiontest.Fake
	srv    *httptest.Server
	resp   *http.Response
	frames <-chan frame
	cancel context.CancelFunc
}

func openEvents(t *testing.T, st election.Status, keepAlive time.Duration) *eventStream {
	t.Helper()
	f := electiontest.New(st)
	srv := httptest.NewServer(newTestRouter(f, Options{KeepAlive: keepAlive}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &eventStream{f: f, srv: srv, resp: resp, frames: readFrames(resp.Body), cancel: cancel}
	testkit.For(t, 10*time.Second, "the handler to call Observe", func() bool { return f.Observers() == 1 })
	return s
}

// next returns the next frame, skipping keepalives unless comments is set.
func (s *eventStream) next(t *testing.T, comments bool) frame {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("the stream ended")
			}
			if f.comment != "" && !comments {
				continue
			}
			return f
		case <-deadline:
			t.Fatal("no frame within 5s")
		}
	}
}

// push makes the fake's Observe channel deliver st and waits until the
// handler has read it, so that no later push replaces it.
func (s *eventStream) push(t *testing.T, st election.Status) {
	t.Helper()
	s.f.Set(st)
	testkit.For(t, 10*time.Second, "the handler to read Observe's channel", func() bool { return s.f.Unread() == 0 })
}

// expect checks that the next event is name and that its data is the
// /leader JSON of st.
func (s *eventStream) expect(t *testing.T, name string, st election.Status) {
	t.Helper()
	f := s.next(t, false)
	if got, want := f.event, name; got != want {
		t.Errorf("event = %q, want %q (data %s)", got, want, f.data)
	}
	want, err := json.Marshal(newLeaderBody(st, func() time.Time { return fixedNow }))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.data; got != string(want) {
		t.Errorf("%s data =\n%s\nwant\n%s", name, got, want)
	}
}

func TestEventsHeadersAndFirstEvent(t *testing.T) {
	s := openEvents(t, followerSt, time.Hour)
	if got, want := s.resp.StatusCode, http.StatusOK; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if got, want := s.resp.Header.Get("Content-Type"), "text/event-stream"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if got, want := s.resp.Header.Get("Cache-Control"), "no-cache"; got != want {
		t.Errorf("Cache-Control = %q, want %q", got, want)
	}
	f := s.next(t, false)
	if got, want := f.event, "leader"; got != want {
		t.Errorf("first event = %q, want %q", got, want)
	}
	// The data is exactly what GET /leader answers.
	_, body := doGet(t, newTestRouter(electiontest.New(followerSt), Options{}), "/leader")
	if got, want := f.data, strings.TrimSuffix(body, "\n"); got != want {
		t.Errorf("first data =\n%s\nwant the /leader body\n%s", got, want)
	}
}

func TestEventsChanges(t *testing.T) {
	newLeader := followerSt
	newLeader.Leader = &election.Participant{ID: "web-3", Node: "_c_c-latch-0000000005", Session: 9, FencingToken: 99}
	sameLeaderNewSession := newLeader
	sameLeaderNewSession.Leader = &election.Participant{ID: "web-3", Node: "_c_c-latch-0000000005", Session: 10, FencingToken: 99}
	reasonOnly := sameLeaderNewSession
	reasonOnly.Reason = "following web-3 (checked)"
	reasonOnly.ObservedAt = fixedNow.Add(time.Second)
	leading := leaderSt
	suspended := leaderSt
	suspended.State = zksession.StateSuspended
	lost := noLeaderSt

	s := openEvents(t, followerSt, time.Hour)
	s.expect(t, "leader", followerSt)

	steps := []struct {
		name   string
		st     election.Status
		events []string // expected, in order; none for a change nobody cares about
	}{
		{name: "leader changes", st: newLeader, events: []string{"leader"}},
		{name: "leader session changes", st: sameLeaderNewSession, events: []string{"leader"}},
		{name: "only the reason changes", st: reasonOnly},
		{name: "becomes leader: new leader and own state", st: leading, events: []string{"leader", "state"}},
		{name: "connection suspended", st: suspended, events: []string{"state"}},
		{name: "leader and connection lost", st: lost, events: []string{"leader", "state"}},
	}
	for _, step := range steps {
		s.push(t, step.st)
		for _, name := range step.events {
			s.expect(t, name, step.st)
		}
		if t.Failed() {
			t.Fatalf("after step %q", step.name)
		}
	}
	// Nothing was sent for reasonOnly: had it been, expect above would
	// have seen it in place of the "becomes leader" events.

	s.cancel()
	testkit.For(t, 10*time.Second, "Observe's ctx to end when the client went away", func() bool { return s.f.Observers() == 0 })
}

func TestEventsEndWhenObserveCloses(t *testing.T) {
	s := openEvents(t, followerSt, time.Hour)
	s.expect(t, "leader", followerSt)
	s.f.Stop()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.frames:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream did not end after Observe's channel closed")
		}
	}
}

func TestEventsKeepAlive(t *testing.T) {
	s := openEvents(t, followerSt, 10*time.Millisecond)
	s.expect(t, "leader", followerSt)
	if got, want := s.next(t, true).comment, "keepalive"; got != want {
		t.Errorf("comment = %q, want %q", got, want)
	}
	// Events still flow between keepalives.
	s.push(t, leaderSt)
	s.expect(t, "leader", leaderSt)
	s.expect(t, "state", leaderSt)
}

func TestEventsHead(t *testing.T) {
	f := electiontest.New(followerSt)
	resp, body := serve(t, newTestRouter(f, Options{}), newRequest(http.MethodHead, "/events", ""))
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if got, want := resp.Header.Get("Content-Type"), "text/event-stream"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if body != "" {
		t.Errorf("HEAD body = %q, want none", body)
	}
}
