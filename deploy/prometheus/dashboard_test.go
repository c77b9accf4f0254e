package prometheus

import (
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/promtest"
)

const dashboardFile = repoRoot + "/deploy/grafana/electd.json"

// builtins are Grafana's interval variables, as a 15 s scrape would get them.
var builtins = map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "6h"}

// loadDashboard is promtest.LoadDashboard of electd.json; an error fails t.
func loadDashboard(t *testing.T) (*promtest.Dashboard, []promtest.Query, map[string]string) {
	t.Helper()
	d, qs, vars, err := promtest.LoadDashboard(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	return d, qs, vars
}

// expand is promtest.Expand with a 15 s scrape's builtins.
func expand(expr string, vars map[string]string) string { return promtest.Expand(expr, vars, builtins) }

// parseDashboard parses every query of the dashboard with Prometheus' PromQL
// parser, failing on any error, and returns their selectors.
func parseDashboard(t *testing.T) (*promtest.Dashboard, map[promtest.Query][]selector) {
	t.Helper()
	d, qs, vars := loadDashboard(t)
	var exprs []string
	for _, q := range qs {
		exprs = append(exprs, expand(q.Expr, vars))
	}
	out := map[promtest.Query][]selector{}
	for i, r := range parseExprs(t, exprs) {
		if r.Error != "" {
			t.Errorf("%s: %s\n  %s", qs[i].Where, r.Error, r.Expr)
		}
		if len(r.Selectors) == 0 && r.Error == "" {
			t.Errorf("%s: selects no metric: %s", qs[i].Where, r.Expr)
		}
		out[qs[i]] = r.Selectors
	}
	if t.Failed() {
		t.FailNow()
	}
	return d, out
}

// topics are what the dashboard must show (who leads per pod, leader
// changes, lease remaining, session state, participants, renewal latency;
// since issue 31 the election's work and the forwarding proxy), each as the
// metric that shows it.
var topics = map[string]string{
	"who leads":          "electd_is_leader",
	"leader changes":     "electd_leadership_acquired_total",
	"lease remaining":    "electd_lease_remaining_seconds",
	"session state":      "electd_zk_state",
	"participants":       "electd_participants",
	"renewal latency":    "electd_lease_renewal_seconds_bucket",
	"queue re-checks":    "electd_election_rechecks_total",
	"ZooKeeper requests": "electd_zk_requests_total",
	"goroutines":         "go_goroutines",
	"proxy requests":     "electd_proxy_requests_total",
	"held requests":      "electd_proxy_held",
	"forward latency":    "electd_proxy_upstream_seconds_bucket",
}

// joined are the metrics of the Go collector a panel may show: they carry
// no election label, so the panel must join them to an electd metric of the
// election (by the target's labels).
var joined = map[string]bool{"go_goroutines": true}

func TestDashboardQueriesParse(t *testing.T) {
	d, sels := parseDashboard(t)
	if d.UID != "electd" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want uid electd, a title and a schema version", d.UID, d.Title, d.SchemaVersion)
	}
	queried := map[string]bool{}
	for q, ss := range sels {
		// Every panel follows the election picker; the picker's own query
		// lists every election.
		follows := func(s selector) bool {
			return strings.HasPrefix(s.Metric, "electd_") &&
				slices.ContainsFunc(s.Matchers, func(m matcher) bool { return m.Name == "election" && m.Type == "=~" })
		}
		isPanel := strings.HasPrefix(q.Where, "panel ")
		for _, s := range ss {
			queried[s.Metric] = true
			switch {
			case joined[s.Metric] && isPanel:
				if !slices.ContainsFunc(ss, follows) {
					t.Errorf("%s: %s is not joined to an electd metric of the election", q.Where, s.Metric)
				}
			case !strings.HasPrefix(s.Metric, "electd_"):
				t.Errorf("%s selects %s, which is not electd's", q.Where, s.Metric)
			case isPanel && !follows(s):
				t.Errorf("%s: %s does not follow the election variable (election=~\"$election\")", q.Where, s.Metric)
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
	var all []promtest.Panel
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
