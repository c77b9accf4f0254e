package prometheus

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dashboardFile = repoRoot + "/deploy/grafana/electd.json"

// The part of Grafana's dashboard model the checks read. Grafana's model
// has many more fields, so unknown ones are allowed here.
type (
	dashboard struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []variable `json:"list"`
		} `json:"templating"`
		Panels []panel `json:"panels"`
	}
	variable struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Query      json.RawMessage `json:"query"`
		Definition string          `json:"definition"`
		AllValue   string          `json:"allValue"`
		Datasource *datasource     `json:"datasource"`
	}
	panel struct {
		ID         int         `json:"id"`
		Type       string      `json:"type"`
		Title      string      `json:"title"`
		Datasource *datasource `json:"datasource"`
		GridPos    struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID      string      `json:"refId"`
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"targets"`
		Panels []panel `json:"panels"` // a collapsed row's panels
	}
	datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
)

// query is one PromQL query of the dashboard, with where it comes from.
type query struct {
	where string
	expr  string // as written, with Grafana's variables
	// A query variable's name, and the label whose values it lists
	// (label_values(<expr>, <label>)); empty for a panel's query.
	variable, label string
}

// labelValuesRE matches a query variable's label_values(<selector>, <label>).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// loadDashboard decodes electd.json and returns it with every query in it:
// each panel target's expression, and each query variable's selector.
func loadDashboard(t *testing.T) (*dashboard, []query, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dec.More() {
		t.Fatalf("%s: more than one JSON value", dashboardFile)
	}
	vars := map[string]string{}
	var qs []query
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			vars[v.Name] = "prometheus"
		case "query":
			// A multi-value variable is interpolated as a regular
			// expression; "All" as its allValue.
			vars[v.Name] = v.AllValue
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("variable %s: query: %v", v.Name, err)
			}
			m := labelValuesRE.FindStringSubmatch(q.Query)
			if m == nil {
				t.Fatalf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, q.Query)
			}
			if v.Definition != q.Query {
				t.Errorf("variable %s: definition %q differs from its query %q", v.Name, v.Definition, q.Query)
			}
			qs = append(qs, query{where: "variable " + v.Name, expr: m[1], variable: v.Name, label: m[2]})
		default:
			t.Fatalf("variable %s: type %q is not one this test knows", v.Name, v.Type)
		}
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, query{where: "panel " + p.Title + " " + tg.RefID, expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return &d, qs, vars
}

// grafanaVarRE matches $name, ${name} and ${name:format}.
var grafanaVarRE = regexp.MustCompile(`\$\{([a-zA-Z_]\w*)(?::\w+)?\}|\$([a-zA-Z_]\w*)`)

// builtins are Grafana's interval variables, as a 15 s scrape would get them.
var builtins = map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "6h"}

// expand interpolates the dashboard's variables as Grafana does before it
// sends a query. Names that are no variable stay as they are, as in Grafana
// (label_replace's "$1" is one).
func expand(expr string, vars map[string]string) string {
	return grafanaVarRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := builtins[name]; ok {
			return v
		}
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// parseDashboard parses every query of the dashboard with Prometheus' PromQL
// parser, failing on any error, and returns their selectors.
func parseDashboard(t *testing.T) (*dashboard, map[query][]selector) {
	t.Helper()
	d, qs, vars := loadDashboard(t)
	var exprs []string
	for _, q := range qs {
		exprs = append(exprs, expand(q.expr, vars))
	}
	out := map[query][]selector{}
	for i, r := range parseExprs(t, exprs) {
		if r.Error != "" {
			t.Errorf("%s: %s\n  %s", qs[i].where, r.Error, r.Expr)
		}
		if len(r.Selectors) == 0 && r.Error == "" {
			t.Errorf("%s: selects no metric: %s", qs[i].where, r.Expr)
		}
		out[qs[i]] = r.Selectors
	}
	if t.Failed() {
		t.FailNow()
	}
	return d, out
}

// topics are what the dashboard must show (issue: who leads per pod, leader
// changes, lease remaining, session state, participants, renewal latency),
// each as the metric that shows it.
var topics = map[string]string{
	"who leads":       "electd_is_leader",
	"leader changes":  "electd_leadership_acquired_total",
	"lease remaining": "electd_lease_remaining_seconds",
	"session state":   "electd_zk_state",
	"participants":    "electd_participants",
	"renewal latency": "electd_lease_renewal_seconds_bucket",
}

func TestDashboardQueriesParse(t *testing.T) {
	d, sels := parseDashboard(t)
	if d.UID != "electd" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want uid electd, a title and a schema version", d.UID, d.Title, d.SchemaVersion)
	}
	queried := map[string]bool{}
	for q, ss := range sels {
		for _, s := range ss {
			queried[s.Metric] = true
			if !strings.HasPrefix(s.Metric, "electd_") {
				t.Errorf("%s selects %s, which is not electd's", q.where, s.Metric)
			}
			// Every panel follows the election picker; the picker's own
			// query lists every election.
			filtered := slices.ContainsFunc(s.Matchers, func(m matcher) bool { return m.Name == "election" && m.Type == "=~" })
			if !filtered && strings.HasPrefix(q.where, "panel ") {
				t.Errorf("%s: %s does not follow the election variable (election=~\"$election\")", q.where, s.Metric)
			}
		}
	}
	for topic, metric := range topics {
		if !queried[metric] {
			t.Errorf("no panel shows %s (%s)", topic, metric)
		}
	}
}

func TestDashboardLayout(t *testing.T) {
	d, _, vars := loadDashboard(t)
	if vars["datasource"] == "" || vars["election"] == "" {
		t.Errorf("variables %v: want a datasource variable and an election variable with an allValue", vars)
	}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	var all []panel
	for _, p := range d.Panels {
		all = append(append(all, p), p.Panels...)
	}
	for _, p := range all {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		// Every query goes to the data source the viewer picks.
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" {
				t.Errorf("panel %q: refId %q empty or used twice", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || *tg.Datasource != *p.Datasource {
				t.Errorf("panel %q %s: datasource %+v differs from the panel's", p.Title, tg.RefID, tg.Datasource)
			}
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap at (%d, %d)", other, p.Title, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}

// TestExpandInterpolatesLikeGrafana checks the interpolation the parse
// check depends on.
func TestExpandInterpolatesLikeGrafana(t *testing.T) {
	vars := map[string]string{"election": ".*", "datasource": "prometheus"}
	for in, want := range map[string]string{
		`rate(x{election=~"$election"}[$__rate_interval])`: `rate(x{election=~".*"}[1m])`,
		`x{election=~"${election}"}`:                       `x{election=~".*"}`,
		`x{election=~"${election:regex}"}`:                 `x{election=~".*"}`,
		`label_replace(x, "m", "$1", "pod", "(.+)")`:       `label_replace(x, "m", "$1", "pod", "(.+)")`,
		`x{a="$unknown"}`:                                  `x{a="$unknown"}`,
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
