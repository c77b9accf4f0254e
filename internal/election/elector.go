package election

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/internal/clock"
)

// Elector joins one election on a Session. It never closes the session.
//
// Run's goroutine does all the election's ZooKeeper work and alone changes
// what the election knows (the view) and its progress (loopState), so the
// recipe's steps never race each other; watches and timers only post events
// to it. Two exceptions: Participants, a read-only listing from the
// caller's goroutine, and ownGone, which clears leadership from the watch
// that sees the own node deleted. Status is computed from memory at call
// time, so a lapsed lease or a dropped connection shows the instant it
// happens, even while Run is blocked on a request.
type Elector struct {
	s     *Session
	zk    zkConn // s.conn: the seam unit tests script
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	rec   Recorder
	r     recipe     // the mode's steps: queueRecipe or raceRecipe
	adv   advertised // advertise data by session, shared with Participants
	ws    watchSet   // the watches set, at most one per path and type (watches.go)

	cmds    chan command
	events  chan event
	changed chan struct{} // wakes the publisher
	done    chan struct{}
	started atomic.Bool

	draining                 atomic.Bool
	nReads, nWrites, nChecks atomic.Uint64
	identity                 atomic.Pointer[string] // identity.go

	mu     sync.Mutex
	v      view
	subs   map[chan Status]struct{}
	last   Status        // last status the publisher emitted
	pubOn  bool          // publisher running: last is meaningful
	lostCh chan struct{} // closed when the current leadership ends

	loop loopState // Run's goroutine only
}

// view is what the loop knows, shared with Status under mu. Only Run's
// goroutine writes it.
type view struct {
	joined        bool
	node          string
	nodeSession   int64
	token         int64
	ownToken      int64 // own node's fencing token, for log lines; 0 when unknown
	holds         bool  // own node verified lowest and owned by the live session
	claimedAt     time.Time
	leader        *Participant
	participants  int
	observedAt    time.Time
	misconfigured string
	refused       string     // why ZooKeeper refused our writes, until one succeeds
	lossHint      LossReason // why the next loss happens, set just before it
	standing      bool       // a candidate (loopState.standing, for Status)
	withdrawn     LossReason // why not standing
}

// New validates cfg and returns an Elector that has not joined yet; Run joins.
func New(s *Session, cfg Config) (*Elector, error) {
	if s == nil {
		return nil, errors.New("election: nil session")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeLatch
	}
	if cfg.OnSuspend == "" {
		cfg.OnSuspend = Hold
	}
	if cfg.Handoff == "" {
		cfg.Handoff = HandoffNewest
	}
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.Clock == nil {
		cfg.Clock = s.clock
	}
	e := &Elector{
		s:       s,
		zk:      s.conn,
		cfg:     cfg,
		log:     cfg.Logger.With("path", cfg.Path, "id", cfg.ID, "mode", string(cfg.Mode)),
		clock:   cfg.Clock,
		rec:     cfg.Recorder,
		cmds:    make(chan command),
		events:  make(chan event, 64),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		subs:    map[chan Status]struct{}{},
	}
	if e.rec == nil {
		e.rec = nopRecorder{}
	}
	e.loop.old = map[string]bool{}
	e.loop.standing, e.v.standing = !cfg.Observer, !cfg.Observer
	if cfg.Observer {
		e.v.withdrawn = LossWithdrawn
	}
	if cfg.Mode == ModeRace {
		e.r = &raceRecipe{e: e}
	} else {
		e.r = newQueueRecipe(e)
	}
	return e, nil
}

// Run joins the election and campaigns until ctx is cancelled or Resign is
// called, rejoining after session expiry. It returns nil when stopped that
// way, or ErrSessionClosed when the session was closed under it. When ctx is
// cancelled without Resign, it leaves the election itself, trying for at
// most one session timeout. Run may be called once.
func (e *Elector) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("election: Run called twice")
	}
	return e.run(ctx)
}

// Status returns the current snapshot from memory; it never waits on ZooKeeper.
func (e *Elector) Status() Status {
	st, sid, lease := e.s.snapshot()
	timeout := e.s.Timeout()
	e.mu.Lock()
	v := e.v
	if v.leader != nil {
		l := *v.leader
		v.leader = &l
	}
	e.mu.Unlock()
	why := e.judge(&v, st, sid, lease)
	out := Status{
		Mode:           e.cfg.Mode,
		Path:           e.cfg.Path,
		ID:             e.cfg.ID,
		Advertise:      e.cfg.Advertise,
		Proxy:          e.cfg.Proxy,
		Node:           v.node,
		Election:       e.electionID(),
		Candidate:      v.standing,
		IsLeader:       why == ReasonLeader,
		Why:            why,
		Reason:         reasonText(why, &v, st),
		LeaseRemaining: lease,
		State:          st,
		SessionID:      sid,
		SessionTimeout: timeout,
		Joined:         v.joined && (st == StateConnected || st == StateSuspended),
		Leader:         v.leader,
		ObservedAt:     v.observedAt,
		Participants:   v.participants,
		Misconfigured:  v.misconfigured,
	}
	if out.IsLeader {
		out.FencingToken = v.token
	}
	return out
}

