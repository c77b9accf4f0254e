package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/electd/electd/internal/election"
)

// Source is the election as the Labeler sees it. *election.Elector
// satisfies it. Observe says when leadership changes. Status is asked
// again right before the label is set, since an observed value may be old.
type Source interface {
	Observe(ctx context.Context) <-chan election.Status
	Status() election.Status
}

// Backoff of failed rounds: from minBackoff, doubling, at most the recheck
// interval (a leader checks that often anyway).
const minBackoff = 500 * time.Millisecond

// tri is what the Labeler knows of something it wrote.
type tri int

const (
	unknown tri = iota
	yes
	no
)

// Labeler mirrors one participant's leadership into its pod's label and
// the Lease. Build it with New, run it with Run, end it with Stop. A
// Labeler for a Config that is not Enabled is off. It mirrors nothing, Run
// and Stop return at once, and Status is nil.
type Labeler struct {
	off   bool
	cfg   Config
	api   *client
	src   Source
	log   *slog.Logger
	fails *failLog

	// Only the round in progress (one at a time) touches these.
	ownLabel tri // own pod carries the label
	ownLease tri // the Lease names this participant

	mu sync.Mutex
	st Status

	stopCh chan stopRequest
	done   chan struct{}
}

type stopRequest struct {
	ctx  context.Context
	errc chan error
}

// New checks cfg (see Config.Validate) and builds a Labeler for src. The
// Labeler is off when cfg is not Enabled.
func New(cfg Config, src Source) (*Labeler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if !cfg.Enabled() {
		done := make(chan struct{})
		close(done)
		return &Labeler{off: true, done: done}, nil
	}
	cfg = cfg.withDefaults()
	api, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("mirroring leadership into Kubernetes", "server", cfg.Server, "namespace", cfg.Namespace,
		"pod", cfg.PodName, "label", cfg.LeaderLabel, "lease", cfg.LeaseName)
	log := cfg.Logger.With("namespace", cfg.Namespace)
	if cfg.LeaderLabel != "" {
		log = log.With("pod", cfg.PodName, "label", cfg.LeaderLabel)
	}
	if cfg.LeaseName != "" {
		log = log.With("lease", cfg.LeaseName)
	}
	return &Labeler{
		cfg:    cfg,
		api:    api,
		src:    src,
		log:    log,
		fails:  newFailLog(log, cfg.Clock),
		st:     Status{Namespace: cfg.Namespace, Pod: cfg.PodName, Label: cfg.LeaderLabel, Lease: cfg.LeaseName},
		stopCh: make(chan stopRequest),
		done:   make(chan struct{}),
	}, nil
}

