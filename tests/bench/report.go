package bench

import (
	"fmt"
	"io"
	"time"
)

// Report holds every figure of a run; a section that did not run is nil.
type Report struct {
	Config  Config
	Machine Machine
	// Started is when the run began, StartLoad and EndLoad the load
	// average at its start and end, Took how long it ran.
	Started            time.Time
	StartLoad, EndLoad string
	Took               time.Duration
	Load               []SectionLoad
	Floor              *FloorResult
	Handoff            *HandoffResult
	Curator            *CuratorResult
	Crash              *CrashResult
	Idle               *IdleResult
	Footprint          *FootprintResult
	Forward            *ForwardResult
	Scale              *ScaleResult
}

// SectionLoad is the load average around one section.
type SectionLoad struct {
	Section       string
	Before, After string
	Took          time.Duration
}

// Write prints the report for people.
func (r *Report) Write(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "machine: %d CPUs, %s, %.0f GiB, %s\n", m.CPUs, m.Model, m.MemGB, m.Go)
	for _, l := range r.Load {
		fmt.Fprintf(w, "  %-10s load %s -> %s, took %s\n", l.Section, l.Before, l.After, l.Took.Round(time.Second))
	}
	if f := r.Floor; f != nil {
		fmt.Fprintf(w, "\nZooKeeper floor, two go-zookeeper clients, standalone server, rounds alternating between forceSync=no and =yes:\n")
		fmt.Fprintf(w, "  delete -> other client's watch fires:   %s\n", f.DeleteToWatch)
		fmt.Fprintf(w, "  ... and its getChildren sent then:      %s\n", f.ToRead)
		fmt.Fprintf(w, "  delete round-trip:                      %s\n", f.DeleteAck)
		fmt.Fprintf(w, "  forceSync=yes (ZooKeeper's default; the bench's other servers run forceSync=no):\n")
		fmt.Fprintf(w, "  delete -> other client's watch fires:   %s\n", f.FsyncDeleteToWatch)
		fmt.Fprintf(w, "  delete round-trip:                      %s\n", f.FsyncDeleteAck)
	}
	if h := r.Handoff; h != nil {
		fmt.Fprintf(w, "\ngraceful handoff, electd processes over HTTP (SIGTERM -> next /healthz/leader?wait= 200):\n")
		fmt.Fprintf(w, "  %s\n", h.Took)
		fmt.Fprintf(w, "  ZooKeeper packets per leader change: median %.1f (background %.2f/s subtracted)\n", median(h.Requests), h.IdleRate)
		fmt.Fprintf(w, "  where the time goes, from both processes' logs, in %d more rounds with electd at debug level (%s):\n", len(h.Timelines), h.Timed)
		writeTimeline(w, h.Timelines)
		if len(h.Newest)+len(h.Next) > 0 {
			fmt.Fprintf(w, "  two electd processes, the leaving leader's election.handoff alternating, %d rounds:\n", len(h.Newest)+len(h.Next))
			fmt.Fprintf(w, "    newest: %s\n", h.Newest)
			fmt.Fprintf(w, "    next:   %s\n", h.Next)
		}
	}
	if c := r.Crash; c != nil {
		fmt.Fprintf(w, "\ncrash failover, electd processes (SIGKILL of the leader -> next /healthz/leader?wait= 200):\n")
		fmt.Fprintf(w, "  %s\n", c.Took)
		fmt.Fprintf(w, "  of which until the successor's watch fired (session expiry): %s\n", c.Watch)
		fmt.Fprintf(w, "  negotiated session timeout %v, tickTime %v: bound timeout + 1.5 x tickTime + 100 ms = %s\n",
			c.Negotiated, c.TickTime, ms(c.Bound()))
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(w, "\nidle ZooKeeper load, %d participants each, packets received per session (cons) over %v:\n", i.N, i.Window)
		fmt.Fprintf(w, "  electd: leader %s, successor %s, other followers %s each (max %s); all %d: %s\n",
			rate(i.Leader), rate(i.Successor), rate(i.FollowerMean), rate(i.FollowerMax), i.N, rate(i.ElectdTotal))
		fmt.Fprintf(w, "  Curator LeaderLatch: %s each (max %s); all %d: %s\n",
			rate(i.CuratorMean), rate(i.CuratorMax), i.N, rate(i.CuratorTotal))
	}
	if f := r.Footprint; f != nil {
		fmt.Fprintf(w, "\nidle electd over %v (log level info): leader RSS %s, CPU %.3f%% of a core; follower RSS %s, CPU %.3f%%\n",
			f.Window, mib(f.LeaderRSS), 100*f.LeaderCPU, mib(f.FollowerRSS), 100*f.FollowerCPU)
		if l := f.Load; l != nil {
			fmt.Fprintf(w, "/healthz/leader on the leader, %d keep-alive connections for %v: %.0f requests/s, latency %s, p99 %s; electd used %.2f cores; non-200: %d\n",
				l.Conns, l.Duration, l.PerSecond, l.Latency, ms(l.Latency.P99()), l.ServerCPU, l.NotLeaders)
		}
		if p := f.Proxy; p != nil {
			fmt.Fprintf(w, "idle electd with its proxy (proxy.listen), %v after %v of GETs from %d kept-alive clients through the follower's proxy, over %v:\n"+
				"  leader RSS %s, CPU %.3f%% of a core; follower RSS %s, CPU %.3f%%\n",
				p.Quiet, p.Burst, p.Conns, f.Window, mib(p.LeaderRSS), 100*p.LeaderCPU, mib(p.FollowerRSS), 100*p.FollowerCPU)
		}
	}
	if f := r.Forward; f != nil {
		writeForward(w, f)
	}
	if s := r.Scale; s != nil {
		writeScale(w, s)
	}
	if c := r.Curator; c != nil {
		fmt.Fprintf(w, "\nCurator 5.4 LeaderLatch in one JVM (close() -> next isLeader()):\n")
		fmt.Fprintf(w, "  %s\n", c.Took)
		fmt.Fprintf(w, "  ZooKeeper packets per leader change: median %.1f (background subtracted, as for electd)\n", median(c.Requests))
	}
	if h, c := r.Handoff, r.Curator; h != nil && c != nil {
		fmt.Fprintf(w, "\nZooKeeper floor in the same rounds: delete -> watch %s; -> getChildren answered %s\n", h.Floor, h.FloorRead)
		fmt.Fprintf(w, "handoff p50 ratios: electd / Curator %.2f; to delete -> watch: electd %.2f, Curator %.2f; to delete -> watch -> getChildren: electd %.2f, Curator %.2f\n",
			ratio(h.Took.P50(), c.Took.P50()), ratio(h.Took.P50(), h.Floor.P50()), ratio(c.Took.P50(), h.Floor.P50()),
			ratio(h.Took.P50(), h.FloorRead.P50()), ratio(c.Took.P50(), h.FloorRead.P50()))
	}
	writeTargets(w, r.targets())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	d := make(Dist, len(xs))
	for i, x := range xs {
		d[i] = time.Duration(x * 1e6)
	}
	return float64(d.P50()) / 1e6
}

