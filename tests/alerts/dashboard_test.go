package alerts

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/electd/electd/tests/harness/promtest"
)

// liveBuiltins are Grafana's interval variables for a data source scraped
// every second: $__rate_interval is four scrape intervals.
var liveBuiltins = map[string]string{"__rate_interval": "4s", "__interval": "1s", "__range": "1h"}

// dashboard is electd.json's queries, with its election variable set to one
// election, as Grafana sends them.
type dashboard struct {
	path    string
	queries []promtest.Query
	vars    map[string]string
}

func loadDashboard(t *testing.T, path string) *dashboard {
	t.Helper()
	_, qs, vars, err := promtest.LoadDashboard(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	vars = maps.Clone(vars)
	for _, q := range qs {
		if q.Variable != "" {
			// A value picked from a multi-value variable is sent as a
			// regular expression, in a PromQL string.
			vars[q.Variable] = strings.ReplaceAll(regexp.QuoteMeta(path), `\`, `\\`)
		}
	}
	return &dashboard{path: path, queries: qs, vars: vars}
}

// exprs returns the queries refs (refIds, space-separated) of the panel
// titled panel, as sent.
func (d *dashboard) exprs(t *testing.T, panel, refs string) []string {
	t.Helper()
	var out []string
	for _, ref := range strings.Fields(refs) {
		i := slices.IndexFunc(d.queries, func(q promtest.Query) bool { return q.Panel == panel && q.RefID == ref })
		if i < 0 {
			t.Fatalf("%s has no panel %q with a query %s", dashboardFile, panel, ref)
		}
		out = append(out, promtest.Expand(d.queries[i].Expr, d.vars, liveBuiltins))
	}
	return out
}

// panelValue is what a panel must show at one moment: the series of its
// queries refs (one refId, or several separated by spaces), together.
type panelValue struct {
	panel, refs, want string
	ok                func(model.Vector) bool
}

// expect waits until each panel shows what it must now, and logs what it
// showed.
func (s *suite) expect(t *testing.T, d *dashboard, phase string, vs ...panelValue) {
	t.Helper()
	s.expectSince(t, d, phase, time.Time{}, vs...)
}

// expectSince is expect for what a panel showed at any time since from (zero:
// now): each series' highest value since then must be what ok accepts.
// Events that a rate shows for a few seconds (a reconnection) are checked so.
func (s *suite) expectSince(t *testing.T, d *dashboard, phase string, from time.Time, vs ...panelValue) {
	t.Helper()
	for _, v := range vs {
		exprs := d.exprs(t, v.panel, v.refs)
		until(t, patience, fmt.Sprintf("%s: panel %q %s shows %s", phase, v.panel, v.refs, v.want), func(ctx context.Context) (bool, string) {
			var all model.Vector
			for _, e := range exprs {
				vec, err := s.highest(ctx, e, from)
				if err != nil {
					return false, err.Error()
				}
				all = append(all, vec...)
			}
			return v.ok(all), oneLine(all)
		})
	}
}

// highest returns each series of expr with its value now (from zero), or
// its highest since from.
func (s *suite) highest(ctx context.Context, expr string, from time.Time) (model.Vector, error) {
	if from.IsZero() {
		return s.query(ctx, expr)
	}
	r, _, _, err := s.prom.API.QueryRange(ctx, expr, v1.Range{Start: from, End: time.Now(), Step: scrape})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	m, _ := r.(model.Matrix)
	var out model.Vector
	for _, series := range m {
		top := math.Inf(-1)
		for _, p := range series.Values {
			top = math.Max(top, float64(p.Value))
		}
		out = append(out, &model.Sample{Metric: series.Metric, Value: model.SampleValue(top)})
	}
	return out, nil
}

// oneLine writes a vector's samples on one line.
func oneLine(vec model.Vector) string {
	var out []string
	for _, s := range vec {
		out = append(out, fmt.Sprintf("%s %g", s.Metric, float64(s.Value)))
	}
	if len(out) == 0 {
		return "no series"
	}
	return strings.Join(out, ", ")
}

// Predicates on what a panel shows.

// each: n series, each value accepted by ok.
func each(n int, ok func(float64) bool) func(model.Vector) bool {
	return func(vec model.Vector) bool {
		return len(vec) == n && !slices.ContainsFunc(vec, func(s *model.Sample) bool { return !ok(float64(s.Value)) })
	}
}

// with: the series whose label has value exists, and ok accepts its value.
func with(label, value string, ok func(float64) bool) func(model.Vector) bool {
	return func(vec model.Vector) bool {
		return slices.ContainsFunc(vec, func(s *model.Sample) bool {
			return string(s.Metric[model.LabelName(label)]) == value && ok(float64(s.Value))
		})
	}
}

// total: the values add up to what ok accepts (and there is at least one).
func total(ok func(float64) bool) func(model.Vector) bool {
	return func(vec model.Vector) bool {
		var sum float64
		for _, s := range vec {
			sum += float64(s.Value)
		}
		return len(vec) > 0 && ok(sum)
	}
}

// members: n distinct values of the member label among the series whose
// value ok accepts.
func members(n int, ok func(float64) bool) func(model.Vector) bool {
	return func(vec model.Vector) bool {
		seen := map[model.LabelValue]bool{}
		for _, s := range vec {
			if ok(float64(s.Value)) {
				seen[s.Metric["member"]] = true
			}
		}
		return len(seen) == n
	}
}

func none(vec model.Vector) bool { return len(vec) == 0 }

func is(want float64) func(float64) bool   { return func(v float64) bool { return v == want } }
func above(min float64) func(float64) bool { return func(v float64) bool { return v > min } }
func not(bad float64) func(float64) bool   { return func(v float64) bool { return v != bad } }
func within(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v > lo && v <= hi }
}

// everyQueryAnswers runs every query of the dashboard through Prometheus'
// HTTP API as Grafana would: the variables' queries first, each of which
// must list the election, then every panel's query as a range query from
// begin until now. A query that returns no number fails t.
func (s *suite) everyQueryAnswers(t *testing.T, d *dashboard, begin time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	end := time.Now()
	for _, q := range d.queries {
		if q.Variable != "" {
			values, _, _, err := s.prom.API.LabelValues(ctx, q.Label, []string{q.Expr}, begin, end)
			if err != nil || !slices.Contains(values, model.LabelValue(d.path)) {
				t.Errorf("%s: label_values(%s, %s) = %v, %v; want %s among them", q.Where, q.Expr, q.Label, values, err, d.path)
			}
			continue
		}
		expr := promtest.Expand(q.Expr, d.vars, liveBuiltins)
		v, _, _, err := s.prom.API.QueryRange(ctx, expr, v1.Range{Start: begin, End: end, Step: scrape})
		if err != nil {
			t.Errorf("%s: %v\n  %s", q.Where, err, expr)
			continue
		}
		m, _ := v.(model.Matrix)
		points := 0
		for _, series := range m {
			for _, p := range series.Values {
				if !math.IsNaN(float64(p.Value)) {
					points++
				}
			}
		}
		if points == 0 {
			t.Errorf("%s returned no data from a real scrape:\n  %s", q.Where, expr)
			continue
		}
		t.Logf("%s: %d series, %d points", q.Where, len(m), points)
	}
}
