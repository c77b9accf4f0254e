package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/electd/electd/internal/election"
)

// GateSource is the election as the Gate sees it. *election.Elector
// satisfies it. Participants is read only by a leader, when the count of
// participants in Status changes: the leader alone watches the queue.
type GateSource interface {
	Source
	Participants(ctx context.Context) ([]election.Participant, error)
}

// countPoll is how often a leader compares Status().Participants with the
// count of its last read. Status is computed from memory: no ZooKeeper or
// API request is made at rest.
const countPoll = 250 * time.Millisecond

// Gate keeps the pod condition GateCondition (docs/design/kubernetes.md,
// "A readiness gate for the real multi-node case"). Each participant sets
// its own pod's condition True once joined, and again when it reads it
// False while joined. The leader sets it False on the pod of a participant
// whose node vanished and whose id did not join again within GateGrace.
// It never sets True on another pod. A Gate for a Config without
// ParticipantGate is off: Run returns at once.
type Gate struct {
	off bool
	cfg Config
	api *client
	src GateSource
	log *slog.Logger
	rec GateRecorder

	failMu sync.Mutex // both loops log failures through fails
	fails  *failLog
}

// NewGate checks cfg (see Config.Validate) and builds a Gate for src.
func NewGate(cfg Config, src GateSource) (*Gate, error) {
	if !cfg.ParticipantGate {
		return &Gate{off: true}, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	cfg = cfg.withDefaults()
	api, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	rec, ok := cfg.Recorder.(GateRecorder)
	if !ok {
		rec = failOnlyRecorder{cfg.Recorder}
	}
	log := cfg.Logger.With("namespace", cfg.Namespace, "pod", cfg.PodName, "condition", GateCondition)
	log.Info("keeping the participant gate", "grace", cfg.GateGrace)
	return &Gate{cfg: cfg, api: api, src: src, log: log, rec: rec, fails: newFailLog(log, cfg.Clock)}, nil
}

type failOnlyRecorder struct{ Recorder }

func (failOnlyRecorder) GateSet(bool) {}

// Run keeps the own pod's condition and, while leading, the condition of
// lost participants' pods, until ctx ends. It never blocks the election:
// it only observes it and reads the queue.
func (g *Gate) Run(ctx context.Context) {
	if g.off {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.runOwn(ctx)
	}()
	g.runLeader(ctx)
	<-done
}

// call runs one API call with the call timeout and accounts for a failure.
func (g *Gate) call(ctx context.Context, op string, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CallTimeout)
	err := f(cctx)
	cancel()
	g.failMu.Lock()
	defer g.failMu.Unlock()
	if err == nil {
		g.fails.succeeded(op)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	err = fmt.Errorf("%s: %w", op, err)
	g.rec.KubeCallFailed(op)
	g.fails.failed(op, err)
	return err
}

// read returns the gate's condition of pod. A pod that does not exist is
// no failure: gone is true.
func (g *Gate) read(ctx context.Context, pod string) (pg podGate, gone bool, err error) {
	err = g.call(ctx, opGetPodStatus, func(ctx context.Context) (err error) {
		pg, err = g.api.gateOf(ctx, g.cfg.Namespace, pod)
		if hasCode(err, http.StatusNotFound) {
			gone, err = true, nil
		}
		return err
	})
	return pg, gone, err
}

// write sets the gate's condition of pod, if the pod is still at pg's
// version. A conflict (the pod changed since pg was read) is no failure:
// changed is true and the caller reads again.
func (g *Gate) write(ctx context.Context, pod string, pg podGate, cond podCondition) (changed bool, err error) {
	err = g.call(ctx, opPatchPodStatus, func(ctx context.Context) error {
		err := g.api.setGate(ctx, g.cfg.Namespace, pod, pg.resourceVersion, cond, g.cfg.Clock.Now())
		if hasCode(err, http.StatusConflict) {
			changed, err = true, nil
		}
		return err
	})
	return changed, err
}

// writeTries bounds the read-write attempts of one condition change; more
// conflicts wait for the next retry.
const writeTries = 3

var (
	// errChanging is a condition change that met a conflict writeTries times.
	errChanging = errors.New("kube: the pod kept changing under the gate's writes")
	// errOwnPodMissing is the own pod not found: kubernetes.pod_name is wrong.
	errOwnPodMissing = errors.New("kube: the own pod does not exist (check kubernetes.pod_name)")
)

// nextBackoff doubles a retry delay from minBackoff up to the recheck interval.
func (g *Gate) nextBackoff(d time.Duration) time.Duration {
	return min(max(2*d, minBackoff), max(g.cfg.RecheckInterval, minBackoff))
}
