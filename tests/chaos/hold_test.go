package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/invariant"
)

const msec = time.Millisecond

// polls builds who's answers every 10 ms in [from, to) ms: claims with token 7 and the
// lease remaining a renewal at renewedAt ms (every 400 ms, a 2500 ms lease) left, or 503s.
func polls(who string, from, to int, leads bool) []invariant.Sample {
	var out []invariant.Sample
	for t := from; t < to; t += 10 {
		s := invariant.Sample{Who: who, Answered: true, Send: time.Duration(t) * msec, Recv: time.Duration(t+1) * msec, State: "503"}
		if leads {
			renewed := t / 400 * 400
			s.Leader, s.Token, s.State = true, 7, "200"
			s.Lease = time.Duration(2500-(t-renewed)) * msec
		}
		out = append(out, s)
	}
	return out
}

func join(parts ...[]invariant.Sample) []invariant.Sample {
	var out []invariant.Sample
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestJudgeHold(t *testing.T) {
	// The fault at 1000 ms: the last claim before it reports a lease to about 3100 ms.
	tests := []struct {
		name      string
		samples   []invariant.Sample
		o         outage
		wantShort bool
		want      []string // substrings of the problems, in order
	}{
		{name: "short outage, leader never blinks", samples: join(polls("a", 0, 9000, true), polls("b", 0, 9000, false)),
			o: outage{fault: 1000 * msec, back: 1500 * msec}, wantShort: true},
		{name: "short outage, one 503 is a change", samples: join(polls("a", 0, 1500, true), polls("a", 1500, 1510, false), polls("a", 1510, 9000, true)),
			o: outage{fault: 1000 * msec, back: 1500 * msec}, wantShort: true, want: []string{"stopped claiming"}},
		{name: "short outage, the observer stalls for 1.5 s: not a change", samples: join(polls("a", 0, 2000, true), polls("a", 3500, 9000, true), polls("b", 0, 2000, false), polls("b", 3500, 9000, false)),
			o: outage{fault: 1000 * msec, back: 1500 * msec}, wantShort: true},
		{name: "short outage, only the leader unseen for 1.5 s", samples: join(polls("a", 0, 2000, true), polls("a", 3500, 9000, true), polls("b", 0, 9000, false)),
			o: outage{fault: 1000 * msec, back: 1500 * msec}, wantShort: true, want: []string{"unseen as leader"}},
		{name: "long outage, the lease lapses and comes back", samples: join(polls("a", 0, 3000, true), polls("a", 3000, 7000, false), polls("a", 7000, 9000, true), polls("b", 0, 9000, false)),
			o: outage{fault: 1000 * msec, back: 6900 * msec, down: invariant.Interval{From: 1100 * msec, To: 6900 * msec}, hasDown: true}},
		{name: "long outage, another leads", samples: join(polls("a", 0, 3000, true), polls("b", 5000, 5010, true)),
			o: outage{fault: 1000 * msec, back: 6900 * msec}, want: []string{"another participant claimed"}},
		{name: "long outage, claims past the lease with no server", samples: join(polls("a", 0, 5000, true), polls("a", 5000, 9000, false)),
			o:    outage{fault: 1000 * msec, back: 6900 * msec, down: invariant.Interval{From: 1100 * msec, To: 6900 * msec}, hasDown: true},
			want: []string{"after its lease"}},
		{name: "outage ending within a round-trip of the lease's end may lapse", samples: join(polls("a", 0, 3000, true), polls("a", 3000, 3200, false), polls("a", 3200, 5000, true)),
			o: outage{fault: 1000 * msec, back: 2500 * msec}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeHold(tt.samples, "a", 7, 0, 9000*msec, tt.o)
			if v.short != tt.wantShort {
				t.Errorf("short = %v, want %v (%v)", v.short, tt.wantShort, v)
			}
			if len(v.problems) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", v.problems, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(v.problems[i], w) {
					t.Errorf("problem %q, want it to say %q", v.problems[i], w)
				}
			}
		})
	}
}
