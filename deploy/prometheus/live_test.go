package prometheus

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/promtest"
	"github.com/electd/electd/tests/zktest"
)

const (
	// liveFor replaces every `for:` of rules.yaml in the live check: a few
	// evaluations at its 1 s interval, so ZooKeeper is down for seconds, not
	// for the minutes the real durations ask.
	liveFor = "3s"
	// livePath is the live check's election.
	livePath = "/services/promtest"
	// phaseTimeout bounds each wait of the live check; each takes seconds.
	phaseTimeout = time.Minute
)

// forLineRE matches a rule's `for:` line, the one thing the live check's
// copy of rules.yaml changes.
var forLineRE = regexp.MustCompile(`(?m)^(\s+for:[ \t]*)\S+[ \t]*$`)

// shortenFor writes a copy of rules.yaml with every `for:` set to liveFor
// and returns its path. It fails unless it replaced exactly one line per
// rule that has a `for`.
func shortenFor(t *testing.T, rules []rule) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	withFor := 0
	for _, r := range rules {
		if r.For != "" && r.For != "0s" {
			withFor++
		}
	}
	if n := len(forLineRE.FindAll(b, -1)); n != withFor || n == 0 {
		t.Fatalf("%s: %d `for:` lines for %d rules with a for", rulesFile, n, withFor)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, path, string(forLineRE.ReplaceAll(b, []byte("${1}"+liveFor))))
	return path
}

// TestRulesAndDashboardInPrometheus evaluates rules.yaml in a real
// Prometheus that scrapes three real electd sidecars on a real ZooKeeper
// every second: with a leader no alert is pending; with ZooKeeper stopped
// ElectdNotOneLeader becomes pending, then firing; with ZooKeeper back it
// resolves. Then every query of the Grafana dashboard must return data from
// that Prometheus.
func TestRulesAndDashboardInPrometheus(t *testing.T) {
	promtest.Binary(t) // a missing Prometheus fails before anything starts
	rules := loadRules(t)
	_, queries, vars := loadDashboard(t)
	liveRules := shortenFor(t, rules)

	zk := zktest.Start(t, zktest.Options{Servers: 1})
	var sidecars []*electdtest.Proc
	var targets []string
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("prom-%d", i)
		p := electdtest.Start(t, electdtest.Spec{Config: &electdtest.Config{
			ID: id, Servers: []string{zk.ConnectString()}, SessionTimeout: 10 * time.Second, Path: livePath,
		}})
		sidecars = append(sidecars, p)
		targets = append(targets, p.Addr)
	}
	eventually(t, "one of the three sidecars leads", func(ctx context.Context) (bool, string) {
		var leading []string
		for _, p := range sidecars {
			if code, _, err := p.Get(ctx, "/healthz/leader"); err == nil && code == http.StatusOK {
				leading = append(leading, p.Name)
			}
		}
		return len(leading) == 1, fmt.Sprintf("leading: %v", leading)
	})

	prom := promtest.Start(t, promtest.Options{Targets: targets, RuleFiles: []string{liveRules}, Interval: time.Second})
	begin := time.Now()
	leaders := fmt.Sprintf("sum(electd_is_leader{election=%q})", livePath)
	ups := fmt.Sprintf("count(up{job=%q} == 1)", promtest.Job)

	// A leader: once every rule has been evaluated, without error, on scrapes
	// of all three sidecars, no alert is pending or firing.
	var seen time.Time
	eventually(t, "three sidecars scraped, one leader, the rules evaluated since, no alert", func(ctx context.Context) (bool, string) {
		up, err1 := instant(ctx, prom, ups)
		n, err2 := instant(ctx, prom, leaders)
		alerts, err3 := prom.API.Alerts(ctx)
		last, failed, err4 := evaluated(ctx, prom)
		state := fmt.Sprintf("up %v, leaders %v, alerts %v, rules evaluated at %v, failing %v (%v)",
			up, n, alertStates(alerts.Alerts), last.Format(time.StampMilli), failed, firstErr(err1, err2, err3, err4))
		if up == 3 && n == 1 && seen.IsZero() {
			seen = time.Now()
		}
		return !seen.IsZero() && last.After(seen) && up == 3 && n == 1 && len(alerts.Alerts) == 0 && len(failed) == 0, state
	})

	// ZooKeeper down: the leader's lease lapses and nobody can lead.
	stopped := time.Now()
	if err := zk.Member(1).Stop(); err != nil {
		t.Fatal(err)
	}
	var pendingAt time.Time
	firingAt := eventually(t, "ElectdNotOneLeader pending, then firing with 0 leaders", func(ctx context.Context) (bool, string) {
		a, err := notOneLeader(ctx, prom)
		if a == nil {
			return false, fmt.Sprintf("not active (%v)", err)
		}
		if a.State == v1.AlertStatePending && pendingAt.IsZero() {
			pendingAt = time.Now()
		}
		v, _ := strconv.ParseFloat(a.Value, 64)
		return a.State == v1.AlertStateFiring && v == 0, fmt.Sprintf("%s, value %s, active since %v", a.State, a.Value, a.ActiveAt)
	})
	if pendingAt.IsZero() {
		// Polls can miss a short pending phase on a busy machine; Prometheus
		// records it in ALERTS.
		pendingAt = alertStateSeen(t, prom, "pending", stopped)
	}
	t.Logf("ZooKeeper stopped; ElectdNotOneLeader pending after %v, firing after %v",
		pendingAt.Sub(stopped).Round(time.Millisecond), firingAt.Sub(stopped).Round(time.Millisecond))

	// ZooKeeper back: a participant leads again and the alert resolves.
	restarted := time.Now()
	if err := zk.Member(1).Start(); err != nil {
		t.Fatal(err)
	}
	resolvedAt := eventually(t, "ElectdNotOneLeader resolved, one leader", func(ctx context.Context) (bool, string) {
		a, err1 := notOneLeader(ctx, prom)
		n, err2 := instant(ctx, prom, leaders)
		state := "resolved"
		if a != nil {
			state = string(a.State)
		}
		return a == nil && err1 == nil && n == 1, fmt.Sprintf("%s, leaders %v (%v)", state, n, firstErr(err1, err2))
	})
	t.Logf("ZooKeeper restarted; ElectdNotOneLeader resolved after %v", resolvedAt.Sub(restarted).Round(time.Millisecond))

	checkDashboard(t, prom, queries, vars, begin)
}

