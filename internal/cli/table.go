package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/electd/electd/internal/api"
)

// render draws the view as patronictl draws a cluster. The box has the
// election in its top border and one row per participant in queue order.
// Below it, the asked electd says what it knows of itself.
func (v *view) render(addr string) string {
	title := fmt.Sprintf("Election: %s (%s) at %s", clean(v.leader.Path), clean(v.leader.Mode), addr)
	self := clean(v.leader.Self.ID)
	var b strings.Builder
	if v.partsErr != nil {
		fmt.Fprintf(&b, "%s\nparticipants: %v\n", title, v.partsErr)
		v.footer(&b, self, false)
		return b.String()
	}
	rows := [][]string{{"#", "Member", "Advertise", "Role", "State", "Token", "Lease"}}
	listed := false
	dups := duplicateIDs(v.participants)
	for i, p := range v.participants {
		id := clean(p.ID)
		role, state, lease := "Follower", "joined", ""
		if p.IsLeader {
			role = "Leader"
		}
		if dups[p.ID] > 1 {
			id += " !"
		}
		// The asked electd by its session: ids need not be unique.
		if v.leader.Self.Session != "" && p.Session == v.leader.Self.Session {
			listed = true
			id += " *"
			state = clean(v.leader.Self.State)
			if v.health.IsLeader {
				lease = formatMS(v.health.LeaseRemainingMS)
			}
		}
		token := "-"
		if p.FencingToken != nil {
			token = strconv.FormatInt(*p.FencingToken, 10)
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), id, clean(p.Advertise), role, state, token, lease})
	}
	drawTable(&b, title, rows, map[int]bool{0: true, 5: true})
	v.footer(&b, self, listed)
	for _, p := range v.participants {
		if n := dups[p.ID]; n > 1 {
			fmt.Fprintf(&b, "! duplicate id %s: %d participants have it, so /leader is ambiguous: give each sidecar a unique id, e.g. the pod name\n",
				clean(p.ID), n)
			dups[p.ID] = 0 // once per id
		}
	}
	return b.String()
}

// duplicateIDs counts the participants carrying each id.
func duplicateIDs(ps []api.Participant) map[string]int {
	n := make(map[string]int, len(ps))
	for _, p := range ps {
		n[p.ID]++
	}
	return n
}

// footer says what the asked electd says of itself (GET /healthz/leader).
func (v *view) footer(b *strings.Builder, self string, listed bool) {
	reason := clean(v.health.Reason)
	switch {
	case listed:
		fmt.Fprintf(b, "* %s (asked): %s\n", self, reason)
	default:
		fmt.Fprintf(b, "%s (asked) is not in the queue: %s\n", self, reason)
	}
	if v.leader.Leader == nil {
		fmt.Fprintln(b, "no leader known")
	}
}

// drawTable writes rows in a box; the first row is the header. The top
// border carries title when it fits. right holds the right-aligned columns.
func drawTable(b *strings.Builder, title string, rows [][]string, right map[int]bool) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var border strings.Builder
	for _, w := range widths {
		border.WriteString("+" + strings.Repeat("-", w+2))
	}
	border.WriteString("+")
	line := border.String()
	if head := "+ " + title + " "; utf8.RuneCountInString(head) < len(line) {
		b.WriteString(head + line[utf8.RuneCountInString(head):] + "\n")
	} else {
		b.WriteString(title + "\n" + line + "\n")
	}
	for i, r := range rows {
		for j, cell := range r {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(cell))
			if right[j] && i > 0 {
				cell = pad + cell
			} else {
				cell += pad
			}
			b.WriteString("| " + cell + " ")
		}
		b.WriteString("|\n")
		if i == 0 {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString(line + "\n")
}

// formatMS prints milliseconds as seconds with two decimals: "6.26s".
func formatMS(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 2, 64) + "s"
}

// clean replaces control characters. What a participant published cannot
// then move the cursor or clear the screen of whoever runs status.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
