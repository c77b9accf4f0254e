package bench

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"time"
)

// CrashResult is failover after SIGKILL of the leading electd process:
// ZooKeeper must expire the dead session before its node goes.
type CrashResult struct {
	Took Dist
	// Watch is SIGKILL until the successor's predecessor watch fired (the
	// session's expiry, ZooKeeper's part).
	Watch Dist
	// Negotiated is the session timeout the servers granted; TickTime theirs.
	Negotiated, TickTime time.Duration
}

// Bound is the target: the negotiated timeout + 1.5 ticks + 100 ms.
func (c *CrashResult) Bound() time.Duration {
	return c.Negotiated + c.TickTime*3/2 + 100*time.Millisecond
}

// runCrash kills the leader rounds times, three electd processes in the
// queue, a new one joining at the back after each round.
func runCrash(ctx context.Context, env *env, rounds int) (*CrashResult, error) {
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/crash", env.cfg.CrashTimeout)}
	defer rig.close()
	for range 3 {
		if err := rig.add(ctx); err != nil {
			return nil, err
		}
	}
	secs, err := rig.queue[0].metric(ctx, "electd_zk_session_timeout_seconds")
	if err != nil {
		return nil, err
	}
	res := &CrashResult{Negotiated: time.Duration(secs * float64(time.Second)), TickTime: env.single.TickTime()}
	for i := range rounds {
		took, watch, err := rig.crashRound(ctx)
		if err != nil {
			return nil, fmt.Errorf("crash round %d: %w", i+1, err)
		}
		res.Took = append(res.Took, took)
		if watch > 0 {
			res.Watch = append(res.Watch, watch)
		}
		env.progress("crash round %d/%d: %s", i+1, rounds, ms(took))
	}
	return res, nil
}

func (r *handoffRig) crashRound(ctx context.Context) (took, watch time.Duration, err error) {
	leader, next := r.queue[0], r.queue[1]
	if err := r.checkOrder(ctx); err != nil {
		return 0, 0, err
	}
	if err := next.awaitLease(ctx); err != nil {
		return 0, 0, err
	}
	poll, err := next.longPoll(ctx, 60*time.Second)
	if err != nil {
		return 0, 0, err
	}
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := leader.signal(syscall.SIGKILL); err != nil {
		return 0, 0, err
	}
	res := <-poll
	if res.err != nil || res.code != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: /healthz/leader?wait= answered %d %v", next.id, res.code, res.err)
	}
	<-leader.exited
	for _, l := range next.logLines() {
		if l.Msg == "watch fired" && l.Watch == "predecessor" && l.Time.After(t0) {
			watch = l.Time.Sub(t0)
			break
		}
	}
	r.queue = r.queue[1:]
	if err := r.add(ctx); err != nil {
		return 0, 0, err
	}
	return res.at.Sub(t0), watch, nil
}
