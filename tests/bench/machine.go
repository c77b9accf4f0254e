package bench

import (
	"os"
	"runtime"
	"strings"

	"github.com/electd/electd/tests/harness/quote"
)

// Machine describes where the figures were taken.
type Machine struct {
	CPUs  int
	Model string
	MemGB float64
	Go    string
}

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if kb := procKB("/proc/meminfo", "MemTotal:"); kb > 0 {
		m.MemGB = float64(kb) / (1 << 20)
	}
	return m
}

// loadAvg is the 1, 5 and 15-minute load averages, as uptime shows them.
func loadAvg() string { return quote.LoadAvg("?") }

// procKB reads a "Key: N kB" line from a /proc file; 0 when absent.
func procKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			var n int64
			for _, c := range strings.TrimSpace(v) {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int64(c-'0')
			}
			return n
		}
	}
	return 0
}
