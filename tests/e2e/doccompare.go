package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// docMask is one kind of text that differs between two runs of the same
// commands on two clusters, and what it becomes.
type docMask struct {
	re   *regexp.Regexp
	with string
}

// podChars are the characters of the hashes in a Deployment's pod and
// ReplicaSet names (pod-template-hash, the pod's suffix): no vowels, no
// 0, 1, 3 or 8.
const podChars = "[bcdfghjklmnpqrstvwxz2456789]"

// docMasks are what CompareOutput ignores, and only that: times (dates,
// clocks, ages and durations), ids (generated names, sessions, UUIDs,
// digests, addresses), ports and tokens. Times first, so that a clock's
// colons are never taken for a port's.
var docMasks = []docMask{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<time>"},
	{regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d \d{4}`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`), "<time>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h|d)(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))*\b`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<id>"},
	{regexp.MustCompile(`\b0x[0-9a-f]+\b`), "<id>"},
	{regexp.MustCompile(`\b(sha256:)?[0-9a-f]{12,}\b`), "<id>"},
	{regexp.MustCompile(`-` + podChars + `{8,10}-` + podChars + `{5}\b`), "-<pod>"},
	{regexp.MustCompile(`-` + podChars + `{8,10}\b`), "-<rs>"},
	{regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b`), "<ip>"},
	{regexp.MustCompile(`((?:<ip>|localhost|\b[a-z][a-z0-9.-]*)):\d{1,5}\b`), "$1:<port>"},
	{regexp.MustCompile(`\b\d{7,}\b`), "<token>"}, // fencing tokens (epoch << 32 | counter)
}

var (
	docSpaces = regexp.MustCompile(`\s+`)
	docDashes = regexp.MustCompile(`[-+]*-{3,}[-+]*`)
)

// NormalizeOutput masks in a line what may differ between two runs
// (docMasks), and the alignment their widths change: runs of white space,
// and a table's rules (dashes and the pluses between them), count as one.
func NormalizeOutput(line string) string {
	for _, m := range docMasks {
		line = m.re.ReplaceAllString(line, m.with)
	}
	line = docDashes.ReplaceAllString(docSpaces.ReplaceAllString(line, " "), "---")
	return strings.TrimSpace(line)
}

// docEllipsis, alone on a line of the docs' output, stands for any number
// of lines (what a doc leaves out on purpose).
const docEllipsis = "..."

// CompareOutput reports whether got is what want shows, line by line after
// NormalizeOutput, a want line "..." matching any number of lines. Without
// an ellipsis the lines may come in another order (kubectl sorts its rows
// by generated names), and empty lines at either end do not count. The
// diff names the first line that differs.
func CompareOutput(want, got []string) (bool, string) {
	w, g := normalizeAll(want), normalizeAll(got)
	if matchLines(w, g) {
		return true, ""
	}
	if !slices.Contains(w, docEllipsis) && slices.Equal(sorted(w), sorted(g)) {
		return true, ""
	}
	i := 0
	for i < len(w) && i < len(g) && (w[i] == g[i] || w[i] == docEllipsis) {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at output line %d", i+1)
	if i < len(w) {
		fmt.Fprintf(&b, "\n  the doc:  %s", w[i])
	}
	if i < len(g) {
		fmt.Fprintf(&b, "\n  printed:  %s", g[i])
	}
	fmt.Fprintf(&b, "\n--- the doc shows:\n%s\n--- the command printed:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	return false, b.String()
}

func normalizeAll(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, NormalizeOutput(l))
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func sorted(lines []string) []string {
	s := slices.Clone(lines)
	slices.Sort(s)
	return s
}

// matchLines matches lines against a pattern where docEllipsis stands for
// any number of lines.
func matchLines(pattern, lines []string) bool {
	if len(pattern) == 0 {
		return len(lines) == 0
	}
	if pattern[0] == docEllipsis {
		for i := 0; i <= len(lines); i++ {
			if matchLines(pattern[1:], lines[i:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && pattern[0] == lines[0] && matchLines(pattern[1:], lines[1:])
}
