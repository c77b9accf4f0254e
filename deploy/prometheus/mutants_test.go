package prometheus

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// A mutant is rules.yaml with one threshold, window, `for` or comparison of
// one alert changed, as a reviewer would change it to see whether the unit
// tests notice (issue 31): a number halved, doubled, nudged by 10 % either
// way and, if it is an integer, moved by one; a range window or a `for`
// likewise (whole units of the duration as written, "5m" to "4m" and "6m");
// `>` to `>=` and back, `<` to `<=` and back.
type mutant struct {
	Alert string
	From  string // the token as written, e.g. "[5m]" or "for: 10m"
	To    string // what it became
	Src   []byte // the whole mutated rules file
}

func (m mutant) String() string { return m.Alert + ": " + m.From + " -> " + m.To }

// token is one mutable piece of a rule: its place in the file and its kind.
type token struct {
	alert      string
	off, end   int // byte offsets in the file
	text       string
	kind       tokenKind
	forSetting bool // the `for:` value rather than a window of the expression
}

type tokenKind int

const (
	number tokenKind = iota
	duration
	comparison
)

// mutants generates every mutant of the rules file src.
func mutants(src []byte) ([]mutant, error) {
	toks, err := mutableTokens(src)
	if err != nil {
		return nil, err
	}
	var out []mutant
	for _, tk := range toks {
		vs, err := variants(tk)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", tk.alert, tk.text, err)
		}
		for _, v := range vs {
			m := mutant{Alert: tk.alert, From: tk.show(tk.text), To: tk.show(v)}
			m.Src = slices.Concat(src[:tk.off], []byte(v), src[tk.end:])
			out = append(out, m)
		}
	}
	return out, nil
}

// show writes a token as the mutation table prints it.
func (tk token) show(s string) string {
	switch {
	case tk.forSetting:
		return "for: " + s
	case tk.kind == duration:
		return "[" + s + "]"
	}
	return s
}

// ruleFields is what mutableTokens reads of each rule.
type ruleFields struct {
	alert      string
	expr, forV *yaml.Node
	exprEnd    int // the line after the expression's last
}

// mutableTokens finds the numbers, windows and comparisons of each alert's
// expression and its `for`, by their byte offsets in src, so that a mutant
// differs from src in that one token and nowhere else.
func mutableTokens(src []byte) ([]token, error) {
	rules, err := ruleNodes(src)
	if err != nil {
		return nil, err
	}
	lineStart := lineOffsets(src)
	var toks []token
	for _, r := range rules {
		first := r.expr.Line // a plain or quoted scalar starts on its key's line
		if r.expr.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			first++ // a block scalar's text starts on the next line
		}
		from, to := lineStart[first-1], lineStart[r.exprEnd-1]
		for _, tk := range scanExpr(string(src[from:to])) {
			tk.alert, tk.off, tk.end = r.alert, tk.off+from, tk.end+from
			toks = append(toks, tk)
		}
		if r.forV != nil {
			off := lineStart[r.forV.Line-1] + r.forV.Column - 1
			if !bytes.HasPrefix(src[off:], []byte(r.forV.Value)) {
				return nil, fmt.Errorf("%s: `for` %q not found at line %d", r.alert, r.forV.Value, r.forV.Line)
			}
			toks = append(toks, token{alert: r.alert, off: off, end: off + len(r.forV.Value),
				text: r.forV.Value, kind: duration, forSetting: true})
		}
	}
	return toks, nil
}

// ruleNodes returns each alert of src with its expression's node and the
// line where the next key of the rule starts.
func ruleNodes(src []byte) ([]ruleFields, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var out []ruleFields
	for _, g := range seq(mapValue(doc.Content[0], "groups")) {
		for _, r := range seq(mapValue(g, "rules")) {
			f := ruleFields{}
			for i := 0; i+1 < len(r.Content); i += 2 {
				switch k, v := r.Content[i].Value, r.Content[i+1]; k {
				case "alert":
					f.alert = v.Value
				case "expr":
					f.expr = v
					f.exprEnd = len(lineOffsets(src)) // the file's end, unless a key follows
					if i+2 < len(r.Content) {
						f.exprEnd = r.Content[i+2].Line
					}
				case "for":
					f.forV = v
				}
			}
			if f.alert == "" || f.expr == nil {
				return nil, fmt.Errorf("line %d: a rule without alert or expr", r.Line)
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rules")
	}
	return out, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// lineOffsets returns the byte offset of each line's start, and one past
// the end of src as the start of the line after the last.
func lineOffsets(src []byte) []int {
	offs := []int{0}
	for i, b := range src {
		if b == '\n' {
			offs = append(offs, i+1)
		}
	}
	if offs[len(offs)-1] != len(src) {
		offs = append(offs, len(src))
	}
	return offs
}

// scanExpr finds the mutable tokens of PromQL text: number literals, range
// windows ([5m]) and the comparisons > >= < <=. Strings, label matchers and
// names (which may hold digits) are skipped.
func scanExpr(s string) []token {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '{':
			i = skipMatchers(s, i)
		case c == '_' || c == ':' || isLetter(c):
			for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '_' || s[i] == ':') {
				i++
			}
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return toks
			}
			toks = append(toks, token{off: i + 1, end: i + j, text: s[i+1 : i+j], kind: duration})
			i += j + 1
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j := i
			for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
				j++
			}
			toks = append(toks, token{off: i, end: j, text: s[i:j], kind: number})
			i = j
		case c == '>' || c == '<':
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			toks = append(toks, token{off: i, end: j, text: s[i:j], kind: comparison})
			i = j
		default:
			i++
		}
	}
	return toks
}

