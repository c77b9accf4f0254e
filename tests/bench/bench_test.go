package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchSmoke runs every section of the bench at the smallest sizes, so
// that `make bench` keeps working. It checks that each figure was produced,
// never its value: speed is the bench's business, not a test's.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper, electd processes and Curator JVMs; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "electd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/electd/electd/cmd/electd").CombinedOutput(); err != nil {
		t.Fatalf("go build electd: %v\n%s", err, out)
	}
	cfg := Config{
		Electd: bin,
		Rounds: 3, Warmup: 1, PolicyRounds: 2,
		SessionTimeout: 4 * time.Second,
		CrashRounds:    1, CrashTimeout: time.Second,
		IdleParticipants: 3, IdleWindow: 500 * time.Millisecond,
		Scale: []int{20}, ScaleRounds: 2,
		Elections:       3,
		FootprintWindow: 500 * time.Millisecond,
		LoadDuration:    200 * time.Millisecond, LoadConns: 2,
		ForwardRequests: 50, ForwardRounds: 1,
		ForwardConns: 4, ForwardLoad: 200 * time.Millisecond,
		FaultRounds: 1, FaultWindow: 2 * time.Second,
		ZKHeap:      "256m",
		Progress:    testLog{t},
		MemBudget:   2 << 30,
		ScaleWindow: 500 * time.Millisecond, SettleWindow: 200 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Write(&out)
	t.Logf("report:\n%s", out.String())

	// The kept report's form is what the docs' regions read: each renders.
	root := t.TempDir()
	path, err := rep.ReportFile(filepath.Join(root, "docs", "bench"), Build{Commit: "abc1234", Clean: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := ReadKeptReport(root, filepath.Join("docs", "bench", filepath.Base(path)))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range Regions {
		if _, err := q.Render(kept); err != nil {
			t.Errorf("region %s of %s: %v", q.Name, q.File, err)
		}
	}

	want := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("no figure for %s", what)
		}
	}
	f := rep.Floor
	want("floor", f != nil && len(f.DeleteToWatch) == 3 && len(f.ToRead) == 3 && len(f.FsyncDeleteToWatch) == 3)
	h := rep.Handoff
	want("electd handoff", h != nil && len(h.Took) == 3 && len(h.Requests) == 3 && len(h.Timelines) == 3 && len(h.Timed) == 3 && len(h.Floor) == 3)
	if h != nil {
		for i, s := range handoffSteps {
			found := false
			for _, tl := range h.Timelines {
				found = found || tl[i] >= 0
			}
			want("timeline step "+s.name, found)
		}
	}
	want("handoff by policy", h != nil && len(h.Newest) == 1 && len(h.Next) == 1)
	c := rep.Curator
	want("Curator handoff", c != nil && len(c.Took) == 3 && len(c.Requests) == 3)
	cr := rep.Crash
	want("crash failover", cr != nil && len(cr.Took) == 1 && cr.Negotiated > 0 && cr.TickTime > 0)
	i := rep.Idle
	want("idle load", i != nil && i.ElectdSessions == 3 && i.CuratorSessions == 3 && i.Leader > 0 && i.Successor > 0)
	fp := rep.Footprint
	want("footprint", fp != nil && fp.LeaderRSS > 0 && fp.FollowerRSS > 0 && fp.LeaderCPU > 0)
	want("/healthz/leader load", fp != nil && fp.Load != nil && fp.Load.Requests > 0 && fp.Load.NotLeaders == 0)
	fw := rep.Forward
	want("forward", fw != nil && len(fw.Latency) == 15 && len(fw.Saturation) == 14 && len(fw.Handovers) == 4 && fw.Rate > 0)
	if fw != nil {
		for _, l := range fw.Handovers {
			want("forward: "+l.Kind, len(l.Requests) == 1 && l.Requests[0] > 0)
		}
		want("forward faults", len(fw.Faults) == len(faultKinds))
		for _, f := range fw.Faults {
			want("forward fault: "+f.Kind, f.Rounds == 1 && f.Requests > 0 && len(f.Took) == f.Requests)
		}
		// Not CPU > 0: the kernel counts a process's CPU in 10 ms ticks,
		// and a smoke run's fraction of a second through HAProxy on a busy
		// machine (11 requests) counted none.
		for _, l := range fw.Saturation {
			want("forward at saturation: "+l.Method+" "+pathName(l.Via, l.Hops, false), l.Requests > 0 && l.Errors == 0 && l.CPU >= 0)
		}
	}
	s := rep.Scale
	want("scale", s != nil && s.Baseline != nil && len(s.Baseline.Handoff) == 3 && len(s.Sizes) == 1)
	if s != nil && len(s.Sizes) == 1 {
		p := s.Sizes[0]
		want("scale 20", p.Err == "" && p.Joined > 0 && len(p.Handoff) == 2 && len(p.Requests) == 2 && p.IdleRate > 0 && p.RSSPer != 0)
	}
	want("elections", s != nil && s.Elections != nil && s.Elections.Err == "" && len(s.Elections.Handoff) == 2 && s.Elections.Syncs > 0)
	want("load averages", len(rep.Load) == len(Sections))
	for _, heading := range []string{"ZooKeeper floor", "graceful handoff", "Curator 5.4", "crash failover", "idle ZooKeeper load", "idle electd", "forwarding proxy", "HAProxy, two hops", "at saturation", "what a client sees under each fault", "scale,", "targets"} {
		want("report section "+heading, strings.Contains(out.String(), heading))
	}
}

// testLog sends the bench's progress lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