// eventually polls cond every 200 ms until it reports done and returns when
// it did, failing t with what and cond's last report after phaseTimeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (done bool, state string)) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		done, state := cond(ctx)
		if done {
			t.Logf("%s: %s", what, state)
			return time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v; last: %s", what, phaseTimeout, state)
		case <-tick.C:
		}
	}
}

// instant runs expr as an instant query that must return one sample.
func instant(ctx context.Context, prom *promtest.Server, expr string) (float64, error) {
	v, _, _, err := prom.API.Query(ctx, expr, time.Now())
	if err != nil {
		return math.NaN(), err
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		return math.NaN(), fmt.Errorf("%s: %v, want one sample", expr, v)
	}
	return float64(vec[0].Value), nil
}

// evaluated returns when every rule had last been evaluated (the oldest of
// their last evaluations) and the rules whose evaluation failed.
func evaluated(ctx context.Context, prom *promtest.Server) (time.Time, []string, error) {
	res, err := prom.API.Rules(ctx, nil)
	if err != nil {
		return time.Time{}, nil, err
	}
	var oldest time.Time
	var failed []string
	n := 0
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			a, ok := r.(v1.AlertingRule)
			if !ok {
				continue
			}
			n++
			if oldest.IsZero() || a.LastEvaluation.Before(oldest) {
				oldest = a.LastEvaluation
			}
			if a.Health != v1.RuleHealthGood {
				failed = append(failed, fmt.Sprintf("%s: %s %s", a.Name, a.Health, a.LastError))
			}
		}
	}
	if n == 0 {
		return time.Time{}, nil, fmt.Errorf("no alerting rule loaded")
	}
	return oldest, failed, nil
}

// notOneLeader returns the live election's ElectdNotOneLeader alert, nil
// while it is inactive.
func notOneLeader(ctx context.Context, prom *promtest.Server) (*v1.Alert, error) {
	res, err := prom.API.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range res.Alerts {
		if a.Labels["alertname"] == "ElectdNotOneLeader" && a.Labels["election"] == livePath {
			return &a, nil
		}
	}
	return nil, nil
}

func alertStates(as []v1.Alert) []string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s %s", a.Labels["alertname"], a.State))
	}
	return out
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// alertStateSeen returns the first time since `since` at which Prometheus'
// ALERTS series holds ElectdNotOneLeader in state, failing t if it never did.
func alertStateSeen(t *testing.T, prom *promtest.Server, state string, since time.Time) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	expr := fmt.Sprintf(`ALERTS{alertname="ElectdNotOneLeader", alertstate=%q, election=%q}`, state, livePath)
	v, _, _, err := prom.API.QueryRange(ctx, expr, v1.Range{Start: since, End: time.Now(), Step: time.Second})
	if m, ok := v.(model.Matrix); err == nil && ok && len(m) > 0 && len(m[0].Values) > 0 {
		return m[0].Values[0].Timestamp.Time()
	}
	t.Fatalf("ElectdNotOneLeader was never %s since %v: %v, %v", state, since, v, err)
	return time.Time{}
}

// checkDashboard runs every query of the dashboard through prom's HTTP API
// as Grafana would: the variables' queries first, each of which must list
// the live election, then every panel's query as a range query over the
// run with the election variable set to that value. A query that returns no
// number fails the test.
func checkDashboard(t *testing.T, prom *promtest.Server, queries []query, vars map[string]string, begin time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	end := time.Now()
	vars = maps.Clone(vars)
	for _, q := range queries {
		if q.variable == "" {
			continue
		}
		values, _, _, err := prom.API.LabelValues(ctx, q.label, []string{q.expr}, begin, end)
		if err != nil || !slices.Contains(values, model.LabelValue(livePath)) {
			t.Errorf("%s: label_values(%s, %s) = %v, %v; want %s among them", q.where, q.expr, q.label, values, err, livePath)
		}
		// A value picked from a multi-value variable is sent as a regular
		// expression, in a PromQL string.
		vars[q.variable] = strings.ReplaceAll(regexp.QuoteMeta(livePath), `\`, `\\`)
	}
	for _, q := range queries {
		if q.variable != "" {
			continue
		}
		expr := expand(q.expr, vars)
		v, _, _, err := prom.API.QueryRange(ctx, expr, v1.Range{Start: begin, End: end, Step: time.Second})
		if err != nil {
			t.Errorf("%s: %v\n  %s", q.where, err, expr)
			continue
		}
		m, _ := v.(model.Matrix)
		points := 0
		for _, s := range m {
			for _, p := range s.Values {
				if !math.IsNaN(float64(p.Value)) {
					points++
				}
			}
		}
		if points == 0 {
			t.Errorf("%s returned no data from a real scrape:\n  %s", q.where, expr)
			continue
		}
		t.Logf("%s: %d series, %d points", q.where, len(m), points)
	}
}
