package kube

import (
	"log/slog"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/clock"
)

// Status is what the Labeler last achieved, for GET /leader (under
// "kubernetes") and for tests. It is the API's wire type: declared once, in
// internal/api.
type Status = api.KubeStatus

// Recorder counts failed API calls by operation (list_pods, patch_pod,
// get_lease, create_lease, patch_lease). The metrics package can implement
// it as a counter vector. Methods must not block.
type Recorder interface {
	KubeCallFailed(op string)
}

type nopRecorder struct{}

func (nopRecorder) KubeCallFailed(string) {}

// Operation names given to the Recorder and the log.
const (
	opListPods    = "list_pods"
	opPatchPod    = "patch_pod"
	opGetLease    = "get_lease"
	opCreateLease = "create_lease"
	opPatchLease  = "patch_lease"

	opGetPodStatus   = "get_pod_status"   // the participant gate's read of a pod's condition
	opPatchPodStatus = "patch_pod_status" // the participant gate's write
)

// Ops are every operation name the Recorder is given, so that its counter
// can export each from the start.
var Ops = []string{opListPods, opPatchPod, opGetLease, opCreateLease, opPatchLease, opGetPodStatus, opPatchPodStatus}

// GateRecorder counts the participant gate's failed calls and its writes:
// own is true for the own pod's condition set True, false for a lost
// participant's pod set False. Methods must not block.
type GateRecorder interface {
	Recorder
	GateSet(own bool)
}

type nopGateRecorder struct{ nopRecorder }

func (nopGateRecorder) GateSet(bool) {}

// logEvery is the least time between two failure lines of one operation.
// An API server down for an hour must not cause a line per retry.
const logEvery = time.Minute

// failLog rate-limits failure lines per operation and says when an
// operation works again. Only the sync in progress uses it (one at a time).
type failLog struct {
	log   *slog.Logger
	clock clock.Clock
	ops   map[string]*opState
}

type opState struct {
	failing    bool
	lastLogged time.Time
	suppressed int
	failures   int // since the last success
}

func newFailLog(log *slog.Logger, clk clock.Clock) *failLog {
	return &failLog{log: log, clock: clk, ops: map[string]*opState{}}
}

func (f *failLog) state(op string) *opState {
	s, ok := f.ops[op]
	if !ok {
		s = &opState{}
		f.ops[op] = s
	}
	return s
}

func (f *failLog) failed(op string, err error) {
	s := f.state(op)
	s.failures++
	now := f.clock.Now()
	if s.failing && now.Sub(s.lastLogged) < logEvery {
		s.suppressed++
		return
	}
	f.log.Warn("kubernetes API call failed; retrying with backoff (the election is not affected)",
		"op", op, "err", err.Error(), "failures", s.failures, "suppressed", s.suppressed)
	s.failing, s.lastLogged, s.suppressed = true, now, 0
}

func (f *failLog) succeeded(op string) {
	s := f.state(op)
	if s.failing {
		f.log.Info("kubernetes API call succeeds again", "op", op, "failures", s.failures)
	}
	*s = opState{}
}