// Observe returns a channel that receives the current Status at once and then
// one Status per change of leader, own leadership or connection state.
// A slow reader sees the latest value (intermediate ones may be skipped).
// The channel is closed when ctx ends or the Elector stops.
func (e *Elector) Observe(ctx context.Context) <-chan Status {
	ch := make(chan Status, 1)
	e.mu.Lock()
	select {
	case <-e.done:
		e.mu.Unlock()
		ch <- e.Status()
		close(ch)
		return ch
	default:
	}
	e.subs[ch] = struct{}{}
	first := e.last
	if !e.pubOn {
		e.mu.Unlock()
		first = e.Status()
		e.mu.Lock()
	}
	offer(ch, first)
	e.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-e.done:
		}
		e.mu.Lock()
		if _, ok := e.subs[ch]; ok {
			delete(e.subs, ch)
			close(ch)
		}
		e.mu.Unlock()
	}()
	return ch
}

// Await blocks until this participant leads or ctx ends. On success it
// returns a channel that is closed when that leadership ends, for any reason.
func (e *Elector) Await(ctx context.Context) (<-chan struct{}, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for st := range e.Observe(ctx) {
		if !st.IsLeader {
			continue
		}
		e.mu.Lock()
		lost := e.lostCh
		e.mu.Unlock()
		if lost != nil {
			return lost, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, ErrClosed
}

// Release gives leadership up now and re-queues at the back (in race mode:
// stays out of the race until another participant has taken the node, or
// briefly when nobody does). It blocks until the own node is deleted or ctx
// ends; ErrNotLeader on a follower.
func (e *Elector) Release(ctx context.Context) error {
	return e.send(ctx, command{kind: cmdRelease})
}

// SetCandidate withdraws this participant from the election (false) or
// makes it stand again (true). Withdrawn, it owns no node and never leads
// but keeps watching the leader, so Status and Observe stay current. A
// withdrawn leader hands over as on release, counted with reason why
// (LossWithdrawn when empty); a follower leaves the queue; standing again
// joins at the back. Status stops saying leader at once; the call blocks
// until the own node is deleted, or returns the error that kept it (it is
// then deleted once ZooKeeper allows), or ctx's.
func (e *Elector) SetCandidate(ctx context.Context, candidate bool, why LossReason) error {
	return e.send(ctx, command{kind: cmdCandidate, candidate: candidate, why: why})
}

// Switchover hands leadership to the participant whose id is to (the first
// in queue order if several carry it): the participants queued ahead of it
// are moved behind it, then this leader releases (docs/DESIGN.md,
// "Switchover"). ErrNotLeader on a follower, ErrNoQueue in race mode, an
// error wrapping ErrSwitchover when the target is unknown, not a
// candidate, already the leader, gone, or queued behind a participant that
// cannot re-queue (a Curator peer). It never makes two leaders: this
// participant leads until its own node is deleted, the last step. When ctx
// ends first it returns ctx.Err() and still leads.
func (e *Elector) Switchover(ctx context.Context, to string) error {
	return e.send(ctx, command{kind: cmdSwitchover, to: to})
}

// Drain makes Status report not-leader from now on without touching
// ZooKeeper: the node stays, so nobody else takes over yet. Used to let the
// application stop acting before Resign hands leadership on.
func (e *Elector) Drain() {
	if !e.draining.Swap(true) {
		e.log.Info("draining: answering not-leader until shutdown")
	}
	e.poke()
}

// Resign stops campaigning and deletes the own node, waiting for a create in
// flight and retrying through disconnects until done or ctx ends. Run
// returns afterwards.
func (e *Elector) Resign(ctx context.Context) error {
	e.Drain()
	err := e.send(ctx, command{kind: cmdResign})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Done is closed when Run has returned.
func (e *Elector) Done() <-chan struct{} { return e.done }

// Counters returns the cumulative ZooKeeper work counts.
func (e *Elector) Counters() Counters {
	return Counters{Rechecks: e.nChecks.Load(), Writes: e.nWrites.Load(), Reads: e.nReads.Load()}
}

// Participants reads the queue from ZooKeeper, in queue order, from the
// caller's goroutine (reads only). Race mode lists the leader, then the
// electd followers in the order they joined (they own no election node: Node
// is empty and FencingToken 0). A path that does not exist has no
// participants. It returns when ctx ends even if ZooKeeper has not answered.
func (e *Elector) Participants(ctx context.Context) ([]Participant, error) {
	type result struct {
		ps  []Participant
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ps, err := e.r.participants()
		ch <- result{ps, err}
	}()
	select {
	case r := <-ch:
		return r.ps, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type nopRecorder struct{}

func (nopRecorder) LeadershipAcquired()       {}
func (nopRecorder) LeadershipLost(LossReason) {}
func (nopRecorder) LeaderChanged()            {}
func (nopRecorder) DuplicateID(string)        {}
