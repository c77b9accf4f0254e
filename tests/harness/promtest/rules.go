package promtest

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Rule is one alerting rule as SpeedUp read it and as it wrote it.
type Rule struct {
	Alert                string
	Expr, FastExpr       string
	For, FastFor         time.Duration // 0 without a `for`
	Windows, FastWindows []time.Duration
}

// windowRE matches a range window, [5m], and only that: PromQL has no other
// bracketed duration outside strings, and the rules have no subqueries.
var windowRE = regexp.MustCompile(`\[([0-9][0-9a-z]*)\]`)

// unsupportedRE finds what SpeedUp would have to divide but does not: an
// offset, or a subquery's [range:step].
var unsupportedRE = regexp.MustCompile(`\boffset\b|\[[^\]]*:`)

// SpeedUp writes a copy of the rules file src to dst with every range
// window and every `for` divided by factor, so that a Prometheus evaluating
// it every second fires and resolves each alert in seconds rather than
// minutes: the windows, the `for`s and their ratios keep their meaning at
// that speed, the thresholds (per second, or counts, or quantiles) stay as
// they are. It returns each rule as read and as written. A rule with a
// subquery, an offset or a duration that does not divide into whole
// milliseconds is an error.
func SpeedUp(src, dst string, factor int) ([]Rule, error) {
	if factor < 1 {
		return nil, fmt.Errorf("promtest: speed-up factor %d", factor)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []map[string]any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	// divide returns the duration s, divided, and how Prometheus writes that.
	divide := func(s string) (time.Duration, time.Duration, string, error) {
		d, err := model.ParseDuration(s)
		if err != nil {
			return 0, 0, "", err
		}
		fast := time.Duration(d) / time.Duration(factor)
		if fast*time.Duration(factor) != time.Duration(d) || fast%time.Millisecond != 0 {
			return 0, 0, "", fmt.Errorf("%s does not divide by %d into whole milliseconds", s, factor)
		}
		return time.Duration(d), fast, model.Duration(fast).String(), nil
	}
	var out []Rule
	for _, g := range f.Groups {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			m, _ := r.(map[string]any)
			rule := Rule{Alert: fmt.Sprint(m["alert"]), Expr: fmt.Sprint(m["expr"])}
			var werr error
			rule.FastExpr = windowRE.ReplaceAllStringFunc(rule.Expr, func(w string) string {
				d, fast, s, err := divide(windowRE.FindStringSubmatch(w)[1])
				if err != nil {
					werr = err
					return w
				}
				rule.Windows, rule.FastWindows = append(rule.Windows, d), append(rule.FastWindows, fast)
				return "[" + s + "]"
			})
			if werr != nil {
				return nil, fmt.Errorf("%s: %s: %w", src, rule.Alert, werr)
			}
			if unsupportedRE.MatchString(rule.FastExpr) {
				return nil, fmt.Errorf("%s: %s: an offset or a subquery, which SpeedUp does not divide", src, rule.Alert)
			}
			m["expr"] = rule.FastExpr
			if v, ok := m["for"]; ok {
				d, fast, s, err := divide(fmt.Sprint(v))
				if err != nil {
					return nil, fmt.Errorf("%s: %s: for: %w", src, rule.Alert, err)
				}
				rule.For, rule.FastFor = d, fast
				m["for"] = s
			}
			out = append(out, rule)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rules", src)
	}
	nb, err := yaml.Marshal(&f)
	if err != nil {
		return nil, err
	}
	return out, os.WriteFile(dst, nb, 0o644)
}
