package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

type logLine struct {
	Msg        string `json:"msg"`
	Remote     string `json:"remote"`
	Suppressed uint64 `json:"suppressed"`
}

func parseLines(t *testing.T, b *bytes.Buffer) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, ll)
	}
	b.Reset()
	return out
}

func TestThrottlePassesOnePerIntervalWithTheCount(t *testing.T) {
	var buf bytes.Buffer
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	log := slog.New(NewThrottle(slog.NewJSONHandler(&buf, nil), 10*time.Second, clk, true)).With("path", "/x")

	// A token-timing probe: thousands of refusals in a few seconds.
	for i := range 4735 {
		log.Warn("POST /leader/release refused", "remote", fmt.Sprint("10.0.0.1:", i))
		log.Warn("GET /participants failed")
		clk.Advance(time.Millisecond)
	}
	got := parseLines(t, &buf)
	if len(got) != 2 || got[0].Remote != "10.0.0.1:0" || got[0].Suppressed != 0 {
		t.Fatalf("within 4.7 s: %+v; want the first line of each message alone", got)
	}

	clk.Advance(10 * time.Second)
	log.Warn("POST /leader/release refused", "remote", "10.0.0.2:1")
	got = parseLines(t, &buf)
	if len(got) != 1 || got[0].Suppressed != 4734 || got[0].Remote != "10.0.0.2:1" {
		t.Fatalf("after the interval: %+v; want one line with suppressed=4734", got)
	}
	log.Warn("POST /leader/release refused")
	if got := parseLines(t, &buf); len(got) != 0 {
		t.Fatalf("right after: %+v, want nothing", got)
	}
}

func TestThrottleUnkeyedSharesOneBudget(t *testing.T) {
	var buf bytes.Buffer
	clk := clocktest.NewFake(time.Unix(0, 0))
	log := slog.New(NewThrottle(slog.NewJSONHandler(&buf, nil), time.Second, clk, false))
	for i := range 100 {
		log.Warn(fmt.Sprintf("http: TLS handshake error from 10.0.0.%d:1: EOF", i))
	}
	clk.Advance(time.Second)
	log.Warn("http: TLS handshake error from 10.0.0.200:1: EOF")
	got := parseLines(t, &buf)
	if len(got) != 2 || got[1].Suppressed != 99 {
		t.Fatalf("%+v; want 2 lines, the second with suppressed=99", got)
	}
}

func TestThrottleBoundsItsKeys(t *testing.T) {
	clk := clocktest.NewFake(time.Unix(0, 0))
	th := NewThrottle(slog.DiscardHandler, time.Second, clk, true)
	log := slog.New(th)
	for i := range 10 * maxThrottleKeys {
		log.Warn(fmt.Sprint("message ", i))
	}
	if n := len(th.s.byMsg); n > maxThrottleKeys+1 {
		t.Errorf("%d budgets kept, want at most %d", n, maxThrottleKeys+1)
	}
}
