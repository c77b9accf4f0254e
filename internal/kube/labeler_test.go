package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/testkit"
)

const (
	label = "electd.io/leader"
	self  = "p0"
)

type harness struct {
	t     *testing.T
	api   *fakeAPI
	src   *electiontest.Fake
	clock *clocktest.Fake
	rec   *countRecorder
	l     *Labeler
	logs  *testkit.Buffer
	done  chan error
	stop  context.CancelFunc
	dir   string
}

// newHarness builds a Labeler for pod p0 in namespace ns against a fake
// API server holding the given pods; edit adjusts the configuration.
func newHarness(t *testing.T, leading bool, pods []string, edit func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, api: newFakeAPI(t, pods...), src: electiontest.New(election.Status{IsLeader: leading}),
		clock: clocktest.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)), rec: &countRecorder{}, logs: &testkit.Buffer{}, dir: t.TempDir()}
	cfg := Config{
		LeaderLabel: label, Identity: self, PodName: self, Namespace: "ns",
		Server: h.api.srv.URL, TokenFile: writeToken(t, h.dir, "good"),
		RecheckInterval: 10 * time.Second,
		Logger:          slog.New(slog.NewTextHandler(h.logs, nil)),
		Recorder:        h.rec, Clock: h.clock, Transport: h.api.srv.Client().Transport,
	}
	if edit != nil {
		edit(&cfg)
	}
	l, err := New(cfg, h.src)
	if err != nil {
		t.Fatal(err)
	}
	h.l = l
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.l.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		<-h.done
	})
}

// eventually polls cond for up to 10 s, advancing the fake clock by step
// before each poll (0: not at all).
func (h *harness) eventually(what string, step time.Duration, cond func() bool) {
	h.t.Helper()
	if err := advanceUntil(h.clock, step, cond); err != nil {
		h.t.Fatalf("timed out waiting for %s; API calls %v; log:\n%s", what, h.api.callLog(), h.logs)
	}
}

