package election

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Elector joins one election on a Session. It never closes the session.
//
// It runs the recipe (the queue or the race) and owns everything around
// it: the loop, the session's share of the election (its path made ready,
// its meta node), the view Status reports, and the watches the recipe asks
// for. Run's goroutine does all the election's ZooKeeper work and alone
// changes the view and the recipe, so the recipe's steps never race each
// other; watches and timers only post events to it. Two exceptions:
// Participants, a read-only listing from the caller's goroutine, and the
// watch that sees the own node deleted, which clears leadership in the view
// at once. Status is computed from memory at call time, so a lapsed lease or
// a dropped connection shows the instant it happens, even while Run is
// blocked on a request. The recipe sees the Elector only as its host
// (seam.go); the Elector sees the recipe only through recipe below.
type Elector struct {
	s     SessionHandle
	acl   []zk.ACL  // the ACL its nodes are made with (nodeACLFor)
	pol   aclPolicy // what checkACL guards, from the session's credentials
	zk    zkConn    // the session's connection: the seam unit tests script
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	rec   Recorder
	r     recipe     // the mode's steps: queueRecipe or raceRecipe
	adv   advertised // meta data by session, shared with Participants
	ws    watchSet   // the watches set, at most one per path and type (watches.go)

	cmds    chan command
	events  chan event
	changed chan struct{} // wakes the publisher
	done    chan struct{}
	started atomic.Bool

	draining                 atomic.Bool
	appUp                    atomic.Bool   // SetAppUp's last word
	appKick                  chan struct{} // SetAppUp wakes Run
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

// recipe is one election mode's steps over a host (docs/design/election-and-lease.md,
// "Election modes"): queueRecipe runs Curator's latch and selector,
// raceRecipe the race on one node. The Elector calls it only from Run's
// goroutine, participants excepted.
type recipe interface {
	// newSession moves the recipe to session sid: what the old session
	// owned is gone; a resumed session's node is adopted. stand makes it a candidate or an observer. verify
	// makes the next step read the election again (a reconnect).
	newSession(sid int64, resumed bool)
	stand(standing bool)
	verify()
	// step does the next piece of work on a live session; again reports
	// that more may follow at once. holdOffUntil is when a hold-off
	// (misconfigured path, race release) ends: the loop steps again then.
	step() (again bool, err error)
	holdOffUntil() time.Time
	// handle records what a watch or timer the recipe set says; the next
	// step acts on it.
	handle(ev event)
	// holding reports whether this participant leads with its own node;
	// owns whether it has a node or a pending create in the election.
	holding() bool
	owns() bool
	// release deletes the own node, re-queueing (Release, a selector's
	// term); leaveOnce deletes the own node and settles a pending create
	// once, and reports whether nothing is left or the error that kept
	// something; leftover and orphans say what is left.
	release(reason LossReason) error
	leaveOnce(reason LossReason) (left bool, err error)
	leftover() string
	orphans() orphans
	// participants reads who takes part, in order, leader first, with
	// conn, from any goroutine.
	participants(conn zkReader) ([]Participant, error)
	// switchover hands leadership to the participant with id to
	// (Elector.Switchover).
	switchover(ctx context.Context, to string) error
	// handOff, run by a leader about to leave the election, makes the
	// participant Config.Handoff names its successor, without letting go;
	// best effort: the leader then deletes its node whatever happened.
	handOff(ctx context.Context)
}

// loopState is the Elector's share of the election's progress: the
// session's. Run's goroutine alone reads and writes it.
type loopState struct {
	sid       int64           // session of the last step
	state     zksession.State // session state at the last step
	parentsOK bool            // the path is ready in session sid (preparePath)
	metaSID   int64           // session whose meta node exists
	metaUp    bool            // the application's state the meta node says (Config.AppChecked)
	backoff   time.Duration
	leasing   bool // this elector counts in the zksession.Session's lease demand
	standing  bool // a candidate: joins and may lead (SetCandidate)
	// identified is the session in which the election's identity was read
	// (identity.go).
	identified int64
	// hiddenACL holds, by path, the credentials an ACL check could not
	// tell apart (checkACL, aclHidden), to name them if ZooKeeper refuses.
	hiddenACL map[string][]string
}

type cmdKind int

const (
	cmdRelease cmdKind = iota
	cmdResign
	cmdCandidate
	cmdSwitchover
)

// command is a verb for Run's goroutine, answered on reply.
type command struct {
	kind      cmdKind
	candidate bool       // cmdCandidate
	why       LossReason // cmdCandidate
	to        string     // cmdSwitchover: the target's id
	ctx       context.Context
	reply     chan error
}

// New validates cfg and returns an Elector that has not joined yet; Run joins.
func New(s SessionHandle, cfg Config) (*Elector, error) {
	if s == nil || (s == (*zksession.Session)(nil)) {
		return nil, errors.New("election: nil session")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fillDefaults(s.Logger(), s.Clock())
	e := &Elector{
		s:       s,
		acl:     nodeACLFor(s.Config().Auth, s.Config().AuthPrevious),
		pol:     aclPolicyFor(s.Config()),
		zk:      s.Conn(),
		cfg:     cfg,
		log:     cfg.Logger.With("path", cfg.Path, "id", cfg.ID, "mode", string(cfg.Mode)),
		clock:   cfg.Clock,
		rec:     cfg.Recorder,
		cmds:    make(chan command),
		events:  make(chan event, 64),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		appKick: make(chan struct{}, 1),
		subs:    map[chan Status]struct{}{},
	}
	if e.rec == nil {
		e.rec = nopRecorder{}
	}
	e.loop.standing, e.v.standing = !cfg.Observer, !cfg.Observer
	if cfg.Observer {
		e.v.withdrawn = LossWithdrawn
	}
	if cfg.Mode == ModeRace {
		e.r = newRaceRecipe(e, cfg, e.log, e.clock, e.rec)
	} else {
		e.r = newQueueRecipe(e, cfg, e.log, e.clock, e.rec)
	}
	return e, nil
}

// publish applies change to the view under the lock and wakes the publisher.
func (e *Elector) publish(change func(v *view)) {
	e.mu.Lock()
	change(&e.v)
	e.mu.Unlock()
	e.poke()
}

// viewed is a copy of the view.
func (e *Elector) viewed() view {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.v
	if v.leader != nil {
		l := *v.leader
		v.leader = &l
	}
	return v
}

func (e *Elector) poke() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// refuse records msg as why this participant cannot stand, logging it
// when it is new.
func (e *Elector) refuse(msg string, attrs ...any) {
	e.mu.Lock()
	was := e.v.refused
	e.v.refused = msg
	e.mu.Unlock()
	e.poke()
	if was != msg {
		e.log.Error("cannot stand in the election: "+msg, attrs...)
	}
}

type nopRecorder struct{}

func (nopRecorder) LeadershipAcquired()       {}
func (nopRecorder) LeadershipLost(LossReason) {}
func (nopRecorder) LeaderChanged()            {}
func (nopRecorder) DuplicateID(string)        {}

// advertised caches meta data by session: it never changes for the life
// of a session. Run's goroutine and Participants' both use it.
type advertised struct {
	mu sync.Mutex
	m  map[int64]metaData
}

const advertisedMax = 1024

func (a *advertised) get(session int64) (metaData, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.m[session]
	return m, ok
}

func (a *advertised) put(session int64, m metaData) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= advertisedMax {
		a.m = map[int64]metaData{} // sessions come and go: start over rather than grow
	}
	a.m[session] = m
}
