package e2e

import (
	"testing"
	"time"
)

// The median of an even count is the mean of the two middle values.
func TestStatsOfMedian(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		ds   []time.Duration
		want Stats
	}{
		{nil, Stats{}},
		{[]time.Duration{2 * s}, Stats{2 * s, 2 * s}},
		{[]time.Duration{3 * s, 1 * s}, Stats{2 * s, 3 * s}},
		{[]time.Duration{4 * s, 1 * s, 9 * s}, Stats{4 * s, 9 * s}},
		{[]time.Duration{8 * s, 2 * s, 6 * s, 4 * s}, Stats{5 * s, 8 * s}},
	} {
		if got := StatsOf(tc.ds); got != tc.want {
			t.Errorf("StatsOf(%v) = %v, want %v", tc.ds, got, tc.want)
		}
	}
}

// FromLeader lets the next leader answer before the watch saw it elected,
// once its node exists, and rejects a pod whose term had ended before the
// request was sent, one that was not next, or one with no node yet.
func TestFromLeader(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// a leads from 0, is cut off; its session expires and b's watch fires
	// first, the test's watch sees b at 10,000. c follows b at 20,000.
	leaders := []Change[string]{{at(0), "a"}, {at(10_000), "b"}, {at(20_000), "c"}}
	var births Births
	births.Add("a", at(-60_000))
	births.Add("b", at(-50_000))
	births.Add("c", at(15_000))
	for _, tc := range []struct {
		name       string
		pod        string
		sent, done int
		want       bool
	}{
		{"the leader", "a", 5_000, 5_010, true},
		{"the old leader, sent before the watch saw the next", "a", 9_900, 9_950, true},
		{"the next leader before the watch saw it", "b", 9_700, 9_720, true},
		{"the next leader long before the watch saw it", "b", 4_000, 4_010, true},
		{"the old leader, sent after its term had ended", "a", 10_300, 10_310, false},
		{"a stale answer long after", "a", 15_000, 15_010, false},
		{"two terms ahead", "c", 9_700, 9_720, false},
		{"the next leader before its node existed", "c", 14_000, 14_500, false},
		{"the next leader once its node existed", "c", 15_100, 15_120, true},
		{"a pod that never led", "d", 5_000, 5_010, false},
	} {
		a := Answer{Sent: at(tc.sent), Done: at(tc.done), Pod: tc.pod}
		if got := FromLeader(a, leaders, &births); got != tc.want {
			t.Errorf("%s: FromLeader(%s, sent %d ms) = %v, want %v", tc.name, tc.pod, tc.sent, got, tc.want)
		}
	}
	// A leaderless stretch is no leader: b after it is still the next.
	gap := []Change[string]{{at(0), "a"}, {at(10_000), ""}, {at(10_500), "b"}}
	if !FromLeader(Answer{Sent: at(9_000), Done: at(9_010), Pod: "b"}, gap, &births) {
		t.Error("b answering before a leaderless stretch it ended was rejected")
	}
	if FromLeader(Answer{Sent: at(10_400), Done: at(10_410), Pod: "a"}, gap, &births) {
		t.Error("a answering after its term had ended (the watch saw no leader) was accepted")
	}
}

// A crash's failures: only those with no HTTP answer sent before the
// crashed pod served again plus kube-proxy's second, or sent to no pod
// before its first answer since, are allowed; an HTTP error never is, and
// without a time it served again none is.
func TestCrashFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	back := at(1_200)
	answers := []Answer{
		{Sent: at(10), Pod: "a"}, // answered: neither
		{Sent: at(30), Err: "read: connection reset by peer", Connected: true},  // queued for the dead process
		{Sent: at(500), Err: "connect: connection refused"},                     // the port closed
		{Sent: at(2_100), Err: "connect: connection refused"},                   // within kube-proxy's second
		{Sent: at(2_300), Err: "connect: connection refused"},                   // after it
		{Sent: at(2_400), Err: "connect: no route to host", Untranslated: true}, // kube-proxy's rules not yet in place
		{Sent: at(2_500), Pod: "a"},                                             // they are now
		{Sent: at(2_600), Err: "connect: no route to host", Untranslated: true}, // after an answer: not the crash's
		{Sent: at(600), Err: "503 Service Unavailable", Connected: true, Responded: true},
	}
	dead := at(40) // the crashed process seen gone
	allowed, late := CrashFailures(answers, dead, back)
	if len(allowed) != 4 || len(late) != 3 {
		t.Errorf("%d allowed, %d late, want 4 and 3: %v / %v", len(allowed), len(late), allowed, late)
	}
	// The proxy flavour: no window, but what the process had accepted.
	allowed, late = CrashFailures(answers, dead, time.Time{})
	if len(allowed) != 1 || !allowed[0].Sent.Equal(at(30)) || len(late) != 6 {
		t.Errorf("no window: %d allowed, %d late, want the one in flight at the crash and 6: %v / %v", len(allowed), len(late), allowed, late)
	}
	// A reset after the process was gone: something else failed.
	if allowed, _ := CrashFailures(answers, at(20), time.Time{}); len(allowed) != 0 {
		t.Errorf("the process gone before any request: %d allowed, want none: %v", len(allowed), allowed)
	}
}