func writeScale(w io.Writer, s *ScaleResult) {
	fmt.Fprintf(w, "\nscale, in-process participants (own Session and Elector each, no HTTP), 3-server ensemble, -Xmx%s:\n", s.Heap)
	fmt.Fprintf(w, "  %-22s %10s %34s %9s %12s %14s %10s %10s\n", "", "joined in", "handoff (Resign -> Await)", "req/chg", "ZK pkts/s", "syncs/s/elec.", "heap/each", "RSS/each")
	pts := append([]*ScalePoint{s.Baseline}, s.Sizes...)
	if s.Elections != nil {
		pts = append(pts, s.Elections)
	}
	for _, p := range pts {
		if p == nil {
			continue
		}
		name := fmt.Sprintf("%d in one election", p.N)
		if p.Elections > 1 {
			name = fmt.Sprintf("%d elections of 3", p.Elections)
		}
		joined := "-"
		if p.Joined > 0 {
			joined = p.Joined.Round(time.Millisecond).String()
		}
		h := "-"
		if len(p.Handoff) > 0 {
			h = fmt.Sprintf("p50 %s p90 %s", ms(p.Handoff.P50()), ms(p.Handoff.P90()))
		}
		fmt.Fprintf(w, "  %-22s %10s %34s %9s %12.1f %14.2f %10s %10s\n", name, joined, h, medianInt(p.Requests),
			p.IdleRate, p.Syncs/float64(max(p.Elections, 1)), kib(p.HeapPer), kib(p.RSSPer))
		if len(p.Milestones) > 0 && p.N >= 1000 {
			fmt.Fprintf(w, "    joined over time:")
			for _, m := range p.Milestones {
				fmt.Fprintf(w, " %d@%.1fs", m.Joined, m.At.Seconds())
			}
			fmt.Fprintln(w)
		}
		if p.JoinWall > 0 && p.N >= 1000 {
			fmt.Fprintf(w, "    CPU while joining (%.1f s): the participants (this process) %.1f s, the 3 servers %.1f s\n",
				p.JoinWall.Seconds(), p.BenchCPU.Seconds(), p.ServerCPU.Seconds())
		}
		if p.Err != "" {
			fmt.Fprintf(w, "    stopped: %s\n", p.Err)
		}
	}
}

func medianInt(xs []int64) string {
	if len(xs) == 0 {
		return "-"
	}
	d := make(Dist, len(xs))
	for i, x := range xs {
		d[i] = time.Duration(x)
	}
	return fmt.Sprintf("%d", int64(d.P50()))
}

func kib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/1024)
}
