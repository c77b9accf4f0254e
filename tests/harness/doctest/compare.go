package doctest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Ellipsis, alone on a line of a block's output, stands for any number of
// lines: what a doc leaves out on purpose (a long log).
const Ellipsis = "..."

// mask is one kind of text that differs between two runs of the same
// commands, and what it is replaced with.
type mask struct {
	re   *regexp.Regexp
	with string
}

// masks are what Normalize ignores, and only that: ports, ids, times,
// tokens and /history's sequence numbers (docs/development.md, "Commands in
// the docs"). Times first, so
// that a clock's colons are never taken for a port's.
var masks = []mask{
	// Times: timestamps, clocks, measured durations.
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<time>"},
	{regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`), "<time>"},
	{regexp.MustCompile(`("\w+_(ms|seconds)"):-?[0-9.e+-]+`), "$1:<time>"},
	{regexp.MustCompile(`^(electd_\w*seconds\w*(\{[^}]*\})?) \S+$`), "$1 <time>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))*\b`), "<time>"},
	{regexp.MustCompile(`\b\d+ ms\b`), "<time>"},
	// Ids: sessions, nodes, processes, builds, random tokens.
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<id>"}, // _c_<uuid>: no \b after _
	{regexp.MustCompile(`\b0x[0-9a-f]+\b`), "<id>"},
	{regexp.MustCompile(`(/tmp/[A-Za-z._-]+-)\d+`), "$1<id>"}, // a directory of os.MkdirTemp
	{regexp.MustCompile(`-\d{10}\b`), "-<id>"},
	{regexp.MustCompile(`\b(pid[ =]?|kill (-[A-Z]+ )?)\d+\b`), "$1<id>"},
	{regexp.MustCompile(`\bgo1\.\d+(\.\d+)?\b`), "go<id>"},
	{regexp.MustCompile(`\b[0-9a-f]*[a-f][0-9a-f]*\b`), "<hex>"}, // cut to 7 or more below
	// Ports.
	{regexp.MustCompile(`((?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]*\]|\b[a-z][a-z0-9.-]*)):\d{1,5}\b`), "$1:<port>"},
	// Fencing tokens.
	{regexp.MustCompile(`("fencing_token"):\d+`), "$1:<token>"},
	{regexp.MustCompile(`(?i)(fencing[_ -]token:? ?=?)\d+( -> \d+)?`), "$1<token>"},
	{regexp.MustCompile(`^(electd_fencing_token(\{[^}]*\})?) \d+$`), "$1 <token>"},
	{regexp.MustCompile(`\| *\d+ \| *(<time>)? *\|$`), "| <token> | $1 |"}, // electd status: Token, Lease
	// /history's sequence numbers: how many transitions a participant
	// records while it starts varies (one seen leader before its own join,
	// or two), so the same later entries carry other numbers.
	{regexp.MustCompile(`("seq"):\d+`), "$1:<seq>"},
}

var (
	spaces = regexp.MustCompile(` +`)
	dashes = regexp.MustCompile(`-{3,}`)
)

// Normalize masks in a line what may differ between two runs (masks), and
// the alignment that their widths change: runs of spaces, and of dashes
// (a table's rules), count as one.
func Normalize(line string) string {
	for _, m := range masks {
		if m.with == "<hex>" {
			line = m.re.ReplaceAllStringFunc(line, func(h string) string {
				if len(h) < 7 {
					return h // a word (cafe, dead) or a short number
				}
				return "<id>"
			})
			continue
		}
		line = m.re.ReplaceAllString(line, m.with)
	}
	line = dashes.ReplaceAllString(spaces.ReplaceAllString(line, " "), "---")
	return strings.TrimRight(line, " ")
}

// Compare reports whether got is what want shows: line by line after
// Normalize, a want line "..." matching any number of got lines. A
// mismatch's diff shows both, with the first line that differs.
func Compare(want, got []string) (ok bool, diff string) {
	return Options{}.Compare(want, got)
}

// Options say how a block's output is read, where the pages' local
// commands (the defaults) are not what is compared: tests/e2e compares the
// node's commands, whose masks and row order differ.
type Options struct {
	// Normalize masks what may differ between two runs in a line; default
	// Normalize.
	Normalize func(string) string
	// AnyOrder: without an Ellipsis the lines may come in another order
	// (kubectl sorts its rows by generated names), and empty lines at
	// either end do not count.
	AnyOrder bool
}

// Compare is Compare as o says.
func (o Options) Compare(want, got []string) (ok bool, diff string) {
	w, g := o.normalized(want), o.normalized(got)
	if match(w, g) {
		return true, ""
	}
	if o.AnyOrder && !slices.Contains(w, Ellipsis) && slices.Equal(sortedCopy(w), sortedCopy(g)) {
		return true, ""
	}
	i := 0
	for i < len(w) && i < len(g) && (w[i] == g[i] || w[i] == Ellipsis) {
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

func (o Options) normalized(lines []string) []string {
	norm := o.Normalize
	if norm == nil {
		norm = Normalize
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = norm(l)
	}
	if o.AnyOrder {
		for len(out) > 0 && out[0] == "" {
			out = out[1:]
		}
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
	}
	return out
}

func sortedCopy(lines []string) []string {
	s := slices.Clone(lines)
	slices.Sort(s)
	return s
}

// match matches lines against a pattern of lines where Ellipsis stands
// for any number of lines.
func match(pattern, lines []string) bool {
	if len(pattern) == 0 {
		return len(lines) == 0
	}
	if pattern[0] == Ellipsis {
		for i := 0; i <= len(lines); i++ {
			if match(pattern[1:], lines[i:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && pattern[0] == lines[0] && match(pattern[1:], lines[1:])
}
