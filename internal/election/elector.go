package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Elector joins one election on a Session. It never closes the session.
//
// One goroutine (Run) does all ZooKeeper work for the election, so the
// recipe's steps never race each other; watches and timers only post events
// to it. Status is computed from memory at call time, so a lapsed lease or a
// dropped connection shows the instant it happens, even while Run is blocked
// on a request.
type Elector struct {
	s     *Session
	cfg   Config
	log   *slog.Logger
	clock Clock
	rec   Recorder
	tag   string

	cmds    chan command
	events  chan event
	changed chan struct{} // wakes the publisher
	done    chan struct{}
	started atomic.Bool

	draining                 atomic.Bool
	nReads, nWrites, nChecks atomic.Uint64

	mu     sync.Mutex
	v      view
	subs   map[chan Status]struct{}
	last   Status        // last status the publisher emitted
	pubOn  bool          // publisher running: last is meaningful
	lostCh chan struct{} // closed when the current leadership ends

	loop loopState // owned by Run's goroutine
}

// view is what the loop knows, shared with Status under mu.
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
	reason        string     // why not leading, when the loop knows better than "following"
	lossHint      LossReason // why the next loss happens, set just before it
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
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.Clock == nil {
		cfg.Clock = s.clock
	}
	e := &Elector{
		s:       s,
		cfg:     cfg,
		log:     cfg.Logger.With("path", cfg.Path, "id", cfg.ID, "mode", string(cfg.Mode)),
		clock:   cfg.Clock,
		rec:     cfg.Recorder,
		tag:     tagFor(cfg.Mode),
		cmds:    make(chan command),
		events:  make(chan event, 64),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		subs:    map[chan Status]struct{}{},
	}
	if e.rec == nil {
		e.rec = nopRecorder{}
	}
	e.loop.init()
	return e, nil
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
	isLeader, reason := e.judge(&v, st, sid, lease)
	out := Status{
		Mode:           e.cfg.Mode,
		Path:           e.cfg.Path,
		ID:             e.cfg.ID,
		Advertise:      e.cfg.Advertise,
		Node:           v.node,
		IsLeader:       isLeader,
		Reason:         reason,
		LeaseRemaining: lease,
		State:          st,
		SessionID:      sid,
		SessionTimeout: timeout,
		Joined:         v.joined && st == StateConnected || v.joined && st == StateSuspended,
		Leader:         v.leader,
		ObservedAt:     v.observedAt,
		Participants:   v.participants,
		Misconfigured:  v.misconfigured,
	}
	if isLeader {
		out.FencingToken = v.token
	}
	return out
}

// judge decides leadership from the view and the session at this instant.
func (e *Elector) judge(v *view, st State, sid int64, lease time.Duration) (bool, string) {
	switch {
	case v.misconfigured != "":
		return false, "misconfigured: " + v.misconfigured
	case e.draining.Load():
		return false, "shutting down"
	case !v.holds:
		if v.reason != "" {
			return false, v.reason
		}
		if v.leader != nil {
			return false, "following " + v.leader.ID
		}
		if !v.joined {
			return false, "not joined"
		}
		return false, "no leader known"
	case v.nodeSession != sid:
		return false, "session changed"
	case st == StateSuspended && e.cfg.OnSuspend == StepDown:
		return false, "suspended (on_suspend: step-down)"
	case st != StateConnected && st != StateSuspended:
		return false, "zookeeper " + string(st)
	case lease <= 0:
		return false, "lease expired"
	case e.clock.Now().Before(v.claimedAt.Add(e.cfg.ClaimDelay)):
		return false, "claim delay"
	}
	return true, "leader"
}

