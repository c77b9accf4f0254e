package kube

import (
	"context"
	"time"

	"github.com/electd/electd/internal/election"
)

// lostState is what a leader knows of the queue for the gate.
type lostState struct {
	count int                  // Status().Participants before the last read
	known map[string]bool      // ids at the last read of the queue, but its own
	lost  map[string]time.Time // ids gone from the queue, since when
}

func newLostState(followed, self string) *lostState {
	s := &lostState{count: -1, known: map[string]bool{}, lost: map[string]time.Time{}}
	if followed != "" && followed != self {
		// The leader this participant followed: gone, if that is why it leads.
		s.known[followed] = true
	}
	return s
}

// runLeader, while this participant leads, reads the queue when the
// participant count changes and sets the condition False on the pods of
// ids gone from it for GateGrace. A follower only remembers whom it
// follows: its successor to the leadership may be its loss.
func (g *Gate) runLeader(ctx context.Context) {
	obs := g.src.Observe(ctx)
	var (
		followed string
		s        *lostState // nil while not leading
		due      bool       // the queue is to be read now
		poll     <-chan time.Time
		timer    <-chan time.Time
		backoff  time.Duration
	)
	for {
		select {
		case st, ok := <-obs:
			if !ok {
				obs, st = nil, election.Status{} // the election stopped
			}
			switch {
			case st.IsLeader && s == nil:
				s, due, backoff = newLostState(followed, g.cfg.Identity), true, 0
				poll = g.cfg.Clock.After(countPoll)
			case !st.IsLeader && s != nil:
				s, due, poll, timer = nil, false, nil, nil
			}
			if !st.IsLeader && st.Leader != nil {
				followed = st.Leader.ID
			}
		case <-poll:
			poll = g.cfg.Clock.After(countPoll)
			due = due || g.src.Status().Participants != s.count
		case <-timer:
			timer, due = nil, true
		case <-ctx.Done():
			return
		}
		if s == nil || !due {
			continue
		}
		due = false
		next, err := g.check(ctx, s)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = g.nextBackoff(backoff)
			timer = g.cfg.Clock.After(backoff)
		case next > 0:
			backoff, timer = 0, g.cfg.Clock.After(next)
		default:
			backoff = 0
		}
	}
}

// check reads the queue, notes the ids gone from it, and sets the
// condition False for those gone since GateGrace. It returns when the
// next of them is due (0: none).
func (g *Gate) check(ctx context.Context, s *lostState) (time.Duration, error) {
	s.count = g.src.Status().Participants // before the read: a change during it counts
	present, err := g.present(ctx)
	if err != nil {
		return 0, err
	}
	now := g.cfg.Clock.Now()
	for id := range s.known {
		if !present[id] {
			if _, ok := s.lost[id]; !ok {
				s.lost[id] = now
			}
		}
	}
	delete(present, g.cfg.Identity)
	s.known = present
	var next time.Duration
	for id, since := range s.lost {
		if present[id] {
			delete(s.lost, id) // joined again within the grace
			continue
		}
		if wait := since.Add(g.cfg.GateGrace).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if err := g.markLost(ctx, id, now.Sub(since)); err != nil {
			return next, err // still lost: retried
		}
		delete(s.lost, id)
	}
	return next, nil
}

// present reads the ids in the queue.
func (g *Gate) present(ctx context.Context) (map[string]bool, error) {
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CallTimeout)
	defer cancel()
	ps, err := g.src.Participants(cctx)
	if err != nil {
		g.log.Debug("participant gate: cannot read the queue; retrying", "err", err)
		return nil, err
	}
	ids := make(map[string]bool, len(ps))
	for _, p := range ps {
		ids[p.ID] = true
	}
	return ids, nil
}

// markLost sets the condition False on pod id's pod. It reads the pod,
// then the queue, then writes only if the pod has not changed since its
// read. So a participant that joined again and set its own condition True
// meanwhile keeps it: its write either shows in the queue read or makes
// this write conflict.
func (g *Gate) markLost(ctx context.Context, id string, absent time.Duration) error {
	if validatePodName(id) != nil {
		return nil // not a pod's name: a Curator peer, say
	}
	for range writeTries {
		pg, gone, err := g.read(ctx, id)
		switch {
		case err != nil:
			return err
		case gone || pg.deleting || pg.status == "False":
			// A pod on its way out leaves the Service anyway.
			g.log.Debug("participant gate: lost participant's pod left alone", "other_pod", id,
				"gone", gone, "deleting", pg.deleting, "was", pg.status)
			return nil
		}
		present, err := g.present(ctx)
		switch {
		case err != nil:
			return err
		case present[id]:
			return nil
		}
		changed, err := g.write(ctx, id, pg, podCondition{Status: "False", Reason: "SessionEnded",
			Message: "the participant's node left the election; written by leader " + g.cfg.Identity})
		if err != nil {
			return err
		}
		if !changed {
			g.rec.GateSet(false)
			g.log.Warn("participant gate False on a lost participant's pod",
				"other_pod", id, "was", pg.status, "absent", absent.Round(time.Millisecond))
			return nil
		}
	}
	return errChanging
}
