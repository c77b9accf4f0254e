package election

import (
	"context"
	"errors"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// loopState is owned by Run's goroutine alone.
type loopState struct {
	sid       int64           // session our node belongs to
	state     State           // session state at the last step
	node      string          // own node name, "" when none
	uuid      string          // protected id of node
	pending   string          // protected id of a create whose outcome is unknown ("race" in race mode)
	old       map[string]bool // protected ids we gave up: any node with one is an orphan to delete
	parentsOK bool
	metaSID   int64 // session whose advertise node exists
	gen       uint64
	dirty     bool     // the queue must be re-read
	firstLook bool     // first re-check after a create: check duplicate ids
	queue     []string // sorted queue up to and including our predecessor
	members   []string // sorted queue at the last re-check
	leaderIdx int      // index in queue of the leader we watch
	termDue   bool
	termNode  string    // node the term timer was armed for
	raceWatch bool      // race: a watch on the leader node is set
	ownWatch  uint64    // gen whose watch on the own node is set (leader), 0 when none
	holdOff   time.Time // no join (misconfigured) or no race (just released) before this
	advCache  map[int64]string
	backoff   time.Duration
	stopping  bool
}

func (l *loopState) init() {
	l.old = map[string]bool{}
	l.advCache = map[int64]string{}
}

type eventKind int

const (
	evPred     eventKind = iota // predecessor changed or vanished
	evLeader                    // the leader node we watch changed or vanished
	evOwn                       // our own node changed or vanished
	evChildren                  // selector leader alone at term end: someone joined
	evTerm                      // selector term ended
	evTimer                     // hold-off over, retry
	evMembers                   // queue leader: a node joined or left the path
)

type event struct {
	kind eventKind
	gen  uint64
	node string
	zk   zk.Event
}

// Run joins the election and campaigns until ctx is cancelled or Resign is
// called, rejoining after session expiry. It returns nil when stopped that
// way, or ErrSessionClosed when the session was closed under it. When ctx is
// cancelled without Resign, it leaves the election itself, trying for at
// most one session timeout.
func (e *Elector) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("election: Run called twice")
	}
	stopPub := make(chan struct{})
	pubSess, cancelPub := e.s.subscribe()
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		e.publisher(pubSess, stopPub)
	}()
	defer func() {
		cancelPub()
		close(e.done)
		close(stopPub)
		<-pubDone
	}()

	sess, cancel := e.s.subscribe()
	defer cancel()
	var retry <-chan time.Time
	for {
		err := e.settle()
		if errors.Is(err, errSessionClosed) {
			e.log.Info("session closed; leaving the election")
			return errSessionClosed
		}
		retry = nil
		if err != nil {
			e.log.Debug("election step failed; retrying", "err", err, "in", e.loop.backoff)
			retry = time.After(e.nextBackoff())
		} else {
			e.loop.backoff = 0
			if !e.loop.holdOff.IsZero() {
				if d := e.loop.holdOff.Sub(e.clock.Now()); d > 0 {
					retry = time.After(d)
				}
			}
		}
		select {
		case <-ctx.Done():
			lctx, lcancel := context.WithTimeout(context.Background(), e.leaveTimeout())
			err := e.leave(lctx)
			lcancel()
			if err != nil {
				e.log.Warn("could not delete own node before stopping; deleting it once reconnected", "err", err)
				e.s.reap(e.orphansLeft())
			}
			return nil
		case c := <-e.cmds:
			if c.kind == cmdResign {
				err := e.leave(c.ctx)
				if err != nil {
					e.log.Warn("could not delete own node before resigning; deleting it once reconnected", "err", err)
					e.s.reap(e.orphansLeft())
				}
				c.reply <- err
				return nil
			}
			c.reply <- e.release(LossReleased)
		case ev := <-e.events:
			e.handle(ev)
		case <-sess:
		case <-retry:
		}
	}
}

func (e *Elector) leaveTimeout() time.Duration {
	if t := e.s.Timeout(); t > 0 {
		return t
	}
	return e.s.cfg.SessionTimeout
}

