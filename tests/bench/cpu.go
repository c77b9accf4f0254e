package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
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

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// architecture Linux and Go share.
const userHZ = 100

// procCPU is pid's user+sys CPU time from /proc/PID/stat (utime + stime,
// every thread's, those that exited included), in USER_HZ ticks; 0 when
// the process is gone.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of the line
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(utime+stime) * time.Second / userHZ
}

// procsCPU sums procCPU over pids.
func procsCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		sum += procCPU(p)
	}
	return sum
}
