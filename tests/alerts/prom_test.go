package alerts

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/electd/electd/tests/harness/wait"
)

// pollEvery spaces the queries of until: Prometheus evaluates every
// second, so asking more often only loads the machine.
const pollEvery = 250 * time.Millisecond

// until waits, at most timeout, for cond to report done (the project's
// poller, tests/harness/wait, every pollEvery), and returns when it did. cond also
// says what it saw: logged once done, and when the wait fails.
func until(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) time.Time {
	t.Helper()
	var last string
	var next time.Time
	done := false
	defer func() {
		if !done {
			t.Logf("%s: last seen: %s", what, last)
		}
	}()
	wait.For(t, timeout, what, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(pollEvery)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ok, state := cond(ctx)
		last = state
		return ok
	})
	done = true
	t.Logf("%s: %s", what, last)
	return time.Now()
}

// query runs expr as an instant query.
func (s *suite) query(ctx context.Context, expr string) (model.Vector, error) {
	v, _, _, err := s.prom.API.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, v.Type())
	}
	return vec, nil
}

// scalar runs expr, which must return one sample, and returns its value.
func (s *suite) scalar(ctx context.Context, expr string) (float64, error) {
	vec, err := s.query(ctx, expr)
	if err != nil {
		return math.NaN(), err
	}
	if len(vec) != 1 {
		return math.NaN(), fmt.Errorf("%s: %v, want one sample", expr, vec)
	}
	return float64(vec[0].Value), nil
}

// alerts returns the active (pending or firing) alerts named alert of the
// election path.
func (s *suite) alerts(ctx context.Context, alert, path string) ([]v1.Alert, error) {
	res, err := s.prom.API.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []v1.Alert
	for _, a := range res.Alerts {
		if string(a.Labels["alertname"]) == alert && string(a.Labels["election"]) == path {
			out = append(out, a)
		}
	}
	return out, nil
}

func describe(as []v1.Alert) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s %s{instance=%q} %s since %s", a.Labels["alertname"], a.State,
			a.Labels["instance"], a.Value, a.ActiveAt.Format(time.TimeOnly)))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// quiet waits until Prometheus scrapes every sidecar of g, sees one of
// them lead, and has evaluated every rule since without error and without
// an alert for g's election.
func (s *suite) quiet(t *testing.T, g *group) {
	t.Helper()
	up := fmt.Sprintf(`count(up{job="electd", instance=~%q} == 1)`, anyOf(g.addrs()))
	leaders := fmt.Sprintf(`sum(electd_is_leader{election=%q})`, g.path)
	var seen time.Time
	until(t, patience, g.path+": every sidecar scraped, one leader, the rules evaluated since, no alert", func(ctx context.Context) (bool, string) {
		n, err1 := s.scalar(ctx, up)
		l, err2 := s.scalar(ctx, leaders)
		as, err3 := s.electionAlerts(ctx, g.path)
		last, failing, err4 := s.evaluated(ctx)
		if n == float64(len(g.procs)) && l == 1 && seen.IsZero() {
			seen = time.Now()
		}
		ok := !seen.IsZero() && last.After(seen) && len(as) == 0 && len(failing) == 0 && n == float64(len(g.procs)) && l == 1
		return ok, fmt.Sprintf("up %v of %d, leaders %v, alerts %s, rules evaluated at %s, failing %v (%v)",
			n, len(g.procs), l, describe(as), last.Format(time.StampMilli), failing, firstErr(err1, err2, err3, err4))
	})
}

// electionAlerts returns every active alert of the election path.
func (s *suite) electionAlerts(ctx context.Context, path string) ([]v1.Alert, error) {
	res, err := s.prom.API.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []v1.Alert
	for _, a := range res.Alerts {
		if string(a.Labels["election"]) == path {
			out = append(out, a)
		}
	}
	return out, nil
}

// evaluated returns when every rule had last been evaluated (the oldest of
// their last evaluations) and the rules whose evaluation failed.
func (s *suite) evaluated(ctx context.Context) (time.Time, []string, error) {
	res, err := s.prom.API.Rules(ctx, nil)
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
	if n != len(s.rules) {
		return time.Time{}, nil, fmt.Errorf("%d alerting rules loaded, want %d", n, len(s.rules))
	}
	return oldest, failed, nil
}

// fired waits until alert is firing for g's election, for each of
// instances (none: one alert without an instance label) and, with value,
// with value(v) true of each; began is when the fault began. It returns
// when the alert became pending (Prometheus' activeAt; zero for an alert
// without a `for`), and when every instance was seen firing.
func (s *suite) fired(t *testing.T, alert string, g *group, instances []string, began time.Time, value func(float64) bool) (pending, firing time.Time) {
	t.Helper()
	var as []v1.Alert
	firing = until(t, patience, fmt.Sprintf("%s firing for %s %v", alert, g.path, instances), func(ctx context.Context) (bool, string) {
		var err error
		if as, err = s.alerts(ctx, alert, g.path); err != nil {
			return false, err.Error()
		}
		return firingFor(as, instances, value), describe(as)
	})
	if s.rules[alert].FastFor == 0 {
		return time.Time{}, firing
	}
	for _, a := range as {
		if pending.IsZero() || a.ActiveAt.Before(pending) {
			pending = a.ActiveAt
		}
	}
	if pending.Before(began) {
		// Its condition held already (a slow renewal on a loaded machine,
		// say) and the fault kept it so.
		t.Logf("%s was pending %v before the fault", alert, began.Sub(pending).Round(time.Millisecond))
	}
	return pending, firing
}

// firingFor reports whether as holds a firing alert, with a value that
// value accepts, for every instance (or one without an instance label).
func firingFor(as []v1.Alert, instances []string, value func(float64) bool) bool {
	want := instances
	if len(want) == 0 {
		want = []string{""}
	}
	for _, inst := range want {
		ok := slices.ContainsFunc(as, func(a v1.Alert) bool {
			v, err := strconv.ParseFloat(a.Value, 64)
			return a.State == v1.AlertStateFiring && string(a.Labels["instance"]) == inst &&
				err == nil && (value == nil || value(v))
		})
		if !ok {
			return false
		}
	}
	return true
}

// resolved waits until no alert named alert is active for g's election.
func (s *suite) resolved(t *testing.T, alert string, g *group) time.Time {
	t.Helper()
	return until(t, patience, fmt.Sprintf("%s resolved for %s", alert, g.path), func(ctx context.Context) (bool, string) {
		as, err := s.alerts(ctx, alert, g.path)
		if err != nil {
			return false, err.Error()
		}
		return len(as) == 0, describe(as)
	})
}

// anyOf is a PromQL regular expression matching exactly the given strings.
func anyOf(ss []string) string {
	var qs []string
	for _, s := range ss {
		qs = append(qs, regexp.QuoteMeta(s))
	}
	return strings.Join(qs, "|")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// since is how long after t0 t1 was, or 0 when t1 is zero.
func since(t0, t1 time.Time) time.Duration {
	if t1.IsZero() {
		return 0
	}
	return t1.Sub(t0)
}
