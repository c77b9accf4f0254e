package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuSample is how often CPUWatch reads the participants' scheduling
// counters.
const cpuSample = 500 * time.Millisecond

// CPUWatch records, every cpuSample, how much CPU each participant's electd
// got and how long its threads waited for one (the sum over its threads of
// /proc/<pid>/task/<tid>/schedstat's run time and run-queue delay): the
// node's containers are this machine's processes, and the suite runs as
// root. A peer's proxy gives a leader's up when it answers no ping within
// half of proxy.peer_timeout, and a lease lapses when its renewals stall,
// so an electd that waits seconds for a CPU is what the evidence of a
// failed request must be able to show.
type CPUWatch struct {
	mu      sync.Mutex
	samples []PodLine
}

// cpuUse is what an electd's threads ran and waited, in all or since
// the previous sample.
type cpuUse struct{ ran, waited time.Duration }

// WatchCPU samples the electd processes of the election at path until ctx
// ends (a scenario's span: it reads /proc every cpuSample).
func WatchCPU(ctx context.Context, path string) *CPUWatch {
	w := &CPUWatch{}
	prev := map[int]cpuUse{}
	last := time.Now()
	go every(ctx, cpuSample, func() {
		now := time.Now()
		cur := map[int]cpuUse{}
		for pid, pod := range electds(path) {
			u, ok := schedstat(pid)
			if !ok {
				continue
			}
			cur[pid] = u
			if p, ok := prev[pid]; ok {
				w.add(PodLine{"cpu " + pod, LogLine{now, fmt.Sprintf("electd ran %d ms, its threads waited %d ms for a CPU, in %d ms",
					(u.ran - p.ran).Milliseconds(), (u.waited - p.waited).Milliseconds(), now.Sub(last).Milliseconds())}})
			}
		}
		prev, last = cur, now
	})
	return w
}

func (w *CPUWatch) add(l PodLine) {
	w.mu.Lock()
	w.samples = append(w.samples, l)
	w.mu.Unlock()
}

// Between returns the samples taken within [from, to].
func (w *CPUWatch) Between(from, to time.Time) []PodLine {
	w.mu.Lock()
	defer w.mu.Unlock()
	return within(w.samples, func(l PodLine) time.Time { return l.At }, from, to)
}

// electds finds the electd processes whose environment names the election
// path, by pid, with their pod's name.
func electds(path string) map[int]string {
	ents, _ := os.ReadDir("/proc")
	out := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "electd" {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		pod, mine := "", false
		for _, kv := range bytes.Split(env, []byte{0}) {
			switch k, v, _ := strings.Cut(string(kv), "="); k {
			case "POD_NAME":
				pod = v
			case "ELECTD_ELECTION_PATH":
				mine = v == path
			}
		}
		if mine && pod != "" {
			out[pid] = pod
		}
	}
	return out
}

// schedstat sums a process's threads' run time and run-queue delay.
func schedstat(pid int) (cpuUse, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return cpuUse{}, false
	}
	var u cpuUse
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		ran, _ := strconv.ParseInt(f[0], 10, 64)
		waited, _ := strconv.ParseInt(f[1], 10, 64)
		u.ran += time.Duration(ran)
		u.waited += time.Duration(waited)
	}
	return u, true
}
