package bench

import (
	"fmt"
	"io"
	"time"
)

// target is one of issue 10's targets (and issues 22's and 28's, for the
// forwarding proxy), judged on this run's figures.
type target struct {
	name   string
	figure string
	met    bool
}

// targets judges the figures that were produced; a target whose figures
// are missing is left out.
func (r *Report) targets() []target {
	var out []target
	add := func(name string, met bool, format string, args ...any) {
		out = append(out, target{name, fmt.Sprintf(format, args...), met})
	}
	if h, c := r.Handoff, r.Curator; h != nil && c != nil && len(h.Took) > 0 && len(c.Took) > 0 {
		add("handoff p50 <= Curator's in-process p50", h.Took.P50() <= c.Took.P50(),
			"%s vs %s (ratio %.2f)", ms(h.Took.P50()), ms(c.Took.P50()), ratio(h.Took.P50(), c.Took.P50()))
	}
	if h := r.Handoff; h != nil && len(h.Took) > 0 {
		add("handoff p90 <= 2 x p50", h.Took.P90() <= 2*h.Took.P50(), "p90 %s, p50 %s", ms(h.Took.P90()), ms(h.Took.P50()))
	}
	if i := r.Idle; i != nil {
		// Counted over the window: equal within one packet per window.
		slack := 1 / i.Window.Seconds()
		add("idle requests per follower <= a Curator participant's", i.FollowerMean <= i.CuratorMean+slack,
			"%.1f vs %.1f packets in %v", i.FollowerMean*i.Window.Seconds(), i.CuratorMean*i.Window.Seconds(), i.Window)
	}
	if s := r.Scale; s != nil {
		out = append(out, r.scaleTargets(s)...)
	}
	if f := r.Forward; f != nil {
		out = append(out, forwardTargets(f)...)
	}
	if c := r.Crash; c != nil && len(c.Took) > 0 {
		add("crash failover <= timeout + 1.5 x tickTime + 100 ms", c.Took.Max() <= c.Bound(),
			"max %s, p50 %s, bound %s", ms(c.Took.Max()), ms(c.Took.P50()), ms(c.Bound()))
	}
	if f := r.Footprint; f != nil {
		rss := max(f.LeaderRSS, f.FollowerRSS)
		add("idle electd RSS <= 15 MiB", rss <= 15<<20, "%s", mib(rss))
		cpu := max(f.LeaderCPU, f.FollowerCPU)
		add("idle electd CPU <= 0.2 %", cpu <= 0.002, "%.3f %%", 100*cpu)
		if l := f.Load; l != nil {
			add("/healthz/leader >= 20,000 requests/s", l.PerSecond >= 20000, "%.0f requests/s, p99 %s", l.PerSecond, ms(l.Latency.P99()))
		}
		if p := f.Proxy; p != nil {
			rss := max(p.LeaderRSS, p.FollowerRSS)
			add("idle electd with its proxy RSS <= 15 MiB", rss <= 15<<20, "%s", mib(rss))
			cpu := max(p.LeaderCPU, p.FollowerCPU)
			add("idle electd with its proxy CPU <= 0.2 %", cpu <= 0.002, "%.3f %%", 100*cpu)
		}
	}
	return out
}

func (r *Report) scaleTargets(s *ScaleResult) []target {
	var out []target
	add := func(name string, met bool, format string, args ...any) {
		out = append(out, target{name, fmt.Sprintf(format, args...), met})
	}
	var big *ScalePoint
	for _, p := range s.Sizes {
		if big == nil || p.N > big.N {
			big = p
		}
	}
	if big != nil {
		name := fmt.Sprintf("%d participants all joined within 30 s", big.N)
		if big.Joined > 0 {
			add(name, big.Joined <= 30*time.Second, "%v", big.Joined.Round(time.Millisecond))
		} else {
			add(name, false, "did not: %s", big.Err)
		}
		if b := s.Baseline; b != nil && len(b.Handoff) > 0 && len(big.Handoff) > 0 {
			add(fmt.Sprintf("%d participants: handoff p50 <= 1.5 x the 2-participant p50", big.N),
				big.Handoff.P50() <= b.Handoff.P50()*3/2, "%s vs %s (ratio %.2f)",
				ms(big.Handoff.P50()), ms(b.Handoff.P50()), ratio(big.Handoff.P50(), b.Handoff.P50()))
		}
	}
	worst := int64(0)
	for _, p := range append([]*ScalePoint{s.Baseline, s.Elections}, s.Sizes...) {
		if p == nil {
			continue
		}
		for _, n := range p.Requests {
			worst = max(worst, n)
		}
	}
	if worst > 0 {
		add("at most 10 ZooKeeper requests per leader change, any size", worst <= 10, "worst %d", worst)
	}
	return out
}

func writeTargets(w io.Writer, ts []target) {
	fmt.Fprintf(w, "\ntargets (issues 10, 22 and 28), judged on this run:\n")
	for _, t := range ts {
		verdict := "MISSED"
		if t.met {
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-6s %-58s %s\n", verdict, t.name, t.figure)
	}
}
