package election

import (
	"context"
	"errors"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// loopState is the election's progress. Run's goroutine alone reads and
// writes it; the recipes keep their own state beside it.
type loopState struct {
	sid       int64           // session our node (or pending create) belongs to
	state     State           // session state at the last step
	node      string          // own node name, "" when none
	pending   *pendingCreate  // a create whose reply was lost; nil when none
	old       map[string]bool // protected ids given up: any node with one is an orphan to delete
	parentsOK bool
	metaSID   int64     // session whose meta node exists
	gen       uint64    // bumped when the watches set so far stop mattering
	dirty     bool      // the queue (race: the leader node) must be read again
	holdOff   time.Time // no join (misconfigured) or no race (just released) before this
	backoff   time.Duration
	leasing   bool // this elector counts in the Session's lease demand
	standing  bool // a candidate: joins and may lead (SetCandidate)
	// identified is the session in which the election's identity was read
	// (identity.go).
	identified int64
}

// pendingCreate is a create whose reply was lost: the node may exist or not
// until the recipe looks (CURATOR-498).
type pendingCreate struct {
	// Exactly one is set: uuid, the protected id to look for among the
	// children (queue recipes), or name, the node's known name (race).
	uuid, name string
}

type eventKind int

const (
	evPred       eventKind = iota // predecessor changed or vanished
	evLeader                      // the leader node we watch changed or vanished
	evOwn                         // our own node changed or vanished
	evChildren                    // selector leader alone at term end: someone joined
	evTerm                        // selector term ended
	evTimer                       // hold-off over, retry
	evMembers                     // queue leader: a node joined or left the path
	evMembersDue                  // queue leader: time to read the changed queue
)

// String names a watch's kind in debug lines.
func (k eventKind) String() string {
	names := [...]string{"predecessor", "leader", "own", "children", "term", "timer", "members", "members-due"}
	if int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}

type event struct {
	kind eventKind
	gen  uint64
	node string
	zk   zk.Event
}

type cmdKind int

const (
	cmdRelease cmdKind = iota
	cmdResign
	cmdCandidate
	cmdSwitchover
)

type command struct {
	kind      cmdKind
	candidate bool       // cmdCandidate
	why       LossReason // cmdCandidate
	to        string     // cmdSwitchover: the target's id
	ctx       context.Context
	reply     chan error
}

// send hands a command to Run and waits for its answer.
func (e *Elector) send(ctx context.Context, c command) error {
	c.ctx, c.reply = ctx, make(chan error, 1)
	select {
	case e.cmds <- c:
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is Run's body: settle, then wait for the next reason to step.
func (e *Elector) run(ctx context.Context) error {
	stopPub := make(chan struct{})
	pubSess, cancelPub := e.s.subscribe()
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		e.publisher(pubSess, stopPub)
	}()
	defer func() {
		e.wantLease(false)
		cancelPub()
		close(e.done)
		close(stopPub)
		<-pubDone
	}()

	sess, cancel := e.s.subscribe()
	defer cancel()
	for {
		err := e.settle()
		if errors.Is(err, ErrSessionClosed) {
			e.log.Info("session closed; leaving the election")
			return ErrSessionClosed
		}
		var retry <-chan struct{}
		stopRetry := func() {}
		if err != nil {
			d := e.nextBackoff(err)
			e.log.Debug("election step failed; retrying", "err", err, "in", d)
			retry, stopRetry = clock.Deadline(e.clock, d)
		} else {
			e.loop.backoff = 0
			if d := e.loop.holdOff.Sub(e.clock.Now()); !e.loop.holdOff.IsZero() && d > 0 {
				retry, stopRetry = clock.Deadline(e.clock, d)
			}
		}
		done, err := e.wait(ctx, sess, retry, err != nil)
		stopRetry()
		if done {
			return err
		}
	}
}

// wait blocks until the loop has a reason to step again: a command, a watch
// or timer event, the retry, or a change of the session. After a failed step
// (failed), only a change of connection state or session id cuts the
// back-off short: the lease renewals that also signal the session must not
// turn a back-off into a retry every renewal interval. done reports that Run
// must return err.
func (e *Elector) wait(ctx context.Context, sess <-chan struct{}, retry <-chan struct{}, failed bool) (done bool, err error) {
	// What the last step saw: a change since then is worth a step at once,
	// even one that happened before this wait began.
	st, sid := e.loop.state, e.loop.sid
	for {
		select {
		case <-ctx.Done():
			lctx, lcancel := context.WithTimeout(context.Background(), e.leaveTimeout())
			err := e.leave(lctx)
			lcancel()
			if err != nil {
				e.log.Warn("could not delete own node before stopping; deleting it once reconnected", "err", err)
				e.s.reap(e.orphansLeft())
			}
			return true, nil
		case c := <-e.cmds:
			if c.kind == cmdResign {
				err := e.leave(c.ctx)
				if err != nil {
					e.log.Warn("could not delete own node before resigning; deleting it once reconnected", "err", err)
					e.s.reap(e.orphansLeft())
				}
				c.reply <- err
				return true, nil
			}
			c.reply <- e.command(c)
			return false, nil
		case ev := <-e.events:
			e.r.handle(ev)
			return false, nil
		case <-sess:
			if nst, nsid, _ := e.s.snapshot(); failed && nst == st && nsid == sid {
				continue
			}
			return false, nil
		case <-retry:
			return false, nil
		}
	}
}

func (e *Elector) leaveTimeout() time.Duration {
	if t := e.s.Timeout(); t > 0 {
		return t
	}
	return e.s.cfg.SessionTimeout
}

// Back-off after a failed step: short for a lost connection (the
// reconnect itself wakes the loop), long for a refusal that only an
// operator can fix (permissions), so that it is retried, not hammered.
const (
	minBackoff     = 50 * time.Millisecond
	maxConnBackoff = 2 * time.Second
	maxBackoff     = 30 * time.Second
)

func (e *Elector) nextBackoff(err error) time.Duration {
	limit := maxBackoff
	if isConnErr(err) {
		limit = maxConnBackoff
	}
	b := min(max(e.loop.backoff*2, minBackoff), limit)
	e.loop.backoff = b
	return b
}

// settleSteps bounds one settle: a step that keeps asking for another with
// nothing changing is a defect (a state left dirty), and the cap keeps it
// from taking the loop over.
const settleSteps = 20

// settle steps until there is nothing left to do right now.
func (e *Elector) settle() error {
	for i := 0; i < settleSteps; i++ {
		again, err := e.step()
		if err != nil || !again {
			return err
		}
	}
	e.log.Warn("the election did not settle; stepping again at the next wake-up", "steps", settleSteps)
	return nil
}

// step does the next piece of work; again is true when more may follow.
// The session handling is common to the recipes; the rest is the recipe's.
func (e *Elector) step() (again bool, err error) {
	l := &e.loop
	st, sid, _ := e.s.snapshot()
	prevState := l.state
	l.state = st
	switch st {
	case StateClosed:
		return false, ErrSessionClosed
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
			e.abandonPending()
		}
		l.sid, l.parentsOK, l.dirty = sid, false, true
		l.gen++
		e.ws.reset()
	}
	e.identify()
	if !l.standing {
		if l.pending != nil || l.node != "" || l.metaSID == l.sid && l.sid != 0 {
			// Withdrawn with something still in the election (the
			// delete failed): delete it now.
			if !e.leaveOnce(e.withdrawnWhy()) {
				return false, errWithdrawPending
			}
		}
	}
	return e.r.step()
}

// wantLease says whether this participant may lead soon (it leads, or is
// next in line) and so needs the Session to keep the lease renewed.
func (e *Elector) wantLease(want bool) {
	if e.loop.leasing != want {
		e.loop.leasing = want
		e.s.needLease(want)
	}
}

// ensureLease renews the lease now, when it has lapsed, before this
// participant starts leading: a participant that was not renewing (it was
// not next in line, or just won a race) must not wait a renewal interval to
// answer 200. A failure leaves the lease lapsed: Status says so until the
// renewal loop succeeds.
func (e *Elector) ensureLease() {
	e.wantLease(true)
	if e.s.LeaseRemaining() > 0 {
		return
	}
	if _, err := e.s.renew(); err != nil {
		e.log.Debug("could not renew the lease before leading", "err", err)
	}
}

// abandonPending gives up a create whose outcome is unknown: any node it
// made is an orphan (CURATOR-45/79).
func (e *Elector) abandonPending() {
	if p := e.loop.pending; p != nil && p.uuid != "" {
		e.loop.old[p.uuid] = true
	}
	e.loop.pending = nil
}

// stale reports a watch event that no longer matters: set for an older view
// (the own node's watch: for an older node), or the library saying the
// watch is gone (the session path handles that).
func (e *Elector) stale(ev event) bool {
	if ev.zk.Type == zk.EventNotWatching {
		return true
	}
	if ev.kind == evOwn {
		return ev.node != e.loop.node
	}
	return ev.gen != e.loop.gen
}

// after posts an event after d.
func (e *Elector) after(d time.Duration, ev event) clock.Timer {
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
	e.r.forget()
	e.wantLease(false)
	l.node = ""
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

func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}

// wallNow is the wall-clock time shown as observed_at (not a deadline).
func (e *Elector) wallNow() time.Time { return e.clock.Now().UTC() }
