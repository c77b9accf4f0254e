package prometheus

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const rulesFile = "rules.yaml"

// loadRules parses rules.yaml with Prometheus' rule parser; any error fails
// the test at once.
func loadRules(t *testing.T) []rule {
	t.Helper()
	var res rulesResult
	if status := promcheck(t, nil, &res, "rules", rulesFile); status != 0 || len(res.Errors) > 0 {
		t.Fatalf("%s does not load in Prometheus:\n%s", rulesFile, strings.Join(res.Errors, "\n"))
	}
	if len(res.Rules) == 0 {
		t.Fatalf("%s holds no rules", rulesFile)
	}
	return res.Rules
}

// wantAlerts are the alerts of rules.yaml and their severities.
var wantAlerts = map[string]string{
	"ElectdNotOneLeader":       "critical",
	"ElectdLeadershipFlapping": "warning",
	"ElectdMisconfigured":      "warning",
	"ElectdLeaseRenewalSlow":   "warning",
	"ElectdElectionBusy":       "warning",
}

func TestRulesLoadInPrometheus(t *testing.T) {
	var got []string
	for _, r := range loadRules(t) {
		t.Logf("%s: %s (for %s) selects %v", r.Alert, r.Expr, r.For, r.Selectors)
		if r.Record != "" {
			t.Errorf("recording rule %s: this file holds alerts only", r.Record)
			continue
		}
		got = append(got, r.Alert)
		if sev, ok := wantAlerts[r.Alert]; !ok {
			t.Errorf("alert %s is not one this test knows; add it to wantAlerts", r.Alert)
		} else if r.Labels["severity"] != sev {
			t.Errorf("alert %s: severity %q, want %q", r.Alert, r.Labels["severity"], sev)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s has no %s annotation", r.Alert, a)
			}
		}
		if len(r.Selectors) == 0 {
			t.Errorf("alert %s selects no metric", r.Alert)
		}
		for _, s := range r.Selectors {
			if !strings.HasPrefix(s.Metric, "electd_") {
				t.Errorf("alert %s selects %s, which is not electd's", r.Alert, s.Metric)
			}
		}
	}
	for a := range wantAlerts {
		if !slices.Contains(got, a) {
			t.Errorf("%s has no alert %s", rulesFile, a)
		}
	}
	if len(got) != len(wantAlerts) {
		t.Errorf("%d alerts, want %d: %v", len(got), len(wantAlerts), got)
	}
}

// alertsDoc is the operator's page on the alerts; its ```promql block shows
// the expressions for writing rules by hand.
const alertsDoc = "docs/alerts.md"

// documentedAlerts returns the PromQL lines of alertsDoc's first ```promql
// block, comments dropped.
func documentedAlerts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, alertsDoc))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```promql\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no ```promql block", alertsDoc)
	}
	var exprs []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			exprs = append(exprs, line)
		}
	}
	return exprs
}

// The docs show the alerts an operator copies by hand; rules.yaml is the
// file they load. They must say the same thing.
func TestRulesHoldTheDocumentedAlerts(t *testing.T) {
	rules := loadRules(t)
	documented := documentedAlerts(t)
	if len(documented) == 0 {
		t.Fatalf("%s's alert block is empty", alertsDoc)
	}
	for _, e := range documented {
		found := slices.ContainsFunc(rules, func(r rule) bool { return normalize(r.Expr) == normalize(e) })
		if !found {
			t.Errorf("%s's alert %q is no rule of %s", alertsDoc, e, rulesFile)
		}
	}
}

// normalize collapses white space, so line breaks in YAML do not matter.
func normalize(expr string) string { return strings.Join(strings.Fields(expr), " ") }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
