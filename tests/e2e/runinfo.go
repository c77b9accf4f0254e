package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/quote"
)

// RunInfo is where and when a run's figures come from, for the report's
// first lines: the commit (and whether the working tree differed from it),
// the date, and the machine's load, which the figures depend on (the
// node shares its cores with whatever else runs).
type RunInfo struct {
	Commit, Tree string
	Start        time.Time
	LoadStart    string // /proc/loadavg at the start

	mu      sync.Mutex
	maxLoad float64 // the highest 1-minute load average sampled
	samples int
	cancel  context.CancelFunc
}

// loadSample is how often the load average is read during a run.
const loadSample = 10 * time.Second

// StartRunInfo records the commit and the load at the start, and samples
// the load until End.
func StartRunInfo(moduleDir string) *RunInfo {
	ri := &RunInfo{Commit: "unknown", Tree: "unknown", Start: time.Now().UTC(), LoadStart: loadavg()}
	if out, err := exec.Command("git", "-C", moduleDir, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		ri.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", moduleDir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		if len(strings.TrimSpace(string(out))) == 0 {
			ri.Tree = "clean"
		} else {
			ri.Tree = fmt.Sprintf("%d tracked files changed since the commit", len(strings.Split(strings.TrimSpace(string(out)), "\n")))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ri.cancel = cancel
	ri.sample()
	go every(ctx, loadSample, ri.sample)
	return ri
}

func (ri *RunInfo) sample() {
	f := strings.Fields(loadavg())
	if len(f) == 0 {
		return
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.maxLoad = max(ri.maxLoad, v)
	ri.samples++
}

// End stops sampling and returns the report's lines on the run; repro
// is the E2EFLAGS that reproduce it.
func (ri *RunInfo) End(repro string) string {
	ri.cancel()
	ri.sample()
	end := time.Now().UTC()
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return fmt.Sprintf("Run at commit `%s` (working tree: %s), from %s to %s UTC (%s), on %d CPUs. "+
		"Load average (`/proc/loadavg`: 1, 5, 15 min) at the start `%s`, at the end `%s`; the highest 1-minute load average of %d samples (one every %v): %.2f. "+
		"Reproduce with `make e2e E2EFLAGS='%s'` at that commit.",
		ri.Commit, ri.Tree, ri.Start.Format("2006-01-02 15:04:05"), end.Format("15:04:05"),
		end.Sub(ri.Start).Round(time.Second), runtime.NumCPU(), ri.LoadStart, loadavg(), ri.samples, loadSample, ri.maxLoad, repro)
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string { return quote.LoadAvg("unknown") }
