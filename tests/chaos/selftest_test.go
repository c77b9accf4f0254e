package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/zktest"
)

// TestHarnessCatchesTwoLeaders runs two real electd processes that both
// lead, each alone on its own election path, under one observer: the safety
// check must report overlapping 200s, and the orphan check must report the
// second path's node as foreign to the first. It shows that the checks fail
// on real samples, not only on synthetic ones.
func TestHarnessCatchesTwoLeaders(t *testing.T) {
	bin, dir := electd(t)
	e := newEnv(t, 1, tick, syncLimit)
	obs := electdtest.NewObserver(*flagPoll, 250*time.Millisecond)
	defer obs.Stop()
	base := fmt.Sprintf("/selftest/%d", time.Now().UnixNano())
	var procs []*electdtest.Proc
	for i, path := range []string{base + "/a", base + "/b"} {
		px, err := zktest.NewProxy(e.servers()[0])
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		id := fmt.Sprintf("two%d", i)
		p, err := electdtest.Launch(bin, electdtest.Spec{Dir: filepath.Join(dir, t.Name(), id), Config: &electdtest.Config{
			ID: id, Path: path, Mode: "latch", OnSuspend: "hold", SessionTimeout: sessionT, Servers: []string{px.Addr()},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(5 * time.Second)
		procs = append(procs, p)
		obs.Add(id, p.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range procs {
		if _, err := obs.WaitFor(ctx, func(s invariant.Sample) bool { return s.Who == p.Name && s.Leader }); err != nil {
			t.Fatalf("%s never led: %v\n%s", p.Name, err, p.LogTail(20))
		}
	}
	t0 := obs.Now()
	if err := obs.WaitCovered(ctx, t0+200*time.Millisecond, procs[0].Name, procs[1].Name); err != nil {
		t.Fatal(err)
	}
	obs.Stop()
	samples := obs.Samples()
	if n := len(invariant.Overlaps(samples)); n == 0 {
		t.Errorf("two leaders on two paths: the safety check found no overlapping 200s in %d samples", len(samples))
	} else {
		t.Logf("safety check flagged %d overlapping pairs, e.g. %v", n, invariant.Overlaps(samples)[0])
	}
	if n := len(invariant.InferredOverlaps(samples)); n == 0 {
		t.Errorf("two leaders on two paths: no overlapping leadership spans")
	} else {
		t.Logf("inferred check flagged %d overlapping spans, e.g. %v", n, invariant.InferredOverlaps(samples)[0])
	}
	if n := len(invariant.CertainOverlaps(samples)); n == 0 {
		t.Errorf("two leaders on two paths: no certain overlap")
	}
	nodes, err := readNodes(e.servers(), base+"/b", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if orphans, _ := invariant.Orphans("latch", nodes, []string{procs[0].Name}); len(orphans) != 1 {
		t.Errorf("node of %s under the other path: orphans %v, want it alone", procs[1].Name, orphans)
	}
}