// Release gives leadership up now and re-queues at the back (in race mode:
// stays out of the race until another participant has taken the node, or
// briefly when nobody does). ErrNotLeader on a follower.
func (e *Elector) Release(ctx context.Context) error {
	return e.send(ctx, cmdRelease)
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
	err := e.send(ctx, cmdResign)
	if errors.Is(err, errClosed) {
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

type cmdKind int

const (
	cmdRelease cmdKind = iota
	cmdResign
)

type command struct {
	kind  cmdKind
	ctx   context.Context
	reply chan error
}

func (e *Elector) send(ctx context.Context, k cmdKind) error {
	c := command{kind: k, ctx: ctx, reply: make(chan error, 1)}
	select {
	case e.cmds <- c:
	case <-e.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-e.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Participants reads the queue from ZooKeeper, in queue order. Race mode
// lists the leader, then the electd followers in the order they joined (they
// own no election node: Node is empty and FencingToken 0). A path that does
// not exist has no participants.
func (e *Elector) Participants(ctx context.Context) ([]Participant, error) {
	type result struct {
		ps  []Participant
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ps, err := e.readParticipants()
		ch <- result{ps, err}
	}()
	select {
	case r := <-ch:
		return r.ps, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *Elector) readParticipants() ([]Participant, error) {
	conn := e.s.conn
	if e.cfg.Mode == ModeRace {
		data, stat, err := conn.Get(join(e.cfg.Path, raceNode))
		if errors.Is(err, zk.ErrNoNode) {
			return []Participant{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("election: read leader: %w", err)
		}
		p := e.participant(raceNode, data, stat)
		p.IsLeader = true
		return append([]Participant{p}, e.raceFollowers(p.Session)...), nil
	}
	kids, _, err := conn.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return []Participant{}, nil // CURATOR-436: no path, no leader
	}
	if err != nil {
		return nil, fmt.Errorf("election: list participants: %w", err)
	}
	out := make([]Participant, 0, len(kids))
	for _, name := range sortQueue(kids, e.tag) {
		data, stat, err := conn.Get(join(e.cfg.Path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // CURATOR-358: gone while we read
		}
		if err != nil {
			return nil, fmt.Errorf("election: read participant %s: %w", name, err)
		}
		p := e.participant(name, data, stat)
		p.IsLeader = len(out) == 0
		out = append(out, p)
	}
	e.mu.Lock()
	e.v.participants = len(out)
	e.mu.Unlock()
	return out, nil
}

// raceFollowers lists the electd sessions under metaPath other than the
// leader's, oldest first. Best effort: the leader is the answer that matters,
// so a failed read lists fewer followers rather than failing the call.
func (e *Elector) raceFollowers(leader int64) []Participant {
	conn := e.s.conn
	kids, _, err := conn.Children(e.metaPath())
	if err != nil {
		return nil
	}
	type follower struct {
		p     Participant
		czxid int64
	}
	var fs []follower
	for _, k := range kids {
		sid, err := strconv.ParseUint(strings.TrimPrefix(k, "0x"), 16, 64)
		if err != nil || int64(sid) == leader {
			continue
		}
		data, stat, err := conn.Get(join(e.metaPath(), k))
		if err != nil {
			continue
		}
		m := parseMeta(data)
		fs = append(fs, follower{Participant{ID: m.ID, Advertise: m.Advertise, Session: int64(sid)}, stat.Czxid})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].czxid < fs[j].czxid })
	out := make([]Participant, len(fs))
	for i, f := range fs {
		out[i] = f.p
	}
	return out
}

// participant builds a Participant from a node read.
func (e *Elector) participant(name string, data []byte, stat *zk.Stat) Participant {
	return Participant{
		ID:           string(data),
		Advertise:    e.advertiseOf(stat.EphemeralOwner),
		Node:         name,
		Session:      stat.EphemeralOwner,
		FencingToken: stat.Czxid + e.cfg.FencingOffset,
	}
}

// nodeToken reads the fencing token of one of our nodes, for log lines (a
// create does not return the node's stat); 0 when the read fails.
func (e *Elector) nodeToken(name string) int64 {
	e.nReads.Add(1)
	ok, stat, err := e.s.conn.Exists(join(e.cfg.Path, name))
	if err != nil || !ok {
		return 0
	}
	return stat.Czxid + e.cfg.FencingOffset
}

// ownToken is the fencing token of the own node as last read.
func (e *Elector) ownToken() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v.ownToken
}

// updateView applies f to the view under the lock and wakes the publisher.
func (e *Elector) updateView(f func(v *view)) {
	e.mu.Lock()
	f(&e.v)
	e.mu.Unlock()
	e.poke()
}

func (e *Elector) poke() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

type nopRecorder struct{}

func (nopRecorder) LeadershipAcquired()       {}
func (nopRecorder) LeadershipLost(LossReason) {}
func (nopRecorder) LeaderChanged()            {}
func (nopRecorder) DuplicateID(string)        {}