func (e *Elector) nextBackoff() time.Duration {
	b := e.loop.backoff * 2
	if b < 50*time.Millisecond {
		b = 50 * time.Millisecond
	}
	if b > 2*time.Second {
		b = 2 * time.Second
	}
	e.loop.backoff = b
	return b
}

// settle steps until there is nothing left to do right now.
func (e *Elector) settle() error {
	for i := 0; i < 20; i++ {
		again, err := e.step()
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// handle records what a watch or timer says; step acts on it.
func (e *Elector) handle(ev event) {
	l := &e.loop
	switch ev.kind {
	case evTerm:
		if ev.node == l.node && ev.node != "" {
			l.termDue = true
		}
		return
	case evTimer:
		if ev.gen == l.gen {
			l.raceWatch = false
			l.dirty = true
		}
		return
	}
	if ev.gen != l.gen {
		return // a watch from an older view
	}
	if ev.zk.Type == zk.EventNotWatching {
		return // session trouble: the session path handles it
	}
	switch ev.kind {
	case evPred, evOwn:
		l.dirty = true
		if e.cfg.Mode == ModeRace {
			l.raceWatch = false
		}
	case evLeader:
		if e.cfg.Mode == ModeRace {
			l.raceWatch = false
			l.dirty = true
			return
		}
		if ev.zk.Type == zk.EventNodeDeleted {
			e.walk()
		} else {
			l.dirty = true
		}
	case evChildren:
		l.termDue = true
	case evMembers:
		l.dirty = true
	}
}

// step does the next piece of work; again is true when more may follow.
func (e *Elector) step() (again bool, err error) {
	l := &e.loop
	st, sid, _ := e.s.snapshot()
	prevState := l.state
	l.state = st
	switch st {
	case StateClosed:
		return false, errSessionClosed
	case StateConnected:
	default:
		if st == StateSuspended && e.cfg.OnSuspend == StepDown && prevState != StateSuspended {
			// Curator's standard policy: give up now, re-verify on reconnect.
			e.updateView(func(v *view) {
				if v.holds {
					v.holds, v.lossHint = false, LossSuspended
				}
			})
			l.dirty = true
		}
		return false, nil
	}
	if prevState != StateConnected {
		l.dirty = true // re-verify after any reconnect
	}
	if sid != l.sid {
		if l.sid != 0 {
			e.log.Warn("session changed; rejoining", "old_session", sessionHex(l.sid), "session", sessionHex(sid))
			e.forgetNode(LossExpired)
			if l.pending != "" && l.pending != raceNode {
				l.old[l.pending] = true
			}
			l.pending = ""
		}
		l.sid, l.parentsOK, l.dirty = sid, false, true
		l.gen++
	}
	if e.cfg.Mode == ModeRace {
		return e.stepRace()
	}
	return e.stepQueue()
}

// watch forwards one watch firing to the loop.
func (e *Elector) watch(ch <-chan zk.Event, kind eventKind, node string) {
	gen := e.loop.gen
	go func() {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			select {
			case e.events <- event{kind: kind, gen: gen, node: node, zk: ev}:
			case <-e.done:
			}
		case <-e.done:
		}
	}()
}

// after posts an event after d.
func (e *Elector) after(d time.Duration, ev event) Timer {
	return e.clock.AfterFunc(d, func() {
		select {
		case e.events <- ev:
		case <-e.done:
		}
	})
}

// forgetNode drops the own node from the view (it is gone or about to be).
func (e *Elector) forgetNode(hint LossReason) {
	l := &e.loop
	node := l.node
	if l.uuid != "" {
		l.old[l.uuid] = true
	}
	l.node, l.uuid, l.queue, l.termDue, l.raceWatch = "", "", nil, false, false
	l.gen++
	e.updateView(func(v *view) {
		if v.holds && v.lossHint == "" {
			v.lossHint = hint
		}
		v.holds, v.joined, v.node, v.ownToken = false, false, "", 0
		if v.leader != nil && v.leader.Session == l.sid && v.leader.Node == node {
			v.leader = nil // it was us; the next re-check finds the new leader
		}
	})
}

func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}
