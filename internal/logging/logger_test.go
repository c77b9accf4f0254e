package logging

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// JSON logs print durations as the configuration writes them, not in
// nanoseconds (issue 12: "timeout":10000000000).
func TestLogDurationsAsText(t *testing.T) {
	var b bytes.Buffer
	New(&b, "info", "json").Info("x", "timeout", 10*time.Second)
	if got := b.String(); !strings.Contains(got, `"timeout":"10s"`) {
		t.Fatalf("log line %s, want \"timeout\":\"10s\"", got)
	}
}
