package e2e

import (
	"regexp"
	"strings"

	"github.com/electd/electd/tests/harness/doctest"
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
// digests, addresses), ports and tokens. Times before ports, so that a
// clock's colons are never taken for a port's.
var docMasks = []docMask{
	// UUIDs before times: a group of one may read as a duration (445d).
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<id>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<time>"},
	{regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d \d{4}`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`), "<time>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h|d)(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))*\b`), "<time>"},
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

// CompareOutput reports whether got is what want shows, line by line after
// NormalizeOutput, as tests/harness/doctest compares the pages' local commands (a
// want line "..." matching any number of lines), but without an ellipsis
// the lines may come in another order (kubectl sorts its rows by generated
// names), and empty lines at either end do not count.
func CompareOutput(want, got []string) (bool, string) {
	return doctest.Options{Normalize: NormalizeOutput, AnyOrder: true}.Compare(want, got)
}
