package apphealth

import "testing"

func TestTally(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail, succ int
		results    string // p: pass, f: fail
		want       string // the state after each result: u, h, x (unhealthy)
	}{
		{"one pass is healthy", 3, 1, "p", "h"},
		{"failures below the threshold keep healthy", 3, 1, "pffpfff", "hhhhhhx"},
		{"unknown until the first pass", 3, 1, "ffp", "uuh"},
		{"unknown becomes unhealthy at the threshold", 3, 1, "ffff", "uuxx"},
		{"recovery needs the success run", 3, 2, "ppfffpfpp", "uhhhxxxxh"},
		{"threshold one flips every time", 1, 1, "pfpf", "hxhx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tally{failureThreshold: tc.fail, successThreshold: tc.succ}
			prev := Unknown
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