// Status returns what the Labeler last achieved, nil when it is off; it
// never waits on the API server.
func (l *Labeler) Status() *Status {
	if l.off {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	return &st
}

// round is one sync in progress.
type round struct {
	leading  bool
	cancel   context.CancelFunc
	canceled bool // by a change of leadership: its error is no failure
	done     chan error
}

func (l *Labeler) start(ctx context.Context, leading bool) *round {
	ctx, cancel := context.WithCancel(ctx)
	r := &round{leading: leading, cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer cancel()
		r.done <- l.sync(ctx, leading)
	}()
	return r
}

// Run follows the election until ctx ends or Stop is called. Each change of
// leadership starts a round of calls at once. It cancels a round made for
// the opposite state. A failed round is retried with backoff. A leader
// repeats its round every RecheckInterval.
func (l *Labeler) Run(ctx context.Context) error {
	if l.off {
		return nil
	}
	defer close(l.done)
	obsCtx, cancelObs := context.WithCancel(ctx)
	defer cancelObs()
	obs := l.src.Observe(obsCtx)
	var leading bool
	select {
	case st, ok := <-obs:
		leading = ok && st.IsLeader
	case <-ctx.Done():
		return ctx.Err()
	}

	var (
		cur     *round
		due     = true // a round should start when none runs
		timer   <-chan time.Time
		backoff time.Duration
	)
	for {
		if due && cur == nil {
			due, timer = false, nil
			cur = l.start(ctx, leading)
		}
		var roundDone <-chan error
		if cur != nil {
			roundDone = cur.done
		}
		select {
		case st, ok := <-obs:
			if !ok {
				obs, st.IsLeader = nil, false // the election stopped
			}
			if st.IsLeader == leading {
				continue
			}
			leading, due = st.IsLeader, true
			if cur != nil && cur.leading != leading {
				cur.cancel()
				cur.canceled = true
			}
		case err := <-roundDone:
			canceled := cur.canceled
			cur = nil
			switch {
			case canceled:
			case err != nil:
				backoff = min(max(2*backoff, minBackoff), max(l.cfg.RecheckInterval, minBackoff))
				timer = l.cfg.Clock.After(backoff)
			default:
				backoff = 0
				if leading {
					timer = l.cfg.Clock.After(l.cfg.RecheckInterval)
				}
			}
		case <-timer:
			timer, due = nil, true
		case req := <-l.stopCh:
			if cur != nil {
				cur.cancel()
				<-cur.done
			}
			req.errc <- l.release(req.ctx)
			return nil
		case <-ctx.Done():
			if cur != nil {
				cur.cancel()
				<-cur.done
			}
			return ctx.Err()
		}
	}
}

// Stop removes the label from the own pod and gives up the Lease, then
// ends Run. It retries until done or ctx ends. Shutdown calls it before
// the election deletes its node. Shutdown bounds ctx, so an unreachable
// API server cannot hold up the handoff; the next leader removes a label
// left behind. Stop returns nil at once if Run is not running.
func (l *Labeler) Stop(ctx context.Context) error {
	req := stopRequest{ctx: ctx, errc: make(chan error, 1)}
	select {
	case l.stopCh <- req:
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.errc
}

// release is the last round: as a follower, retried until ctx ends.
func (l *Labeler) release(ctx context.Context) error {
	backoff := minBackoff
	for {
		err := l.sync(ctx, false)
		if err == nil || ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("kube: %w", err)
			}
			return nil
		}
		select {
		case <-l.cfg.Clock.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("kube: %w", err)
		}
		backoff = min(2*backoff, l.cfg.RecheckInterval)
	}
}

// sync makes one round of calls towards what leadership asks for.
func (l *Labeler) sync(ctx context.Context, leading bool) error {
	var errs []error
	if l.cfg.LeaderLabel != "" {
		f := l.dropLabel
		if leading {
			f = l.takeLabel
		}
		errs = append(errs, f(ctx))
	}
	if l.cfg.LeaseName != "" {
		f := l.releaseLease
		if leading {
			f = l.holdLease
		}
		errs = append(errs, f(ctx))
	}
	err := errors.Join(errs...)
	if err == nil {
		l.update(func(s *Status) { s.InSync, s.SyncedAt = true, l.cfg.Clock.Now() })
	} else {
		l.update(func(s *Status) { s.InSync = false })
	}
	return err
}

// call runs one API call with the call timeout and accounts for its result.
func (l *Labeler) call(ctx context.Context, op string, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, l.cfg.CallTimeout)
	err := f(cctx)
	cancel()
	if err == nil {
		l.fails.succeeded(op)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err() // cancelled by a change of leadership or shutdown: not a failure
	}
	err = fmt.Errorf("%s: %w", op, err)
	l.cfg.Recorder.KubeCallFailed(op)
	l.fails.failed(op, err)
	now := l.cfg.Clock.Now()
	l.update(func(s *Status) { s.Failures, s.LastError, s.LastErrorAt = s.Failures+1, err.Error(), now })
	return err
}

func (l *Labeler) update(f func(*Status)) {
	l.mu.Lock()
	f(&l.st)
	l.mu.Unlock()
}
