package invariant

import (
	"fmt"
	"slices"
	"strings"
)

// Timeline renders each participant's samples whose [Send, Recv] meets w as runs of equal
// answers, for failure reports: "leads(200 tok 7)x120[12.0ms..480.3ms]".
func Timeline(samples []Sample, w Interval) string {
	return timeline(within(samples, w.From, w.To))
}

// TimelineOf renders every sample as Timeline does.
func TimelineOf(samples []Sample) string { return timeline(samples) }

func timeline(samples []Sample) string {
	byWho := map[string][]Sample{}
	var names []string
	for _, s := range samples {
		if _, ok := byWho[s.Who]; !ok {
			names = append(names, s.Who)
		}
		byWho[s.Who] = append(byWho[s.Who], s)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, who := range names {
		ss := byWho[who]
		slices.SortStableFunc(ss, func(a, b Sample) int { return int(a.Send - b.Send) })
		fmt.Fprintf(&b, "  %s:", who)
		for i := 0; i < len(ss); {
			j := i
			for j+1 < len(ss) && same(ss[j+1], ss[i]) {
				j++
			}
			fmt.Fprintf(&b, " %s", label(ss[i]))
			fmt.Fprintf(&b, "x%d[%s..%s]", j-i+1, Ms(ss[i].Send), Ms(ss[j].Recv))
			i = j + 1
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func same(a, b Sample) bool {
	return a.Answered == b.Answered && a.Leader == b.Leader && a.Token == b.Token && a.State == b.State
}

func label(s Sample) string {
	switch {
	case !s.Answered:
		return "-"
	case s.Leader:
		return fmt.Sprintf("leads(%s tok %d)", s.State, s.Token)
	default:
		return s.State
	}
}