// advanceUntil polls cond for up to 10 s, advancing clock by step before
// every poll but the first (0: not at all). The labeler's and the gate's
// harnesses share it.
func advanceUntil(clock *clocktest.Fake, step time.Duration, cond func() bool) error {
	polled := false
	return testkit.Until(context.Background(), 10*time.Second, 2*time.Millisecond, func() error {
		if polled && step > 0 {
			clock.Advance(step)
		}
		polled = true
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func (h *harness) labelled(pod string) bool {
	_, ok := h.api.labels(pod)[label]
	return ok
}

func (h *harness) labelledPods() []string {
	var out []string
	for _, p := range []string{"p0", "p1", "p2"} {
		if h.labelled(p) {
			out = append(out, p)
		}
	}
	return out
}

// A new leader removes the label from every other pod first, then sets its
// own; other labels stay.
func TestLeaderRemovesStaleLabelsThenLabelsItself(t *testing.T) {
	h := newHarness(t, true, []string{"p0", "p1", "p2"}, nil)
	h.api.setLabel("p1", label, "true")
	h.api.setLabel("p2", label, "false")
	h.run()
	h.eventually("only p0 labelled", 0, func() bool { return slices.Equal(h.labelledPods(), []string{"p0"}) })
	calls := h.api.callLog()
	setOwn := slices.Index(calls, "LABEL p0=true")
	for _, other := range []string{"UNLABEL p1", "UNLABEL p2"} {
		if i := slices.Index(calls, other); i < 0 || i > setOwn {
			t.Errorf("%s not before LABEL p0=true: %v", other, calls)
		}
	}
	if got := h.api.labels("p1")["app"]; got != "x" {
		t.Errorf("p1's other label app = %q, want x kept", got)
	}
	h.eventually("status labelled and in sync", 0, func() bool { st := h.l.Status(); return st.Labelled && st.InSync })
	if !strings.Contains(h.logs.String(), "removed the leader label from another pod") {
		t.Errorf("no log line for the stale label:\n%s", h.logs)
	}
}

// A follower removes a label its pod may carry from an earlier life, and
// a leader that stops leading removes its own.
func TestFollowerHasNoLabel(t *testing.T) {
	h := newHarness(t, false, []string{"p0", "p1"}, nil)
	h.api.setLabel("p0", label, "true")
	h.run()
	h.eventually("p0's stale label removed", 0, func() bool { return !h.labelled("p0") })

	h.src.Set(election.Status{IsLeader: true})
	h.eventually("p0 labelled", 0, func() bool { return h.labelled("p0") })
	h.src.Set(election.Status{})
	h.eventually("p0 unlabelled after losing leadership", 0, func() bool { return !h.labelled("p0") && !h.l.Status().Labelled })
}

// The leader's periodic check removes a label written late by a former
// leader: within one RecheckInterval of fake time.
func TestRecheckRemovesALateLabel(t *testing.T) {
	h := newHarness(t, true, []string{"p0", "p1"}, nil)
	h.run()
	h.eventually("p0 labelled", 0, func() bool { return h.labelled("p0") && h.l.Status().InSync })
	start := h.clock.Now()
	h.api.setLabel("p1", label, "true") // the late write
	h.eventually("the recheck timer", 0, h.clock.AdvanceToNext)
	h.eventually("p1's late label removed", 0, func() bool { return !h.labelled("p1") })
	if took := h.clock.Now().Sub(start); took != 10*time.Second {
		t.Errorf("removed after %v of clock time, want the recheck interval (10s)", took)
	}
	// In sync, a check is one list and no write.
	before := len(h.api.callLog())
	h.eventually("the recheck timer", 0, h.clock.AdvanceToNext)
	h.eventually("one more check", 0, func() bool { return len(h.api.callLog()) > before })
	time.Sleep(20 * time.Millisecond)
	if got := h.api.callLog()[before:]; !slices.Equal(got, []string{"LIST " + label}) {
		t.Errorf("a check in sync made calls %v, want one list", got)
	}
}

// Failures are retried with backoff, counted by operation, shown in Status
// and logged once per minute per operation, not once per retry.
func TestFailuresRetryCountAndShow(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, nil)
	h.api.set(func(f *fakeAPI) {
		f.fail = func(method, path string) int {
			if method == "PATCH" {
				return 503
			}
			return 0
		}
	})
	h.run()
	h.eventually("5 failed patches", 100*time.Millisecond, func() bool { return h.rec.get(opPatchPod) >= 5 })
	st := h.l.Status()
	if st.Failures < 5 || st.InSync || st.Labelled || !strings.Contains(st.LastError, "patch_pod: 503") || st.LastErrorAt.IsZero() {
		t.Errorf("status while failing = %+v", st)
	}
	if n := strings.Count(h.logs.String(), "kubernetes API call failed"); n != 1 {
		t.Errorf("%d failure lines within a minute, want 1:\n%s", n, h.logs)
	}
	h.api.set(func(f *fakeAPI) { f.fail = nil })
	h.eventually("labelled once the API works", 100*time.Millisecond, func() bool { return h.labelled("p0") && h.l.Status().InSync })
	if !strings.Contains(h.logs.String(), "kubernetes API call succeeds again") {
		t.Errorf("no recovery line:\n%s", h.logs)
	}
}

// Backoff doubles from 500ms and stops at the recheck interval.
func TestBackoffIsBounded(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, func(c *Config) { c.RecheckInterval = 4 * time.Second })
	h.api.set(func(f *fakeAPI) { f.fail = func(string, string) int { return 500 } })
	h.run()
	// Fake time of the failures: 0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5 s.
	// The clock moves only to the retry timer the Labeler set after each
	// failure, so the times are exact.
	var at []time.Duration
	start := h.clock.Now()
	for i := range 7 {
		h.eventually("failure "+strconv.Itoa(i+1), 0, func() bool { return h.rec.get(opListPods) == i+1 })
		at = append(at, h.clock.Now().Sub(start))
		if i < 6 {
			h.eventually("a retry timer", 0, h.clock.AdvanceToNext)
		}
	}
	want := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond,
		7500 * time.Millisecond, 11500 * time.Millisecond, 15500 * time.Millisecond}
	if !slices.Equal(at, want) {
		t.Errorf("failures at %v, want %v", at, want)
	}
}

// The token file is read for every call: a rotated token is used at once.
func TestRotatedTokenIsReread(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, nil)
	writeToken(t, h.dir, "expired")
	h.run()
	h.eventually("a 401", 100*time.Millisecond, func() bool { return strings.Contains(h.l.Status().LastError, "401") })
	writeToken(t, h.dir, "good")
	h.eventually("labelled with the new token", 100*time.Millisecond, func() bool { return h.labelled("p0") })
}

// A change of leadership cancels a round made for the other state: a
// leader whose label write hangs and then loses leadership removes its
// label at once, not after the hanging call's timeout.
func TestLosingLeadershipCancelsAHangingRound(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, func(c *Config) { c.CallTimeout = time.Hour })
	block := make(chan struct{})
	h.api.set(func(f *fakeAPI) { f.block = block })
	h.run()
	h.eventually("the list", 0, func() bool { return slices.Contains(h.api.callLog(), "LIST "+label) })
	h.src.Set(election.Status{})
	time.Sleep(50 * time.Millisecond)
	h.api.set(func(f *fakeAPI) { f.block = nil })
	close(block)
	h.eventually("p0 unlabelled and in sync", 0, func() bool { return !h.labelled("p0") && h.l.Status().InSync })
	if h.rec.get(opPatchPod) != 0 {
		t.Errorf("a cancelled call was counted as a failure")
	}
}

