package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// IdleResult is the ZooKeeper load of idle participants, per session from
// the server's cons counters (packets received: requests and pings).
type IdleResult struct {
	N      int
	Window time.Duration
	// Sessions of each kind found on the server (want N each).
	ElectdSessions, CuratorSessions int
	// electd, per second: the leader, its successor, and each other
	// follower (their mean and max).
	Leader, Successor, FollowerMean, FollowerMax float64
	ElectdTotal                                  float64
	// Curator LeaderLatch participants, per second (all followers but one).
	CuratorMean, CuratorMax, CuratorTotal float64
}

func runIdle(ctx context.Context, env *env) (*IdleResult, error) {
	n, window := env.cfg.IdleParticipants, env.cfg.IdleWindow
	res := &IdleResult{N: n, Window: window}
	if err := idleElectd(ctx, env, res); err != nil {
		return nil, err
	}
	if err := idleCurator(ctx, env, res); err != nil {
		return nil, err
	}
	return res, nil
}

func idleElectd(ctx context.Context, env *env, res *IdleResult) error {
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/idle", env.cfg.SessionTimeout)}
	rig.opts.logLevel = "info"
	defer rig.close()
	for range res.N {
		if err := rig.add(ctx); err != nil {
			return err
		}
	}
	if err := rig.queue[1].awaitLease(ctx); err != nil {
		return err
	}
	ps, err := rig.queue[0].participants(ctx)
	if err != nil {
		return err
	}
	rates, err := sessionRates(ctx, env, env.cfg.SettleWindow, res.Window)
	if err != nil {
		return err
	}
	var followers []float64
	for i, p := range ps {
		r, ok := rates[p.Session]
		if !ok {
			return fmt.Errorf("session %s of %s not in cons", p.Session, p.ID)
		}
		res.ElectdTotal += r
		res.ElectdSessions++
		switch i {
		case 0:
			res.Leader = r
		case 1:
			res.Successor = r
		default:
			followers = append(followers, r)
		}
	}
	res.FollowerMean, res.FollowerMax = meanMax(followers)
	env.progress("idle electd: leader %.2f/s, successor %.2f/s, followers %.2f/s", res.Leader, res.Successor, res.FollowerMean)
	return nil
}

func idleCurator(ctx context.Context, env *env, res *IdleResult) error {
	cp, err := compileCurator()
	if err != nil {
		return err
	}
	jvm, err := startCurator(env, cp, env.single.ConnectString(), "/bench/idle-curator", res.N, env.cfg.SessionTimeout)
	if err != nil {
		return err
	}
	defer jvm.close()
	rates, err := sessionRates(ctx, env, env.cfg.SettleWindow, res.Window)
	if err != nil {
		return err
	}
	if len(rates) != res.N {
		return fmt.Errorf("%d sessions on the server, want the %d Curator participants", len(rates), res.N)
	}
	var all []float64
	for _, r := range rates {
		all = append(all, r)
		res.CuratorTotal += r
		res.CuratorSessions++
	}
	res.CuratorMean, res.CuratorMax = meanMax(all)
	env.progress("idle curator: %.2f/s each", res.CuratorMean)
	return nil
}

// sessionRates is packets/s per session over window, for the sessions
// connected at both ends of it, after a pause for joins to settle.
func sessionRates(ctx context.Context, env *env, settle, window time.Duration) (map[string]float64, error) {
	if err := sleep(ctx, settle); err != nil {
		return nil, err
	}
	a, err := receivedBySession(env.single)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return nil, err
	}
	b, err := receivedBySession(env.single)
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	out := map[string]float64{}
	for sid, n := range b {
		if m, ok := a[sid]; ok {
			out[sid] = float64(n-m) / secs
		}
	}
	return out, nil
}

func meanMax(xs []float64) (mean, mx float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	return mean / float64(len(xs)), slices.Max(xs)
}

func rate(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) + "/s" }
