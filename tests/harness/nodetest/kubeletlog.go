package nodetest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ComponentLog returns the lines of a component's log (kubelet,
// kube-proxy, ...) written in [from, to] that contain every one of
// substrs, by klog's own timestamps (local time, microseconds). It is how
// a test shows where a component spent its time.
func (n *Node) ComponentLog(component string, from, to time.Time, substrs ...string) []string {
	f, err := os.Open(filepath.Join(n.lay.logs, component+".log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		at, ok := KlogTime(line, from)
		if !ok || at.Before(from) || at.After(to) {
			continue
		}
		match := true
		for _, s := range substrs {
			if !strings.Contains(line, s) {
				match = false
				break
			}
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// KlogTime reads the time of a component's log line (klog's
// "I1126 17:40:45.123456 ..."), in the year of near.
func KlogTime(line string, near time.Time) (time.Time, bool) {
	if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
		return time.Time{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return time.Time{}, false
	}
	return at.AddDate(near.Year(), 0, 0), true
}
