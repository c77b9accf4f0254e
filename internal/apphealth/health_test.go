package apphealth

import "testing"

func TestTally(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail, succ int
		results    string // p: pass, f: fail
		want       string // the state after each result: u, h, x (unhealthy)
		resumed    bool   // starts healthy on trust (Config.Resumed)
	}{
		{"one pass is healthy", 3, 1, "p", "h", false},
		{"failures below the threshold keep healthy", 3, 1, "pffpfff", "hhhhhhx", false},
		{"unknown until the first pass", 3, 1, "ffp", "uuh", false},
		{"unknown becomes unhealthy at the threshold", 3, 1, "ffff", "uuxx", false},
		{"recovery needs the success run", 3, 2, "ppfffpfpp", "uhhhxxxxh", false},
		{"threshold one flips every time", 1, 1, "pfpf", "hxhx", false},
		{"resumed: a first pass keeps healthy", 3, 2, "pffp", "hhhh", true},
		{"resumed: a first failure is unhealthy at once", 3, 2, "fpp", "xxh", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tally{failureThreshold: tc.fail, successThreshold: tc.succ}
			prev := Unknown
			if tc.resumed {
				tl.state, tl.trial, prev = Healthy, true, Healthy
			}
			for i, r := range tc.results {
				changed := tl.add(r == 'p')
				got := map[State]byte{Unknown: 'u', Healthy: 'h', Unhealthy: 'x'}[tl.state]
				if got != tc.want[i] {
					t.Fatalf("after %q: %v, want %c", tc.results[:i+1], tl.state, tc.want[i])
				}
				if changed != (tl.state != prev) {
					t.Errorf("after %q: changed = %v", tc.results[:i+1], changed)
				}
				prev = tl.state
			}
		})
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Unknown: "unknown", Healthy: "healthy", Unhealthy: "unhealthy"} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", s, got, want)
		}
	}
}
