package doctest

import (
	"strconv"
	"strings"
	"testing"
)

// What two runs of the same commands print differently (ports, ids,
// times, tokens, and the alignment their widths change) compares equal.
func TestCompareIgnoresPortsIdsTimesTokens(t *testing.T) {
	for _, tc := range []struct{ doc, got string }{
		{`{"leader":{"id":"web-1","node":"_c_170fada8-17c6-4faa-8f58-4b4ceed1703b-latch-0000000000","session":"0x1000084b60d0000","fencing_token":7,"proxy":"127.0.0.1:4042"},"self":{"observed_at":"2026-11-23T20:45:55Z"}}`,
			`{"leader":{"id":"web-1","node":"_c_2f874ea8-ae6e-4d2c-a1c0-7e5566710b1a-latch-0000000003","session":"0x10000b0a1760000","fencing_token":23,"proxy":"127.0.0.1:24042"},"self":{"observed_at":"2026-11-26T06:00:10Z"}}`},
		{`{"is_leader":true,"reason":"leader","lease_remaining_ms":6261,"fencing_token":7}`,
			`{"is_leader":true,"reason":"leader","lease_remaining_ms":9870,"fencing_token":12}`},
		{"| 1 | web-1 * | 127.0.0.1:8081 | Leader   | connected |     7 | 5.89s |",
			"| 1 | web-1 * | 127.0.0.1:8081 | Leader   | connected |    10 | 9.9s |"},
		{"+---+---------+---------------+", "+---+---------+------------------+"},
		{"web-1 released leadership (fencing token 7)", "web-1 released leadership (fencing token 12)"},
		{"time=2026-11-23T21:55:36.429Z level=INFO msg=elected pid=26811 ran=3.881s", "time=2026-11-26T01:02:03.4Z level=INFO msg=elected pid=4242 ran=4.2s"},
		{"Date: Thu, 26 Nov 2026 06:00:11 GMT", "Date: Fri, 27 Nov 2026 16:10:01 GMT"},
		{`==> handoff: web-2 leads 38 ms after SIGTERM`, `==> handoff: web-2 leads 141 ms after SIGTERM`},
		{"electd_lease_remaining_seconds{election=\"/services/web\"} 5.671368745", "electd_lease_remaining_seconds{election=\"/services/web\"} 9.1"},
		{"electd: electd ec5bab0 (commit ec5bab0fd21a, go1.26.8)", "electd: electd 1a2b3c4 (commit 1a2b3c4d5e6f, go1.27.1)"},
		{"app-1: GET /orders/42 (leader web-1, fencing token 7)", "app-1: GET /orders/42 (leader web-1, fencing token 19)"},
		{`[{"seq":6,"kind":"revoked"},{"seq":7,"kind":"leader"}]`, `[{"seq":5,"kind":"revoked"},{"seq":6,"kind":"leader"}]`},
	} {
		if ok, diff := Compare([]string{tc.doc}, []string{tc.got}); !ok {
			t.Errorf("%s", diff)
		}
	}
}

// A doc that drifted from the code fails: every change that is not a
// port, an id, a time or a token is a difference, and says where.
func TestCompareFailsOnDrift(t *testing.T) {
	doc := []string{
		`{"error":"not the leader"}`,
		`409`,
		`{"leader":{"id":"web-1","fencing_token":7},"mode":"latch"}`,
	}
	for _, tc := range []struct {
		name string
		got  []string
		line string
	}{
		{"a message reworded", []string{`{"error":"not leader"}`, `409`, doc[2]}, "line 1"},
		{"another status", []string{doc[0], `403`, doc[2]}, "line 2"},
		{"another leader", []string{doc[0], doc[1], `{"leader":{"id":"web-2","fencing_token":7},"mode":"latch"}`}, "line 3"},
		{"a field renamed", []string{doc[0], doc[1], `{"leader":{"id":"web-1","fencing":7},"mode":"latch"}`}, "line 3"},
		{"a line more", append(append([]string{}, doc...), `{"extra":true}`), "line 4"},
		{"a line less", doc[:2], "line 3"},
		{"a count", []string{`electd_participants{election="/services/web"} 3`}, "line 1"},
	} {
		want := doc
		if tc.name == "a count" {
			want = []string{`electd_participants{election="/services/web"} 2`}
		}
		ok, diff := Compare(want, tc.got)
		if ok || !strings.Contains(diff, "first difference at output line "+strings.TrimPrefix(tc.line, "line ")) {
			t.Errorf("%s: ok %v, diff:\n%s\nwant a difference at %s", tc.name, ok, diff, tc.line)
		}
	}
}