// skipMatchers returns the index after the label matchers that open at i.
func skipMatchers(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '"':
			for j++; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
		case '}':
			return j + 1
		}
	}
	return len(s)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// variants are a token's mutations, each once and none equal to the token.
func variants(tk token) ([]string, error) {
	var vs []string
	switch tk.kind {
	case comparison:
		flip := map[string]string{">": ">=", ">=": ">", "<": "<=", "<=": "<"}
		vs = []string{flip[tk.text]}
	case number:
		x, ok := new(big.Rat).SetString(tk.text)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		for _, f := range scaled(x, x.IsInt()) {
			vs = append(vs, decimal(f))
		}
	case duration:
		d, err := model.ParseDuration(tk.text)
		if err != nil {
			return nil, err
		}
		n, unit, single := splitDuration(tk.text)
		ms := new(big.Rat).SetInt64(time.Duration(d).Milliseconds())
		for _, f := range scaled(ms, false) { // by one: in the unit written, below
			if !f.IsInt() || f.Sign() <= 0 {
				continue // below a millisecond: not a duration Prometheus takes
			}
			vs = append(vs, model.Duration(time.Duration(f.Num().Int64())*time.Millisecond).String())
		}
		if single {
			for _, m := range []int64{n - 1, n + 1} {
				if m > 0 || tk.forSetting { // a zero window does not parse; a zero `for` is none
					vs = append(vs, fmt.Sprintf("%d%s", m, unit))
				}
			}
		}
	}
	var out []string
	seen := map[string]bool{tk.text: true}
	for _, v := range vs {
		if !seen[v] && !equalDurations(tk, v) {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// scaled returns x halved, doubled, x 0.9, x 1.1 and, with byOne, x-1 and
// x+1.
func scaled(x *big.Rat, byOne bool) []*big.Rat {
	mul := func(n, d int64) *big.Rat { return new(big.Rat).Mul(x, big.NewRat(n, d)) }
	out := []*big.Rat{mul(1, 2), mul(2, 1), mul(9, 10), mul(11, 10)}
	if byOne {
		one := big.NewRat(1, 1)
		out = append(out, new(big.Rat).Sub(x, one), new(big.Rat).Add(x, one))
	}
	return out
}

// decimal writes a rational with a finite decimal expansion as PromQL's
// number literal, without trailing zeros.
func decimal(x *big.Rat) string {
	s := x.FloatString(12)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// splitDuration splits a duration written in one unit ("10m") into its
// count and unit; single is false for "1m30s".
func splitDuration(s string) (n int64, unit string, single bool) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 || i == len(s) {
		return 0, "", false
	}
	for _, c := range s[i:] {
		if c < 'a' || c > 'z' {
			return 0, "", false
		}
	}
	if _, err := fmt.Sscan(s[:i], &n); err != nil {
		return 0, "", false
	}
	return n, s[i:], true
}

// equalDurations reports whether v is tk's duration written another way.
func equalDurations(tk token, v string) bool {
	if tk.kind != duration {
		return false
	}
	a, err1 := model.ParseDuration(tk.text)
	b, err2 := model.ParseDuration(v)
	return err1 == nil && err2 == nil && a == b
}

// TestMutantsOfARule checks the generator on two rules: every number,
// window, comparison and `for`, and nothing in names, label matchers or
// annotations.
func TestMutantsOfARule(t *testing.T) {
	src := []byte(`groups:
  - name: g
    rules:
      - alert: A
        expr: rate(x2_total{job="a1", le="0.5"}[5m]) > 2
        for: 10m
        annotations:
          summary: "more than 2 for 10m"
      - alert: B
        expr: >-
          histogram_quantile(0.99, rate(y_bucket[2m]))
            >= 0.1 * z
        labels: {severity: warning}
`)
	ms, err := mutants(src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.String())
		var doc any
		if err := yaml.Unmarshal(m.Src, &doc); err != nil {
			t.Errorf("%s: the mutant does not parse: %v", m, err)
		}
		if diff := len(m.Src) - len(src); !bytes.Contains(m.Src, []byte(strings.Trim(m.To, "[]"))) || diff != len(m.To)-len(m.From) {
			t.Errorf("%s: the mutant differs from the rules elsewhere too:\n%s", m, m.Src)
		}
	}
	want := []string{
		"A: [5m] -> [2m30s]", "A: [5m] -> [10m]", "A: [5m] -> [4m30s]", "A: [5m] -> [5m30s]", "A: [5m] -> [4m]", "A: [5m] -> [6m]",
		"A: > -> >=",
		"A: 2 -> 1", "A: 2 -> 4", "A: 2 -> 1.8", "A: 2 -> 2.2", "A: 2 -> 3",
		"A: for: 10m -> for: 5m", "A: for: 10m -> for: 20m", "A: for: 10m -> for: 9m", "A: for: 10m -> for: 11m",
		"B: 0.99 -> 0.495", "B: 0.99 -> 1.98", "B: 0.99 -> 0.891", "B: 0.99 -> 1.089",
		"B: [2m] -> [1m]", "B: [2m] -> [4m]", "B: [2m] -> [1m48s]", "B: [2m] -> [2m12s]", "B: [2m] -> [3m]",
		"B: >= -> >",
		"B: 0.1 -> 0.05", "B: 0.1 -> 0.2", "B: 0.1 -> 0.09", "B: 0.1 -> 0.11",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutants:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
