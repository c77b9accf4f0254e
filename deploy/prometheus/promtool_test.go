package prometheus

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// ruleTestsFile holds the unit tests of rulesFile, in promtool's format.
const ruleTestsFile = "rules_test.yaml"

// promtool returns Debian's promtool (scripts/install-deps.sh installs the
// prometheus package) or any other in PATH. Without one the rule unit tests
// cannot run: that fails the test, except in -short mode, which runs without
// what make deps installs.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skipf("%v; skipped in -short mode", err)
		}
		t.Fatalf("%v: the alert rules' unit tests need promtool 2.42 or later (make deps, or apt-get install prometheus)", err)
	}
	return bin
}

// runPromtool runs promtool with args in dir ("": this directory) and
// returns its output and exit status.
func runPromtool(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("promtool %v: %v", args, err)
	}
	return out.String(), 0
}

// TestRuleUnitTests runs rules_test.yaml: every alert fires on the series
// that must fire it, after its `for`, and stays quiet through handoffs,
// scrape gaps, restarts and counter resets.
func TestRuleUnitTests(t *testing.T) {
	version, _ := runPromtool(t, "", "--version")
	t.Logf("%s", strings.SplitN(version, "\n", 2)[0])
	out, status := runPromtool(t, "", "test", "rules", ruleTestsFile)
	if status != 0 {
		t.Fatalf("promtool test rules %s: exit status %d\n%s", ruleTestsFile, status, out)
	}
	t.Logf("promtool test rules %s:\n%s", ruleTestsFile, out)
}

// TestPromtoolFailsAWrongExpectation shows that a case whose expectation the
// rules do not meet fails promtool (and so TestRuleUnitTests): one leader
// scraped for 5 minutes, and the zero-leader alert expected to fire.
func TestPromtoolFailsAWrongExpectation(t *testing.T) {
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "wrong_test.yaml")
	writeFile(t, wrong, `rule_files: [`+rules+`]
tests:
  - interval: 15s
    input_series:
      - series: 'electd_is_leader{election="/e",instance="a"}'
        values: '1x20'
    alert_rule_test:
      - alertname: ElectdNotOneLeader
        eval_time: 5m
        exp_alerts:
          - exp_labels: {election: /e, severity: critical}
`)
	out, status := runPromtool(t, "", "test", "rules", wrong)
	if status == 0 || !strings.Contains(out, "FAILED") {
		t.Errorf("promtool passed a wrong expectation (status %d):\n%s", status, out)
	}
}

// ruleTests is the part of promtool's test file format the coverage check
// reads.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name  string      `yaml:"name"`
		Cases []alertCase `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// alertCase is one alert_rule_test: the alerts expected to be firing at
// EvalTime (none: the alert must be quiet, though it may be pending).
type alertCase struct {
	Alert     string      `yaml:"alertname"`
	EvalTime  string      `yaml:"eval_time"`
	ExpAlerts []yaml.Node `yaml:"exp_alerts"`
}

// TestRuleUnitTestsCoverEveryAlert fails while an alert of rules.yaml lacks
// a case that fires it or a case that must stay quiet, or, for an alert with
// a `for`, a quiet check before the firing one in the same test (it has not
// fired before its `for`). Adding an alert therefore means adding its tests.
func TestRuleUnitTestsCoverEveryAlert(t *testing.T) {
	b, err := os.ReadFile(ruleTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rt ruleTests
	if err := yaml.Unmarshal(b, &rt); err != nil {
		t.Fatalf("%s: %v", ruleTestsFile, err)
	}
	if !slices.Equal(rt.RuleFiles, []string{rulesFile}) {
		t.Errorf("%s: rule_files %q, want [%s]", ruleTestsFile, rt.RuleFiles, rulesFile)
	}
	rules := loadRules(t)
	type coverage struct{ fires, quiet, waits int }
	cov := map[string]*coverage{}
	for _, r := range rules {
		cov[r.Alert] = &coverage{}
	}
	for _, g := range rt.Tests {
		quietAt := map[string][]time.Duration{}
		fireAt := map[string][]time.Duration{}
		for _, c := range g.Cases {
			cv, ok := cov[c.Alert]
			if !ok {
				t.Errorf("%s, test %q: alert %s is not in %s", ruleTestsFile, g.Name, c.Alert, rulesFile)
				continue
			}
			at, err := model.ParseDuration(c.EvalTime)
			if err != nil {
				t.Errorf("%s, test %q: eval_time %q: %v", ruleTestsFile, g.Name, c.EvalTime, err)
				continue
			}
			if len(c.ExpAlerts) == 0 {
				cv.quiet++
				quietAt[c.Alert] = append(quietAt[c.Alert], time.Duration(at))
			} else {
				cv.fires++
				fireAt[c.Alert] = append(fireAt[c.Alert], time.Duration(at))
			}
		}
		for alert, fires := range fireAt {
			if qs := quietAt[alert]; len(qs) > 0 && slices.Min(qs) < slices.Min(fires) {
				cov[alert].waits++
			}
		}
	}
	for _, r := range rules {
		cv := cov[r.Alert]
		t.Logf("%s (for %q): %d firing, %d quiet, %d tests with a quiet check before the firing one",
			r.Alert, r.For, cv.fires, cv.quiet, cv.waits)
		if cv.fires == 0 {
			t.Errorf("%s: no case fires %s; add one under tests:", ruleTestsFile, r.Alert)
		}
		if cv.quiet == 0 {
			t.Errorf("%s: no case expects %s to stay quiet; add one under tests:", ruleTestsFile, r.Alert)
		}
		if r.For != "" && r.For != "0s" && cv.waits == 0 {
			t.Errorf("%s: no test checks that %s has not fired before its for (%s): add a quiet eval_time before the firing one",
				ruleTestsFile, r.Alert, r.For)
		}
	}
}
