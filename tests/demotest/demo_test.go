package demotest

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/demo"
	"github.com/electd/electd/tests/harness/doctest"
	"github.com/electd/electd/tests/harness/electdtest"
)

var (
	update     = flag.Bool("update", false, "write the demo's output into README.md's transcript where it differs (go test ./tests/demotest -update)")
	transcript = flag.String("transcript", "", "with -update: write this file, the output of make demo-ci, instead of the test's own run (make demo-ci > f; go test ./tests/demotest -update -transcript $PWD/f)")
)

// readme is where the transcript of `make demo-ci` is shown.
const readme = "../../README.md"

// demoTimeout bounds the whole demo; its own deadlines are far shorter, so this only
// stops a hung run.
const demoTimeout = 5 * time.Minute

// What a successful run prints; the demo returns an error on its own when a step fails,
// and these make sure it also said what it did.
var (
	oneLeaderRE = regexp.MustCompile(`(?m)^==> one leader: (web-\d) \(all 3 sidecars agree`)
	exitedRE    = regexp.MustCompile(`(?m)^    (web-\d) exited with status 0$`)
	tokenRE     = regexp.MustCompile(`(?m)^    fencing token: (\d+) -> (\d+) \(a storage write guarded by it now rejects (web-\d)\)$`)
	handoffRE   = regexp.MustCompile(`(?m)^==> handoff: (web-\d) leads \d+ ms after SIGTERM to (web-\d) \(by (web-\d)'s log: elected \d+ ms after it; the rest is polling\)$`)
	releaseRE   = regexp.MustCompile(`(?m)^==> release: (web-\d) answered 202; (web-\d) leads \d+ ms later \(by (web-\d)'s log: elected \d+ ms after it; the rest is polling\), (web-\d) re-queued as a follower$`)
	okRE        = regexp.MustCompile(`(?m)^demo: OK \(one leader, handoff on SIGTERM in \d+ ms, release in \d+ ms\)$`)
)

func TestDemo(t *testing.T) {
	bin := electdtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	if err := demo.Run(ctx, demo.Options{Bin: bin, Out: &out, Err: &out}); err != nil {
		t.Fatalf("demo: %v; output:\n%s", err, out.String())
	}
	output := out.String()
	t.Logf("demo passed in %v:\n%s", time.Since(start).Round(time.Millisecond), output)

	m := match(t, oneLeaderRE, output, "a single leader agreed by all three sidecars")
	first := m[1]
	if e := match(t, exitedRE, output, "the stopped leader's exit"); e[1] != first {
		t.Errorf("%s exited, want the first leader %s", e[1], first)
	}
	h := match(t, handoffRE, output, "the handoff")
	next := h[1]
	if h[2] != first || next == first {
		t.Errorf("handoff from %s to %s, want from the first leader %s to another", h[2], next, first)
	}
	if h[3] != next {
		t.Errorf("the handoff note quotes %s's log, want the new leader %s's", h[3], next)
	}
	tok := match(t, tokenRE, output, "the fencing tokens")
	if before, after := atoi(t, tok[1]), atoi(t, tok[2]); after <= before || tok[3] != first {
		t.Errorf("fencing token %d -> %d rejecting %s; want it to grow, rejecting %s", before, after, tok[3], first)
	}
	r := match(t, releaseRE, output, "the release")
	if r[1] != next || r[4] != next {
		t.Errorf("release asked %s (re-queued %s), want the leader after the handoff %s", r[1], r[4], next)
	}
	if r[2] == next || r[2] == first || r[3] != r[2] {
		t.Errorf("after the release %s leads (note from %s's log), want the one remaining follower", r[2], r[3])
	}
	match(t, okRE, output, "the final 'demo: OK' line")
	checkTranscript(t, output)
}

// version is the demo's line naming the binary: make demo-ci's is stamped
// with the commit, the test's with electdtest's version.
var version = regexp.MustCompile(`^( *electd: electd) \S+ \(commit \S+, go\S+\)$`)

// The README's transcript of `make demo-ci` is what the demo prints, but
// for ports, ids, times and tokens (doctest.Compare) and the binary's
// version; -update writes the output into it where it differs.
func checkTranscript(t *testing.T, output string) {
	t.Helper()
	blocks, err := doctest.ReadBlocks(readme)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		b := &blocks[i]
		if len(b.Lines) == 0 || b.Lines[0] != "$ make demo-ci" {
			continue
		}
		step := doctest.Steps(b)[0]
		if *update && *transcript != "" {
			data, err := os.ReadFile(*transcript)
			if err != nil {
				t.Fatal(err)
			}
			// What make prints of its own (the build, go run) comes first.
			output = string(data)
			if i := strings.Index(output, "\n==> "); i >= 0 {
				output = output[i:]
			}
		}
		got := doctest.Lines(strings.TrimLeft(output, "\n"))
		res := doctest.Result{Step: step, Got: got}
		if ok, diff := doctest.Compare(sameVersion(step.Want), sameVersion(got)); !ok {
			res.Diff = diff
		}
		if *update && *transcript != "" {
			res.Diff = "written from " + *transcript // make demo-ci's own, even where it matches
		}
		switch {
		case res.Diff == "":
		case *update:
			if err := doctest.Update([]doctest.Result{res}, nil); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: README's transcript of make demo-ci is not what the demo prints (go test ./tests/demotest -update writes it): %s", b.Where(), res.Diff)
		}
		return
	}
	t.Errorf("%s shows no transcript of make demo-ci (a block starting with \"$ make demo-ci\")", readme)
}

func sameVersion(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = version.ReplaceAllString(l, "$1 <version>")
	}
	return out
}

func match(t *testing.T, re *regexp.Regexp, output, what string) []string {
	t.Helper()
	m := re.FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("the output shows no %s (%s):\n%s", what, re, output)
	}
	return m
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
