package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FootprintResult is what an idle electd costs its host, and how fast it
// answers /healthz/leader.
type FootprintResult struct {
	Window time.Duration
	// RSS in bytes at the end of the window, and CPU as a share of one
	// core over it, for the leader (which renews its lease) and a follower.
	LeaderRSS, FollowerRSS int64
	LeaderCPU, FollowerCPU float64
	Load                   *LoadResult
}

func runFootprint(ctx context.Context, env *env) (*FootprintResult, error) {
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/footprint", env.cfg.SessionTimeout)}
	rig.opts.logLevel = "info" // as deployed
	defer rig.close()
	for range 2 {
		if err := rig.add(ctx); err != nil {
			return nil, err
		}
	}
	leader, follower := rig.queue[0], rig.queue[1]
	if err := follower.awaitLease(ctx); err != nil {
		return nil, err
	}
	if err := sleep(ctx, env.cfg.SettleWindow); err != nil { // start-up work done
		return nil, err
	}
	res := &FootprintResult{Window: env.cfg.FootprintWindow}
	l0, f0 := cpuTime(leader.pid()), cpuTime(follower.pid())
	start := time.Now()
	if err := sleep(ctx, res.Window); err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	res.LeaderCPU = (cpuTime(leader.pid()) - l0).Seconds() / secs
	res.FollowerCPU = (cpuTime(follower.pid()) - f0).Seconds() / secs
	res.LeaderRSS = procKB(fmt.Sprintf("/proc/%d/status", leader.pid()), "VmRSS:") << 10
	res.FollowerRSS = procKB(fmt.Sprintf("/proc/%d/status", follower.pid()), "VmRSS:") << 10
	env.progress("footprint: leader RSS %s, CPU %.3f%%", mib(res.LeaderRSS), 100*res.LeaderCPU)
	var err error
	if res.Load, err = loadHealthz(ctx, leader, env.cfg.LoadConns, env.cfg.LoadDuration); err != nil {
		return nil, err
	}
	env.progress("/healthz/leader: %.0f requests/s", res.Load.PerSecond)
	return res, nil
}

// cpuTime is the time all of pid's threads spent on a CPU, from the
// scheduler's nanosecond accounting (/proc/PID/task/*/schedstat), finer
// than the 10 ms ticks of /proc/PID/stat. Threads that exited are lost,
// which an idle Go process hardly has.
func cpuTime(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
