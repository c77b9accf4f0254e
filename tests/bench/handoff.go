package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// HandoffResult is the graceful handoff between electd processes: SIGTERM
// to the leader until the successor's /healthz/leader?wait= answers 200.
type HandoffResult struct {
	Took Dist
	// Requests is ZooKeeper packets per leader change (mntr, background
	// pings and renewals subtracted), from SIGTERM until quiet.
	Requests []float64
	// Timelines holds the steps of as many rounds again, run afterwards
	// with the daemons logging at debug level (the lines the timeline
	// reads); Timed is how long those rounds took end to end.
	Timelines []Timeline
	Timed     Dist
	// Newest and Next are the handoff between two electd processes, in
	// rounds alternating the leaving leader's election.handoff
	// (runPolicies).
	Newest, Next Dist
	// IdleRate is packets/s of every participant between rounds (the
	// background subtracted from Requests, electd's and Curator's).
	IdleRate float64
	// Floor is ZooKeeper's delete until another client's watch fires, and
	// FloorRead until its getChildren right after is answered, in the same
	// rounds (floorRig.round).
	Floor, FloorRead Dist
}

// handoffRig is a queue of electd processes on one election.
type handoffRig struct {
	env   *env
	opts  electdOpts
	queue []*daemon // join order = queue order; queue[0] leads
	n     int       // daemons started so far, for ids
	// policies, when set, are the election.handoff of the daemons in turn
	// (else next: opts.handoff).
	policies []string
}

func (r *handoffRig) add(ctx context.Context) error {
	opts := r.opts
	if len(r.policies) > 0 {
		opts.handoff = r.policies[r.n%len(r.policies)]
	}
	r.n++
	d, err := startDaemon(ctx, opts, "electd-"+strconv.Itoa(r.n))
	if err != nil {
		return err
	}
	r.queue = append(r.queue, d)
	return nil
}

func (r *handoffRig) close() {
	for _, d := range r.queue {
		d.kill()
	}
}

// checkOrder verifies that the queue is what the bench thinks it is.
func (r *handoffRig) checkOrder(ctx context.Context) error {
	ps, err := r.queue[0].participants(ctx)
	if err != nil {
		return err
	}
	if len(ps) != len(r.queue) {
		return fmt.Errorf("%d participants, want %d: %v", len(ps), len(r.queue), ps)
	}
	for i, p := range ps {
		if p.ID != r.queue[i].id || p.IsLeader != (i == 0) {
			return fmt.Errorf("queue is %v, want the order the daemons started in", ps)
		}
	}
	return nil
}

