package bench

import (
	"context"
	"fmt"
	"net/http"
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
	// Proxy is the same of a leader and a follower with their proxies
	// on (the proxy flavour), once a burst of traffic through them has
	// gone quiet.
	Proxy *IdleProxy
}

// IdleProxy is what two electd with their forwarding proxies hold once a
// burst of traffic (Conns kept-alive clients for Burst through the
// follower's proxy) has been quiet for Quiet.
type IdleProxy struct {
	Conns                  int
	Burst, Quiet           time.Duration
	LeaderRSS, FollowerRSS int64
	LeaderCPU, FollowerCPU float64
}

// proxyQuiet is how long the footprint waits after the burst: internal/forward
// gives back what a burst left behind once the proxy has been quiet for a
// whole period of 10 s after a busy one (docs/design/proxy-app.md, "Forwarding":
// bounds), so within two periods, and the peers' and the application's
// connections close within the rig's idle_timeout (2 s).
const proxyQuiet = 25 * time.Second

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
	var err error
	res.LeaderRSS, res.FollowerRSS, res.LeaderCPU, res.FollowerCPU, err = idleWindow(ctx, leader.pid(), follower.pid(), res.Window)
	if err != nil {
		return nil, err
	}
	env.progress("footprint: leader RSS %s, CPU %.3f%%", mib(res.LeaderRSS), 100*res.LeaderCPU)
	if res.Load, err = loadHealthz(ctx, leader, env.cfg.LoadConns, env.cfg.LoadDuration); err != nil {
		return nil, err
	}
	env.progress("/healthz/leader: %.0f requests/s", res.Load.PerSecond)
	if res.Proxy, err = idleProxy(ctx, env, res.Window); err != nil {
		return nil, err
	}
	env.progress("footprint with the proxy: leader RSS %s, follower RSS %s", mib(res.Proxy.LeaderRSS), mib(res.Proxy.FollowerRSS))
	return res, nil
}

// idleWindow measures two processes over window: RSS at its end, CPU as
// a share of one core over it.
func idleWindow(ctx context.Context, leader, follower int, window time.Duration) (lRSS, fRSS int64, lCPU, fCPU float64, err error) {
	l0, f0 := cpuTime(leader), cpuTime(follower)
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return 0, 0, 0, 0, err
	}
	secs := time.Since(start).Seconds()
	lCPU = (cpuTime(leader) - l0).Seconds() / secs
	fCPU = (cpuTime(follower) - f0).Seconds() / secs
	lRSS = procKB(fmt.Sprintf("/proc/%d/status", leader), "VmRSS:") << 10
	fRSS = procKB(fmt.Sprintf("/proc/%d/status", follower), "VmRSS:") << 10
	return lRSS, fRSS, lCPU, fCPU, nil
}

// idleProxy runs a leader and a follower with their proxies in front of
// applications of their own, as the forward section does, drives GETs
// through the follower's proxy (and so the leader's) for a burst, lets
// them be quiet, and measures them over window.
func idleProxy(ctx context.Context, env *env, window time.Duration) (*IdleProxy, error) {
	r, err := newForwardRig(ctx, env, "/bench/footprint-proxy", env.cfg.SessionTimeout, "i", 2)
	defer r.close()
	if err != nil {
		return nil, err
	}
	leader, err := r.settled(ctx, nil)
	if err != nil {
		return nil, err
	}
	follower := r.follower(leader)
	res := &IdleProxy{Conns: env.cfg.ForwardConns, Burst: 2 * time.Second, Quiet: proxyQuiet}
	req := rawRequest(http.MethodGet, route{via: viaElectd})
	if _, _, err := drive(ctx, follower.proxy, req, res.Conns, time.Now().Add(res.Burst)); err != nil {
		return nil, fmt.Errorf("footprint: the burst through the proxies: %w", err)
	}
	if err := sleep(ctx, res.Quiet); err != nil {
		return nil, err
	}
	res.LeaderRSS, res.FollowerRSS, res.LeaderCPU, res.FollowerCPU, err = idleWindow(ctx, leader.d.pid(), follower.d.pid(), window)
	return res, err
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