// "..." alone on a line of the doc stands for any number of lines, and
// for nothing else.
func TestCompareEllipsis(t *testing.T) {
	doc := []string{"first", Ellipsis, "last"}
	for _, got := range [][]string{{"first", "last"}, {"first", "a", "b", "last"}} {
		if ok, diff := Compare(doc, got); !ok {
			t.Errorf("%v: %s", got, diff)
		}
	}
	for _, got := range [][]string{{"first"}, {"first", "a", "lastly"}, {"other", "last"}} {
		if ok, _ := Compare(doc, got); ok {
			t.Errorf("%v matched %v", got, doc)
		}
	}
}

// A transcript's commands and outputs, continued lines and here-documents
// included; a block without prompts is one script.
func TestSteps(t *testing.T) {
	text := "x\n```sh run\n$ cat > f <<EOF\n$ not a command\nEOF\n$ echo a \\\n  b\na b\n$ true\n```\n\n```sh run\nA=1\nexport B=2\n```\n"
	blocks, err := ParseBlocks("doc.md", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || !blocks[0].Has(MarkRun) || blocks[0].Lang != "sh" {
		t.Fatalf("blocks %+v", blocks)
	}
	steps := Steps(&blocks[0])
	if len(steps) != 3 || steps[0].Command != "cat > f <<EOF\n$ not a command\nEOF" || len(steps[0].Want) != 0 ||
		steps[1].Command != "echo a \\\n  b" || strings.Join(steps[1].Want, "|") != "a b" || steps[1].Line != 6 || steps[2].Command != "true" {
		t.Errorf("steps %+v", steps)
	}
	script := Steps(&blocks[1])
	if len(script) != 1 || !script[0].Script || script[0].Command != "A=1\nexport B=2" {
		t.Errorf("script %+v", script)
	}
	if _, err := ParseBlocks("doc.md", "```sh\n$ true\n"); err == nil {
		t.Error("an unclosed fence parsed")
	}
}

// Rewrite moves the docs' ports, ten at a time, and paths, and moves them
// back in what the commands print.
func TestRewrite(t *testing.T) {
	b := Block{Lines: []string{"$ curl localhost:4041/x --data-dir /tmp/electd/zk", "127.0.0.1:4042 clientPort=2181"}}
	rw, err := NewRewrite(Steps(&b), map[string]string{"/tmp/electd": "/t/1/electd"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := rw.Command(Steps(&b)[0].Command)
	p41, p42 := rw.ports[4041], rw.ports[4042]
	if p42 != p41+1 || strings.Contains(cmd, "4041") || !strings.Contains(cmd, "/t/1/electd/zk") || rw.ports[2181] == 0 {
		t.Fatalf("%q with ports %v", cmd, rw.ports)
	}
	if p41 < 1000 || p41 > 9999 {
		t.Errorf("4041 moved to %d: not four digits", p41)
	}
	out := rw.Output(strings.ReplaceAll("x 127.0.0.1:P in /t/1/electd/zk.log\n", "P", strconv.Itoa(p42)))
	if out != "x 127.0.0.1:4042 in /tmp/electd/zk.log\n" {
		t.Errorf("output rewritten back as %q", out)
	}
}
