// Command promcheck parses Prometheus rule files and PromQL expressions with
// Prometheus' own parsers and prints what it parsed as JSON, for the tests of
// deploy/prometheus and deploy/grafana. It is a module of its own so that the
// Prometheus server module, large as it is, never enters electd's go.mod; the
// tests build it with `go build` (cached by the Go build cache).
//
//	promcheck rules FILE    the file's groups and rules, each with the
//	                        selectors (metric name, label matchers) of its
//	                        expression
//	promcheck exprs         reads a JSON array of PromQL expressions on stdin
//	                        and prints, for each, its selectors or its error
//
// Exit status: 0 when everything parsed, 1 when something did not (the JSON
// on stdout says what), 2 for a usage error.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Rule is one parsed rule.
type Rule struct {
	Group       string            `json:"group"`
	Interval    string            `json:"interval,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Selectors   []Selector        `json:"selectors"`
}

// Selector is one vector selector of an expression: the metric it names and
// its label matchers other than the name.
type Selector struct {
	Metric   string    `json:"metric"`
	Matchers []Matcher `json:"matchers,omitempty"`
}

// Matcher is one label matcher; Type is =, !=, =~ or !~.
type Matcher struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// RulesResult is what `promcheck rules` prints.
type RulesResult struct {
	Rules  []Rule   `json:"rules"`
	Errors []string `json:"errors,omitempty"`
}

// ExprResult is one element of what `promcheck exprs` prints.
type ExprResult struct {
	Expr      string     `json:"expr"`
	Selectors []Selector `json:"selectors"`
	Error     string     `json:"error,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	p := parser.NewParser(parser.Options{})
	var out any
	var ok bool
	switch {
	case len(args) == 2 && args[0] == "rules":
		out, ok = rules(args[1], p, stderr)
	case len(args) == 1 && args[0] == "exprs":
		var in []string
		if err := json.NewDecoder(stdin).Decode(&in); err != nil {
			fmt.Fprintf(stderr, "promcheck exprs: stdin: want a JSON array of strings: %v\n", err)
			return 2
		}
		out, ok = exprs(in, p)
	default:
		fmt.Fprintln(stderr, "usage: promcheck rules FILE | promcheck exprs < exprs.json")
		return 2
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "promcheck: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// rules parses a rule file as Prometheus does when it loads one (unknown
// fields are errors; names must be valid in the classic character set, which
// every electd metric uses), then lists each rule's metric names.
func rules(file string, p parser.Parser, stderr io.Writer) (RulesResult, bool) {
	var res RulesResult
	log := slog.New(slog.NewTextHandler(stderr, nil))
	groups, errs := rulefmt.ParseFile(file, false, model.LegacyValidation, p, log)
	for _, err := range errs {
		res.Errors = append(res.Errors, err.Error())
	}
	if groups == nil {
		return res, false
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			rule := Rule{
				Group: g.Name, Interval: duration(g.Interval), Alert: r.Alert, Record: r.Record,
				Expr: r.Expr, For: duration(r.For), Labels: r.Labels, Annotations: r.Annotations,
			}
			sels, err := selectors(p, r.Expr)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s: group %s, rule %s%s: %v", file, g.Name, r.Alert, r.Record, err))
			}
			rule.Selectors = sels
			res.Rules = append(res.Rules, rule)
		}
	}
	return res, len(res.Errors) == 0
}

func exprs(in []string, p parser.Parser) ([]ExprResult, bool) {
	out := make([]ExprResult, 0, len(in))
	ok := true
	for _, e := range in {
		sels, err := selectors(p, e)
		r := ExprResult{Expr: e, Selectors: sels}
		if err != nil {
			r.Error, ok = err.Error(), false
		}
		out = append(out, r)
	}
	return out, ok
}

// selectors parses expr and returns its vector selectors in the order they
// appear. A selector without a literal metric name (a regular expression on
// __name__, say) is an error: nobody could check that what it selects exists.
func selectors(p parser.Parser, expr string) ([]Selector, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return []Selector{}, err
	}
	sels := []Selector{}
	var errs []error
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		sel := Selector{Metric: vs.Name}
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name == labels.MetricName && m.Type == labels.MatchEqual:
				sel.Metric = m.Value
			case m.Name != labels.MetricName:
				sel.Matchers = append(sel.Matchers, Matcher{Name: m.Name, Type: m.Type.String(), Value: m.Value})
			}
		}
		if sel.Metric == "" {
			errs = append(errs, fmt.Errorf("selector %s names no metric literally", vs.String()))
			return nil
		}
		sels = append(sels, sel)
		return nil
	})
	return sels, errors.Join(errs...)
}

func duration(d model.Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}
