package election

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/tests/syncbuf"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// fakeHost is the fake seam (recipeHost) the recipes' own tests run on: the
// requests go to a fakeZK, each watch's firing comes back on events, the
// view is a struct, time is a fake clock. No Elector, no Session: what a
// recipe does is what these tests see.
type fakeHost struct {
	t      *testing.T
	f      *fakeZK
	clk    *clocktest.Fake
	path   string
	sid    int64
	events chan event
	stop   chan struct{}

	mu       sync.Mutex
	v        view
	lease    bool // wantLease's last word
	prepared bool
	metaSID  int64
}

func newFakeHost(t *testing.T, path string) *fakeHost {
	h := &fakeHost{t: t, f: newFakeZK(unitSession), clk: clocktest.NewFake(time.Unix(1000, 0)), path: path,
		sid: unitSession, events: make(chan event, 64), stop: make(chan struct{})}
	t.Cleanup(func() { close(h.stop) })
	return h
}

func (h *fakeHost) get(p string) ([]byte, *zk.Stat, error)  { return h.f.Get(p) }
func (h *fakeHost) exists(p string) (bool, *zk.Stat, error) { return h.f.Exists(p) }
func (h *fakeHost) recheck(p string) ([]string, error)      { return h.children(p) }
func (h *fakeHost) delete(p string) error                   { return h.f.Delete(p, -1) }
func (h *fakeHost) create(p string, d []byte, fl int32) (string, error) {
	return h.f.Create(p, d, fl, zk.WorldACL(zk.PermAll))
}

func (h *fakeHost) children(p string) ([]string, error) {
	kids, _, err := h.f.Children(p)
	return kids, err
}

func (h *fakeHost) getW(p string, ev event) ([]byte, *zk.Stat, error) {
	data, stat, ch, err := h.f.GetW(p)
	if err == nil {
		h.forward(ch, ev)
	}
	return data, stat, err
}

func (h *fakeHost) childrenW(p string, ev event) ([]string, error) {
	kids, _, ch, err := h.f.ChildrenW(p)
	if err == nil {
		h.forward(ch, ev)
	}
	return kids, err
}

func (h *fakeHost) existsW(p string, ev event) (bool, error) {
	ok, _, ch, err := h.f.ExistsW(p)
	if err == nil {
		h.forward(ch, ev)
	}
	return ok, err
}

func (h *fakeHost) forward(ch <-chan zk.Event, ev event) {
	go func() {
		select {
		case ev.zk = <-ch:
		case <-h.stop:
			return
		}
		select {
		case h.events <- ev:
		case <-h.stop:
		}
	}()
}

func (h *fakeHost) after(d time.Duration, ev event) clock.Timer {
	return h.clk.AfterFunc(d, func() {
		select {
		case h.events <- ev:
		case <-h.stop:
		}
	})
}

func (h *fakeHost) preparePath() error {
	if h.prepared {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(h.path, "/"), "/") {
		cur += "/" + part
		if _, err := h.f.CreateContainer(cur, nil, zk.FlagContainer, nil); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	h.prepared = true
	return nil
}

func (h *fakeHost) publishMeta() error {
	if h.metaSID == h.sid {
		return nil
	}
	h.f.put(metaNode(h.path, h.sid), `{"id":"me"}`, h.sid, zk.FlagEphemeral)
	h.metaSID = h.sid
	return nil
}

func (h *fakeHost) pathGone() { h.prepared = false }

func (h *fakeHost) reidentify() {}

func (h *fakeHost) meta(session int64) metaData {
	data, _, err := h.f.Get(metaNode(h.path, session))
	if err != nil {
		return metaData{}
	}
	return parseMeta(data)
}

func (h *fakeHost) publish(change func(v *view)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	change(&h.v)
}

func (h *fakeHost) viewed() view {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.v
}

// leads is the view alone: the fake has no lease to judge it against.
func (h *fakeHost) leads() bool { v := h.viewed(); return v.holds }

func (h *fakeHost) refuse(msg string, _ ...any) { h.publish(func(v *view) { v.refused = msg }) }
func (h *fakeHost) wantLease(want bool)         { h.lease = want }
func (h *fakeHost) ensureLease()                { h.lease = true }

// seamUnit is one recipe on a fakeHost, stepped by the test as the
// Elector's loop would step it.
type seamUnit struct {
	t   *testing.T
	h   *fakeHost
	r   recipe
	log *syncbuf.Buffer
}

func newSeamUnit(t *testing.T, cfg Config) *seamUnit {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = "/e"
	}
	if cfg.ID == "" {
		cfg.ID = "me"
	}
	cfg.fillDefaults(nil, nil)
	u := &seamUnit{t: t, h: newFakeHost(t, cfg.Path), log: &syncbuf.Buffer{}}
	logger := slog.New(slog.NewTextHandler(u.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.Mode == ModeRace {
		u.r = newRaceRecipe(u.h, cfg, logger, u.h.clk, nopRecorder{})
	} else {
		u.r = newQueueRecipe(u.h, cfg, logger, u.h.clk, nopRecorder{})
	}
	u.r.newSession(unitSession, false)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("recipe log:\n%s", u.log.String())
		}
	})
	return u
}

// settle steps the recipe until it has nothing left to do.
func (u *seamUnit) settle() {
	u.t.Helper()
	for range settleSteps {
		again, err := u.r.step()
		if err != nil {
			u.t.Fatalf("step: %v", err)
		}
		if !again {
			return
		}
	}
	u.t.Fatalf("the recipe did not settle in %d steps", settleSteps)
}

// event hands the next watch or timer event to the recipe.
func (u *seamUnit) event() event {
	u.t.Helper()
	select {
	case ev := <-u.h.events:
		u.r.handle(ev)
		return ev
	case <-time.After(5 * time.Second):
		u.t.Fatal("no watch or timer event within 5s")
	}
	return event{}
}

// leaderReads lets the leader read the queue as it does after a join.
func (u *seamUnit) leaderReads() {
	u.t.Helper()
	if ev := u.event(); ev.kind != evMembers {
		u.t.Fatalf("event %v, want evMembers", ev.kind)
	}
	u.h.clk.Advance(membersDelay)
	if ev := u.event(); ev.kind != evMembersDue {
		u.t.Fatalf("event %v, want evMembersDue", ev.kind)
	}
	u.settle()
}

// other queues a participant of session sid (with a meta node, as an
// electd peer has) and returns its node's name.
func (u *seamUnit) other(sid int64, id string, mode Mode) string {
	u.h.f.put(metaNode("/e", sid), `{"id":"`+id+`"}`, sid, zk.FlagEphemeral)
	name := u.h.f.put(nodePath("/e", nodePrefix(mode, newTestUUID(sid))), id, sid, zk.FlagEphemeralSequential)
	return strings.TrimPrefix(name, "/e/")
}