// runHandoff measures graceful handoffs over HTTP between separate electd
// processes (three in the queue, the leader gets SIGTERM, a new one joins
// at the back after each round), Curator's in-process handoff among three
// latches the same way, and ZooKeeper's floor, round by round in turn on
// the same server, so that the machine's drifting load weighs on all three
// alike.
func runHandoff(ctx context.Context, env *env, warmup, rounds int) (*HandoffResult, *CuratorResult, error) {
	// Info, electd's default level: the debug lines the timeline needs cost
	// a few tenths of a millisecond per handoff (runTimeline).
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/handoff", env.cfg.SessionTimeout)}
	rig.opts.logLevel = "info"
	defer rig.close()
	for range 3 {
		if err := rig.add(ctx); err != nil {
			return nil, nil, err
		}
	}
	cur, err := newCuratorRig(env, "/bench/curator")
	if err != nil {
		return nil, nil, err
	}
	defer cur.close()
	floor, err := newFloorRig(env.single)
	if err != nil {
		return nil, nil, err
	}
	defer floor.close()
	res, cres := &HandoffResult{}, &CuratorResult{}
	if res.IdleRate, err = idleRate(ctx, env, env.cfg.SettleWindow); err != nil {
		return nil, nil, err
	}
	for i := range warmup + rounds {
		counted := i >= warmup
		steps := []func() error{
			func() error {
				w, r, _, err := floor.round(ctx)
				if counted {
					res.Floor, res.FloorRead = append(res.Floor, w), append(res.FloorRead, r)
				}
				return err
			},
			func() error {
				took, reqs, tl, err := rig.round(ctx)
				if err == nil && counted {
					res.Took = append(res.Took, took)
					res.Requests = append(res.Requests, reqs-res.IdleRate*tl.window.Seconds())
				}
				return err
			},
			func() error {
				took, reqs, window, err := cur.round(ctx)
				if err == nil && counted {
					cres.Took = append(cres.Took, took)
					cres.Requests = append(cres.Requests, reqs-res.IdleRate*window.Seconds())
				}
				return err
			},
		}
		for j := range steps { // each round in another order
			if err := steps[(i+j)%len(steps)](); err != nil {
				return nil, nil, fmt.Errorf("handoff round %d: %w", i+1, err)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
		if counted {
			env.progress("handoff round %d/%d: electd %s, Curator %s, floor %s", i+1-warmup, rounds,
				ms(res.Took[len(res.Took)-1]), ms(cres.Took[len(cres.Took)-1]), ms(res.Floor[len(res.Floor)-1]))
		}
	}
	rig.close()
	rig.queue = nil
	if err := runTimeline(ctx, env, warmup, rounds, res); err != nil {
		return nil, nil, err
	}
	if err := runPolicies(ctx, env, warmup, env.cfg.PolicyRounds, res); err != nil {
		return nil, nil, err
	}
	return res, cres, nil
}

// runTimeline hands over rounds times more between electd processes that
// log at debug level, and reads each handoff's steps from their logs.
func runTimeline(ctx context.Context, env *env, warmup, rounds int, res *HandoffResult) error {
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/timeline", env.cfg.SessionTimeout)}
	defer rig.close()
	for range 3 {
		if err := rig.add(ctx); err != nil {
			return err
		}
	}
	for i := range warmup + rounds {
		took, _, tl, err := rig.round(ctx)
		if err != nil {
			return fmt.Errorf("timeline round %d: %w", i+1, err)
		}
		if i >= warmup {
			res.Timelines = append(res.Timelines, tl.Timeline)
			res.Timed = append(res.Timed, took)
		}
	}
	env.progress("timeline rounds (debug level): %s", res.Timed)
	return nil
}

// idleRate is the packets/s the ensemble receives over window.
func idleRate(ctx context.Context, env *env, window time.Duration) (float64, error) {
	a, err := env.single.PacketsReceived()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return 0, err
	}
	b, err := env.single.PacketsReceived()
	if err != nil {
		return 0, err
	}
	return float64(b-a) / time.Since(start).Seconds(), nil
}

// quietAfter is how long a round keeps counting requests after the
// successor answered 200: the other followers' re-reads come then.
const quietAfter = 300 * time.Millisecond

type roundTimeline struct {
	Timeline
	window time.Duration
}

// round hands over once and returns how long it took, the packets counted
// and the timeline read from both processes' logs.
func (r *handoffRig) round(ctx context.Context) (time.Duration, float64, roundTimeline, error) {
	leader, next := r.queue[0], r.queue[1]
	var tl roundTimeline
	if err := r.checkOrder(ctx); err != nil {
		return 0, 0, tl, err
	}
	if err := next.awaitLease(ctx); err != nil {
		return 0, 0, tl, err
	}
	poll, err := next.longPoll(ctx, 30*time.Second)
	if err != nil {
		return 0, 0, tl, err
	}
	// Let the poll reach the handler and the election quieten.
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return 0, 0, tl, err
	}
	before, err := r.env.single.PacketsReceived()
	if err != nil {
		return 0, 0, tl, err
	}
	t0 := time.Now()
	if err := leader.signal(syscall.SIGTERM); err != nil {
		return 0, 0, tl, err
	}
	res := <-poll
	if res.err != nil || res.code != http.StatusOK {
		return 0, 0, tl, fmt.Errorf("%s: /healthz/leader?wait= answered %d %v", next.id, res.code, res.err)
	}
	select {
	case <-leader.exited:
	case <-time.After(15 * time.Second):
		return 0, 0, tl, fmt.Errorf("%s did not exit 15 s after SIGTERM", leader.id)
	}
	if err := sleep(ctx, quietAfter); err != nil {
		return 0, 0, tl, err
	}
	after, err := r.env.single.PacketsReceived()
	if err != nil {
		return 0, 0, tl, err
	}
	tl.window = time.Since(t0)
	tl.Timeline = readTimeline(t0, res.at, leader, next)
	r.queue = r.queue[1:]
	if err := r.add(ctx); err != nil {
		return 0, 0, tl, err
	}
	return res.at.Sub(t0), float64(after - before), tl, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
