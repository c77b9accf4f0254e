package quote

import (
	"os"
	"strings"
)

// LoadAvg is the first three fields of /proc/loadavg (1, 5 and 15 minutes),
// as a kept report's head gives the machine's load; unknown where unreadable.
func LoadAvg(unknown string) string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return unknown
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return unknown
	}
	return strings.Join(f[:3], " ")
}
