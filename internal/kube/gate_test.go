package kube

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/testkit"
)

// statusAPI fakes pods/status of namespace ns: GET, and strategic merge
// PATCHes of conditions with a resourceVersion precondition. The real API
// server's handling is exercised by tests/kube.
type statusAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	rv       int
	pods     map[string]*fakePod
	writes   []string       // "p1=False" in order
	gets     map[string]int // GETs by pod
	fail     bool           // answer 500 to every call
	onPatch  func(pod string)
	deleting map[string]bool
}

type fakePod struct {
	rv    int
	conds map[string]string // type -> status
}

func newStatusAPI(t *testing.T, pods ...string) *statusAPI {
	a := &statusAPI{pods: map[string]*fakePod{}, gets: map[string]int{}, deleting: map[string]bool{}}
	for _, p := range pods {
		a.rv++
		a.pods[p] = &fakePod{rv: a.rv, conds: map[string]string{"Ready": "False"}}
	}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *statusAPI) answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (a *statusAPI) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods/")
	name, ok2 := strings.CutSuffix(name, "/status")
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	hook := a.onPatch
	a.mu.Unlock()
	if hook != nil && r.Method == http.MethodPatch {
		hook(name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail {
		a.answer(w, 500, map[string]any{"message": "injected"})
		return
	}
	p := a.pods[name]
	switch {
	case !ok || !ok2:
		a.answer(w, 404, map[string]any{"message": "no such path"})
	case p == nil:
		a.answer(w, 404, map[string]any{"reason": "NotFound", "message": "pods " + name + " not found"})
	case r.Method == http.MethodGet:
		a.gets[name]++
		a.answer(w, 200, a.podJSON(name, p))
	case r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/strategic-merge-patch+json":
		var patch struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Status struct {
				Conditions []podCondition `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &patch); err != nil {
			a.answer(w, 400, map[string]any{"message": err.Error()})
			return
		}
		if rv := patch.Metadata.ResourceVersion; rv != "" && rv != strconv.Itoa(p.rv) {
			a.answer(w, 409, map[string]any{"reason": "Conflict", "message": "the object has been modified"})
			return
		}
		for _, c := range patch.Status.Conditions {
			p.conds[c.Type] = c.Status // merged by type: the others stay
			a.writes = append(a.writes, name+"="+c.Status)
		}
		a.rv++
		p.rv = a.rv
		a.answer(w, 200, a.podJSON(name, p))
	default:
		a.answer(w, 415, map[string]any{"message": "unsupported " + r.Method + " " + r.Header.Get("Content-Type")})
	}
}

func (a *statusAPI) podJSON(name string, p *fakePod) map[string]any {
	var conds []podCondition
	for t, s := range p.conds {
		conds = append(conds, podCondition{Type: t, Status: s})
	}
	meta := map[string]any{"name": name, "resourceVersion": strconv.Itoa(p.rv)}
	if a.deleting[name] {
		meta["deletionTimestamp"] = "2026-11-23T10:00:00Z"
	}
	return map[string]any{"metadata": meta, "status": map[string]any{"conditions": conds}}
}

// set writes a condition as someone else would (the test, a stale leader).
func (a *statusAPI) set(pod, status string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	a.pods[pod].conds[GateCondition], a.pods[pod].rv = status, a.rv
}

func (a *statusAPI) cond(pod, typ string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods[pod].conds[typ]
}

func (a *statusAPI) getsOf(pod string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gets[pod]
}

func (a *statusAPI) writeLog() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

type gateRecorder struct {
	countRecorder
	mu        sync.Mutex
	own, lost int
}

func (r *gateRecorder) GateSet(own bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if own {
		r.own++
	} else {
		r.lost++
	}
}

func (r *gateRecorder) counts() (own, lost int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.own, r.lost
}

type gateHarness struct {
	t     *testing.T
	api   *statusAPI
	src   *electiontest.Fake
	clock *clocktest.Fake
	rec   *gateRecorder
	logs  *testkit.Buffer
	g     *Gate
}

func newGateHarness(t *testing.T, st election.Status, pods ...string) *gateHarness {
	t.Helper()
	h := &gateHarness{t: t, api: newStatusAPI(t, pods...), src: electiontest.New(st),
		clock: clocktest.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)), rec: &gateRecorder{}, logs: &testkit.Buffer{}}
	g, err := NewGate(Config{
		ParticipantGate: true, Identity: self, PodName: self, Namespace: "ns",
		Server: h.api.srv.URL, TokenFile: writeToken(t, t.TempDir(), "good"),
		Logger:   slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Recorder: h.rec, Clock: h.clock, Transport: h.api.srv.Client().Transport,
	}, h.src)
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// eventually polls cond for up to 10 s, advancing the fake clock by step
// before each poll.
func (h *gateHarness) eventually(what string, step time.Duration, cond func() bool) {
	h.t.Helper()
	if err := advanceUntil(h.clock, step, cond); err != nil {
		h.t.Fatalf("timed out waiting for %s; writes %v; log:\n%s", what, h.api.writeLog(), h.logs)
	}
}

func joined(session int64) election.Status {
	return election.Status{Joined: true, SessionID: session, Leader: &election.Participant{ID: "p1"}}
}

func leading(n int) election.Status {
	return election.Status{Joined: true, IsLeader: true, SessionID: 1, Participants: n, Leader: &election.Participant{ID: self}}
}

func ids(names ...string) []election.Participant {
	var ps []election.Participant
	for _, n := range names {
		ps = append(ps, election.Participant{ID: n})
	}
	return ps
}

// A participant sets its own condition True once joined, keeps the
// kubelet's conditions, and sets it again when it finds it False at its
// settle read; it never writes another pod.
func TestGateOwnConditionFollowsTheJoin(t *testing.T) {
	h := newGateHarness(t, election.Status{SessionID: 1}, "p0", "p1")
	h.clock.Advance(time.Minute)
	if w := h.api.writeLog(); len(w) != 0 {
		t.Fatalf("writes before the join: %v", w)
	}
	h.src.Set(joined(1))
	h.eventually("p0 True", 0, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	if got := h.api.cond("p0", "Ready"); got != "False" {
		t.Errorf("the kubelet's Ready condition became %q; a patch must keep the others", got)
	}
	// A stale leader's False lands after the join: the settle read repairs it.
	h.api.set("p0", "False")
	h.eventually("p0 True again", time.Second, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	// Joining again (a new session) sets it again; at rest nothing is written.
	h.api.set("p0", "False")
	h.src.Set(joined(2))
	h.eventually("p0 True after the new session", 0, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	h.clock.Advance(time.Hour)
	for _, w := range h.api.writeLog() {
		if w != "p0=True" {
			t.Errorf("a follower wrote %s", w)
		}
	}
	if n := len(h.api.writeLog()); n != 3 {
		t.Errorf("%d writes (%v), want 3: one per join and one repair", n, h.api.writeLog())
	}
	h.eventually("3 writes recorded", 0, func() bool { own, _ := h.rec.counts(); return own == 3 })
	if _, lost := h.rec.counts(); lost != 0 {
		t.Errorf("recorded lost %d, want 0", lost)
	}
}

// The leader sets False on the pod of the leader it followed once that
// id is out of the queue for the grace, and leaves alone an id that joins
// again within it and a pod being deleted.
func TestGateLeaderMarksLostParticipants(t *testing.T) {
	h := newGateHarness(t, joined(1), "p0", "p1", "p2", "p3")
	for _, p := range []string{"p1", "p2", "p3"} {
		h.api.set(p, "True")
	}
	h.eventually("p0 True", 0, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	// p1 led and is gone: p0 leads.
	h.src.SetParticipants(ids("p0", "p2", "p3"))
	h.src.Set(leading(3))
	h.eventually("p1 False, and a line naming it", 100*time.Millisecond, func() bool {
		return h.api.cond("p1", GateCondition) == "False" && strings.Contains(h.logs.String(), "other_pod=p1")
	})

	// p2 leaves and joins again within the grace: its pod is not even read.
	reads := h.participantReads()
	h.src.SetParticipants(ids("p0", "p3"))
	h.src.SetQuiet(leading(2))
	h.eventually("p2's absence read", 50*time.Millisecond, func() bool { return h.participantReads() > reads })
	h.src.SetParticipants(ids("p0", "p3", "p2"))
	h.src.SetQuiet(leading(3))
	until := h.clock.Now().Add(3 * time.Second)
	h.eventually("3s past the grace", 100*time.Millisecond, func() bool { return h.clock.Now().After(until) })
	if n := h.api.getsOf("p2"); n != 0 {
		t.Errorf("p2's pod read %d times although it joined again within the grace", n)
	}

	// p3's pod is being deleted (a rollout): it leaves the Service anyway.
	h.api.mu.Lock()
	h.api.deleting["p3"] = true
	h.api.mu.Unlock()
	h.src.SetParticipants(ids("p0", "p2"))
	h.src.SetQuiet(leading(2))
	h.eventually("p3 left alone", 100*time.Millisecond, func() bool {
		return strings.Contains(h.logs.String(), "left alone") && strings.Contains(h.logs.String(), "other_pod=p3")
	})
	want := []string{"p0=True", "p1=False"}
	if got := h.api.writeLog(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("writes %v, want %v", got, want)
	}
	if _, lost := h.rec.counts(); lost != 1 {
		t.Errorf("recorded lost %d, want 1", lost)
	}
}

func (h *gateHarness) participantReads() int {
	return strings.Count(strings.Join(h.src.Calls(), ","), "participants")
}

// A participant that joins again and sets its own condition between the
// leader's read of the queue and its write keeps its True: the write
// conflicts, and the leader's next read finds it in the queue.
func TestGateLeaderLosesTheRaceToARejoin(t *testing.T) {
	h := newGateHarness(t, joined(1), "p0", "p1")
	h.api.set("p1", "True")
	h.eventually("p0 True", 0, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	raced := make(chan struct{})
	var once sync.Once
	reads := 0 // the queue reads before the conflicting write
	h.api.mu.Lock()
	h.api.onPatch = func(pod string) {
		if pod == "p1" {
			once.Do(func() {
				reads = h.participantReads()
				h.src.SetParticipants(ids("p0", "p1"))
				h.api.set("p1", "True")
				close(raced)
			})
		}
	}
	h.api.mu.Unlock()
	h.src.SetParticipants(ids("p0"))
	h.src.Set(leading(1))
	h.eventually("the leader's write to p1", 100*time.Millisecond, func() bool {
		select {
		case <-raced:
			return true
		default:
			return false
		}
	})
	h.eventually("the leader's read after the conflict", 0, func() bool { return h.participantReads() > reads })
	until := h.clock.Now().Add(3 * time.Second)
	h.eventually("3s later", 100*time.Millisecond, func() bool { return h.clock.Now().After(until) })
	if got := h.api.cond("p1", GateCondition); got != "True" {
		t.Errorf("p1 after the race is %q, want True; writes %v", got, h.api.writeLog())
	}
	if _, lost := h.rec.counts(); lost != 0 || h.rec.get(opPatchPodStatus) != 0 {
		t.Errorf("lost %d, failed patches %d; want 0 and 0 (a conflict is no failure)", lost, h.rec.get(opPatchPodStatus))
	}
}

// Failed calls are retried with backoff and counted; the own condition
// is set once the API server answers again.
func TestGateRetriesAndCounts(t *testing.T) {
	h := newGateHarness(t, election.Status{}, "p0")
	h.api.mu.Lock()
	h.api.fail = true
	h.api.mu.Unlock()
	h.src.Set(joined(1))
	h.eventually("failures counted", minBackoff, func() bool { return h.rec.get(opGetPodStatus) >= 3 })
	h.api.mu.Lock()
	h.api.fail = false
	h.api.mu.Unlock()
	h.eventually("p0 True after the failures", minBackoff, func() bool { return h.api.cond("p0", GateCondition) == "True" })
	if n := strings.Count(h.logs.String(), "kubernetes API call failed"); n != 1 {
		t.Errorf("%d failure lines, want 1 (rate-limited):\n%s", n, h.logs)
	}
}

// Off without the key: Run returns at once and nothing is needed.
func TestGateOff(t *testing.T) {
	g, err := NewGate(Config{}, electiontest.New(election.Status{}))
	if err != nil {
		t.Fatal(err)
	}
	g.Run(context.Background())
}
