package prometheus

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families parses a /metrics page as Prometheus' text format.
func families(t *testing.T, page []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// family finds the family a queried series name belongs to: the name itself,
// or a histogram's (or summary's) _bucket, _sum and _count series.
func family(fams map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if f, ok := fams[name]; ok {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		f, ok := fams[base]
		if !ok {
			return nil
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			return f
		case dto.MetricType_SUMMARY:
			if suffix != "_bucket" {
				return f
			}
		}
	}
	return nil
}

// checkSelector reports what in s the family does not have: a metric that
// is not there, or an = or =~ matcher that no series of it satisfies (a
// misspelt label or label value). != and !~ can match any series, so they
// are not checked.
func checkSelector(fams map[string]*dto.MetricFamily, s selector) string {
	f := family(fams, s.Metric)
	if f == nil {
		return s.Metric + " is not on electd's /metrics"
	}
	for _, m := range s.Matchers {
		var match func(string) bool
		switch m.Type {
		case "=":
			match = func(v string) bool { return v == m.Value }
		case "=~":
			re, err := regexp.Compile("^(?:" + m.Value + ")$") // PromQL anchors its regular expressions
			if err != nil {
				return m.Name + "=~" + m.Value + ": " + err.Error()
			}
			match = re.MatchString
		default:
			continue
		}
		found := slices.ContainsFunc(f.GetMetric(), func(series *dto.Metric) bool {
			v := ""
			for _, l := range series.GetLabel() {
				if l.GetName() == m.Name {
					v = l.GetValue()
				}
			}
			return match(v)
		})
		if !found {
			return s.Metric + ": no series has " + m.Name + m.Type + `"` + m.Value + `"`
		}
	}
	return ""
}

// TestQueriedMetricsExist runs a real electd and checks every selector of
// rules.yaml and of the Grafana dashboard against its /metrics.
func TestQueriedMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and electd; skipped with -short")
	}
	type use struct {
		where string
		sel   selector
	}
	var uses []use
	for _, r := range loadRules(t) {
		for _, s := range r.Selectors {
			uses = append(uses, use{rulesFile + " " + r.Alert, s})
		}
	}
	_, dash := parseDashboard(t)
	for q, ss := range dash {
		for _, s := range ss {
			uses = append(uses, use{"electd.json " + q.Where, s})
		}
	}
	slices.SortFunc(uses, func(a, b use) int { return strings.Compare(a.where+a.sel.String(), b.where+b.sel.String()) })

	fams := families(t, scrapeLeader(t))
	var names []string
	for n := range fams {
		if strings.HasPrefix(n, "electd_") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	t.Logf("electd's metrics: %s", strings.Join(names, " "))

	missing := map[string]bool{}
	for _, u := range uses {
		if msg := checkSelector(fams, u.sel); msg != "" {
			t.Errorf("%s: %s", u.where, msg)
			if family(fams, u.sel.Metric) == nil {
				missing[u.sel.Metric] = true
			}
		}
	}
	if len(missing) > 0 {
		t.Logf("queried but not exported: %v", missing)
	}
}

// TestCheckSelector shows that the check fails on what it must catch.
func TestCheckSelector(t *testing.T) {
	page := []byte(`# TYPE electd_zk_state gauge
electd_zk_state{election="/e",state="connected"} 1
electd_zk_state{election="/e",state="suspended"} 0
# TYPE electd_lease_renewal_seconds histogram
electd_lease_renewal_seconds_bucket{election="/e",le="+Inf"} 3
electd_lease_renewal_seconds_sum{election="/e"} 0.01
electd_lease_renewal_seconds_count{election="/e"} 3
`)
	fams := families(t, page)
	for _, c := range []struct {
		sel selector
		ok  bool
	}{
		{selector{Metric: "electd_zk_state", Matchers: []matcher{{"state", "=", "suspended"}}}, true},
		{selector{Metric: "electd_zk_state", Matchers: []matcher{{"election", "=~", ".*"}}}, true},
		{selector{Metric: "electd_zk_state", Matchers: []matcher{{"state", "=", "suspend"}}}, false},
		{selector{Metric: "electd_zk_state", Matchers: []matcher{{"sate", "=", "connected"}}}, false},
		{selector{Metric: "electd_zk_state", Matchers: []matcher{{"state", "=~", "conn"}}}, false}, // anchored
		{selector{Metric: "electd_lease_renewal_seconds_bucket"}, true},
		{selector{Metric: "electd_lease_renewal_seconds_count"}, true},
		{selector{Metric: "electd_zk_state_bucket"}, false},
		{selector{Metric: "electd_is_leader"}, false},
	} {
		if msg := checkSelector(fams, c.sel); (msg == "") != c.ok {
			t.Errorf("checkSelector(%v) = %q, want ok=%v", c.sel, msg, c.ok)
		}
	}
}