// Stop removes the label and returns; Run ends.
func TestStopRemovesTheLabel(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, nil)
	h.run()
	h.eventually("p0 labelled", 0, func() bool { return h.labelled("p0") })
	h.src.SetQuiet(election.Status{}) // as Drain makes Status say
	if err := h.l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.labelled("p0") {
		t.Error("p0 still labelled after Stop")
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("Run returned %v after Stop", err)
		}
		h.done <- nil
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Stop")
	}
	if err := h.l.Stop(context.Background()); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// With the API server down, Stop gives up when its context ends.
func TestStopIsBoundedByItsContext(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, nil)
	h.run()
	h.eventually("p0 labelled", 0, func() bool { return h.labelled("p0") })
	h.api.set(func(f *fakeAPI) { f.fail = func(string, string) int { return 503 } })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- h.l.Stop(ctx) }()
	var err error
	h.eventually("Stop to return", 100*time.Millisecond, func() bool {
		select {
		case err = <-stopped:
			return true
		default:
			return false
		}
	})
	// The API's 503, or, on a machine so loaded that no answer came back
	// within the 300 ms, the context's end: either way an error, in time.
	if err == nil || !strings.Contains(err.Error(), "503") && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v, want the 503 or the context's deadline", err)
	}
}

// The Lease names the leader, is renewed by its checks, counts transitions
// and is released on Stop.
func TestLeaseMirror(t *testing.T) {
	h := newHarness(t, true, []string{"p0"}, func(c *Config) { c.LeaseName = "lease" })
	h.run()
	h.eventually("the lease held", 0, func() bool { return h.l.Status().LeaseHeld })
	spec := h.api.leaseSpec()
	if spec["holderIdentity"] != self || spec["leaseDurationSeconds"] != 30.0 || spec["leaseTransitions"] != 0.0 {
		t.Errorf("new lease spec = %v", spec)
	}
	renewed := spec["renewTime"]
	h.eventually("a renewal", time.Second, func() bool { return h.api.leaseSpec()["renewTime"] != renewed })
	if got := h.api.leaseSpec()["acquireTime"]; got != spec["acquireTime"] {
		t.Errorf("acquireTime changed on renewal: %v -> %v", spec["acquireTime"], got)
	}

	// Another holder took it (a former leader's late write): one more transition.
	h.api.set(func(f *fakeAPI) { f.lease["spec"].(map[string]any)["holderIdentity"] = "p9" })
	h.eventually("the lease taken back", time.Second, func() bool { return h.api.leaseSpec()["holderIdentity"] == self })
	if got := h.api.leaseSpec()["leaseTransitions"]; got != 1.0 {
		t.Errorf("leaseTransitions = %v, want 1", got)
	}

	h.src.SetQuiet(election.Status{})
	if err := h.l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spec := h.api.leaseSpec(); spec["holderIdentity"] != nil || spec["leaseTransitions"] != 1.0 {
		t.Errorf("lease after Stop = %v, want no holder", spec)
	}
}

// A follower leaves a Lease held by another participant alone.
func TestFollowerLeavesOthersLease(t *testing.T) {
	h := newHarness(t, false, []string{"p0"}, func(c *Config) { c.LeaseName = "lease"; c.LeaderLabel = "" })
	h.api.set(func(f *fakeAPI) {
		f.lease = map[string]any{"metadata": map[string]any{"name": "lease", "resourceVersion": "7"},
			"spec": map[string]any{"holderIdentity": "p1"}}
	})
	h.run()
	h.eventually("in sync", 0, func() bool { return h.l.Status().InSync })
	if got := h.api.leaseSpec()["holderIdentity"]; got != "p1" {
		t.Errorf("holderIdentity = %v, want p1 kept", got)
	}
}

// failLog writes one line per operation per minute while failing.
func TestFailLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	clock := clocktest.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	f := newFailLog(slog.New(slog.NewTextHandler(&buf, nil)), clock)
	for range 100 {
		f.failed("list_pods", errors.New("boom"))
		clock.Advance(time.Second)
	}
	f.failed("patch_pod", errors.New("boom"))
	if got := strings.Count(buf.String(), "op=list_pods"); got != 2 {
		t.Errorf("%d lines for 100 failures over 100 s, want 2:\n%s", got, buf.String())
	}
	if !strings.Contains(buf.String(), "suppressed=59") {
		t.Errorf("the second line does not count the 59 suppressed failures:\n%s", buf.String())
	}
	if got := strings.Count(buf.String(), "op=patch_pod"); got != 1 {
		t.Errorf("another operation's first failure is not logged")
	}
}
