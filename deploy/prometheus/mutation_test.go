package prometheus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// equivalentMutants are the mutants of rules.yaml that no series can tell
// from the rule, each with why (at most two, issue 31). Each must survive:
// a listed mutant that the tests kill is an error, so the list stays true.
var equivalentMutants = map[string]string{}

// maxEquivalent bounds equivalentMutants.
const maxEquivalent = 2

// TestRulesHaveNoSurvivingMutants changes one threshold, window, `for` or
// comparison of rules.yaml at a time (mutants_test.go) and runs the unit
// tests of rules_test.yaml on each mutant: every mutant must fail them,
// but those listed in equivalentMutants.
func TestRulesHaveNoSurvivingMutants(t *testing.T) {
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(ruleTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := mutants(src)
	if err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(equivalentMutants) > maxEquivalent {
		t.Errorf("%d mutants listed as equivalent; at most %d may be", len(equivalentMutants), maxEquivalent)
	}
	survivors := runMutants(t, src, tests, ms)
	killed, generated := 0, map[string]bool{}
	var table strings.Builder
	for _, m := range ms {
		generated[m.String()] = true
		why, listed := equivalentMutants[m.String()]
		switch {
		case !survivors[m.String()] && listed:
			t.Errorf("%s is listed as equivalent but the tests kill it: remove it from equivalentMutants", m)
		case !survivors[m.String()]:
			killed++
			fmt.Fprintf(&table, "  killed      %s\n", m)
		case listed:
			fmt.Fprintf(&table, "  equivalent  %s (%s)\n", m, why)
		default:
			t.Errorf("%s passes every test of %s: add a case that tells it from the rule", m, ruleTestsFile)
			fmt.Fprintf(&table, "  SURVIVED    %s\n", m)
		}
	}
	for m := range equivalentMutants {
		if !generated[m] {
			t.Errorf("equivalentMutants lists %q, which is no mutant of %s", m, rulesFile)
		}
	}
	t.Logf("%d mutants of %s: %d killed, %d equivalent, %d survived\n%s", len(ms), rulesFile,
		killed, len(equivalentMutants), len(ms)-killed-len(equivalentMutants), table.String())
}

// TestMutationCheckFindsSurvivors shows the check failing on tests too weak
// to pin a rule: a single case of two leaders seen every 30 s tells
// ElectdNotOneLeader's `for: 1m` from neither 54s nor 66s.
func TestMutationCheckFindsSurvivors(t *testing.T) {
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	weak := []byte(`rule_files: [rules.yaml]
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: 'electd_is_leader{election="/e",instance="a"}'
        values: '1x10'
      - series: 'electd_is_leader{election="/e",instance="b"}'
        values: '0x2 1x8'
    promql_expr_test:
      - expr: ALERTS{alertname="ElectdNotOneLeader",alertstate="firing"}
        eval_time: 30s
        exp_samples: []
      - expr: ALERTS{alertname="ElectdNotOneLeader",alertstate="firing"}
        eval_time: 3m
        exp_samples:
          - labels: 'ALERTS{alertname="ElectdNotOneLeader",alertstate="firing",election="/e",severity="critical"}'
            value: 1
`)
	all, err := mutants(src)
	if err != nil {
		t.Fatal(err)
	}
	var ms []mutant
	for _, m := range all {
		if m.Alert == "ElectdNotOneLeader" {
			ms = append(ms, m)
		}
	}
	survivors := runMutants(t, src, weak, ms)
	for _, want := range []string{"ElectdNotOneLeader: for: 1m -> for: 54s", "ElectdNotOneLeader: for: 1m -> for: 1m6s"} {
		if !survivors[want] {
			t.Errorf("%s was killed by a test that cannot tell it apart; survivors: %v", want, survivors)
		}
	}
	if len(survivors) == len(ms) {
		t.Errorf("every mutant survived, even those the weak test tells apart (1 leader or 2): %v", survivors)
	}
}

// runMutants runs the unit tests tests (a rules_test.yaml) on the rules src
// and on every mutant in ms, and returns the mutants that pass them. Each
// mutant is run as its alert's rule alone, on the test groups that name its
// alert (each group tests one alert): nothing else can see the change. The
// unmutated rules must pass the same files, and every mutant must load.
func runMutants(t *testing.T, src, tests []byte, ms []mutant) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	byAlert, err := testsByAlert(tests)
	if err != nil {
		t.Fatalf("%s: %v", ruleTestsFile, err)
	}
	write := func(name string, b []byte) string {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	var ruleFiles []string
	var controls, testFiles []string
	mutantOf := map[string]mutant{}
	for alert, build := range byAlert {
		rules := write("rules_"+alert+".yaml", onlyAlert(t, src, alert))
		ruleFiles = append(ruleFiles, rules)
		controls = append(controls, write("control_"+alert+".yaml", build(rules)))
	}
	for i, m := range ms {
		build, ok := byAlert[m.Alert]
		if !ok {
			t.Fatalf("%s: no test names %s", ruleTestsFile, m.Alert)
		}
		rules := write(fmt.Sprintf("rules_%03d.yaml", i), onlyAlert(t, m.Src, m.Alert))
		ruleFiles = append(ruleFiles, rules)
		f := write(fmt.Sprintf("test_%03d.yaml", i), build(rules))
		testFiles = append(testFiles, f)
		mutantOf[f] = m
	}
	if len(ruleFiles) > 0 {
		if out, status := runPromtool(t, dir, append([]string{"check", "rules"}, ruleFiles...)...); status != 0 {
			t.Fatalf("a mutant does not load (a fault of the generator, mutants_test.go):\n%s", out)
		}
	}
	results := promtoolTests(t, dir, append(controls, testFiles...))
	for _, c := range controls {
		if !results[c] {
			t.Fatalf("the unmutated rules fail the tests of %s (see TestRuleUnitTests)", c)
		}
	}
	survivors := map[string]bool{}
	for _, f := range testFiles {
		if results[f] {
			survivors[mutantOf[f].String()] = true
		}
	}
	return survivors
}

// onlyAlert returns the rules file src with alert's rule alone.
func onlyAlert(t *testing.T, src []byte, alert string) []byte {
	t.Helper()
	var f map[string]any
	if err := yaml.Unmarshal(src, &f); err != nil {
		t.Fatal(err)
	}
	groups, _ := f["groups"].([]any)
	var keep []any
	for _, g := range groups {
		g, _ := g.(map[string]any)
		rules, _ := g["rules"].([]any)
		var mine []any
		for _, r := range rules {
			if r, _ := r.(map[string]any); r["alert"] == alert {
				mine = append(mine, r)
			}
		}
		if len(mine) > 0 {
			g["rules"] = mine
			keep = append(keep, g)
		}
	}
	if len(keep) == 0 {
		t.Fatalf("no rule %s", alert)
	}
	b, err := yaml.Marshal(map[string]any{"groups": keep})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testsByAlert splits a rules_test.yaml by alert: for each alert its test
// groups (each must test one alert), as a function that writes them as a
// test file of the given rules file.
func testsByAlert(tests []byte) (map[string]func(rules string) []byte, error) {
	var f map[string]any // decoded whole, so that aliases resolve
	if err := yaml.Unmarshal(tests, &f); err != nil {
		return nil, err
	}
	groups, _ := f["tests"].([]any)
	byAlert := map[string][]any{}
	for i, g := range groups {
		named := testedAlerts(g)
		if len(named) != 1 || wantAlerts[named[0]] == "" {
			return nil, fmt.Errorf("test %d tests %d alerts %v: each test must test one alert", i+1, len(named), named)
		}
		byAlert[named[0]] = append(byAlert[named[0]], g)
	}
	out := map[string]func(string) []byte{}
	for alert, mine := range byAlert {
		out[alert] = func(rules string) []byte {
			file := map[string]any{"rule_files": []string{rules}, "tests": mine}
			if ei, ok := f["evaluation_interval"]; ok {
				file["evaluation_interval"] = ei
			}
			b, err := yaml.Marshal(file)
			if err != nil {
				panic(err) // re-encoding what was just decoded
			}
			return b
		}
	}
	return out, nil
}

// alertnameRE finds the alerts a PromQL test selects from ALERTS.
var alertnameRE = regexp.MustCompile(`alertname="(\w+)"`)

// testedAlerts returns the alerts a test group checks: its alert_rule_test
// alertnames and the alertnames its promql_expr_test queries of ALERTS select.
func testedAlerts(g any) []string {
	m, _ := g.(map[string]any)
	set := map[string]bool{}
	art, _ := m["alert_rule_test"].([]any)
	for _, c := range art {
		if c, _ := c.(map[string]any); c != nil {
			set[fmt.Sprint(c["alertname"])] = true
		}
	}
	pet, _ := m["promql_expr_test"].([]any)
	for _, c := range pet {
		c, _ := c.(map[string]any)
		expr := fmt.Sprint(c["expr"])
		for _, sm := range alertnameRE.FindAllStringSubmatch(expr, -1) {
			set[sm[1]] = true
		}
		if strings.Contains(expr, "ALERTS") && !alertnameRE.MatchString(expr) {
			set["(every alert)"] = true
		}
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// promtoolTests runs `promtool test rules` on files in dir, in two
// processes at once, and returns which passed.
func promtoolTests(t *testing.T, dir string, files []string) map[string]bool {
	t.Helper()
	const procs = 2
	passed := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for p := 0; p < procs; p++ {
		var batch []string
		for i := p; i < len(files); i += procs {
			batch = append(batch, files[i])
		}
		if len(batch) == 0 {
			continue
		}
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			res, err := promtoolTestBatch(dir, batch)
			mu.Lock()
			defer mu.Unlock()
			errs[p] = err
			for f, ok := range res {
				passed[f] = ok
			}
		}(p)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return passed
}

// promtoolTestBatch runs one promtool on files and returns which passed:
// promtool writes "Unit Testing:  <file>" and then "SUCCESS" for each to
// stdout, and "FAILED:" with what failed to stderr. Every file must be
// tested, and the failures counted on stderr must be the files without
// SUCCESS.
func promtoolTestBatch(dir string, files []string) (map[string]bool, error) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		return nil, fmt.Errorf("%w: the mutation check needs promtool (make deps)", err)
	}
	cmd := exec.Command(bin, append([]string{"test", "rules"}, files...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if _, ok := runErr.(*exec.ExitError); runErr != nil && !ok {
		return nil, fmt.Errorf("promtool test rules: %w", runErr)
	}
	res := map[string]bool{}
	current := ""
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "Unit Testing:"); ok {
			current = strings.TrimSpace(f)
			res[current] = false
		} else if strings.TrimSpace(line) == "SUCCESS" && current != "" {
			res[current] = true
		}
	}
	failed := 0
	for _, f := range files {
		ok, tested := res[f]
		if !tested {
			return nil, fmt.Errorf("promtool test rules did not test %s (%v); stderr:\n%s", f, runErr, tail(stderr.String(), 20))
		}
		if !ok {
			failed++
		}
	}
	if n := strings.Count(stderr.String(), "  FAILED:\n"); n != failed || (failed > 0) != (runErr != nil) {
		return nil, fmt.Errorf("promtool test rules: %d files without SUCCESS, %d FAILED on stderr, exit %v", failed, n, runErr)
	}
	return res, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
