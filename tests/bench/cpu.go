package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/zktest"
)

// serverPIDs finds the JVM of each member: the process whose command line
// names the member's zoo.cfg, which lives beside its log.
func serverPIDs(ens *zktest.Ensemble) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range ens.Members() {
		dir := filepath.Dir(m.LogPath())
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(b), dir+string(os.PathSeparator)+"zoo.cfg") {
				continue
			}
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// cpuOf sums cpuTime over pids.
func cpuOf(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		sum += cpuTime(p)
	}
	return sum
}
