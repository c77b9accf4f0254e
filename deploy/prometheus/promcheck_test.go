package prometheus

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/electd/electd/tools"
)

const repoRoot = "../.."

// The shapes tools/promcheck prints (see its doc comment).
type (
	rule struct {
		Group       string            `json:"group"`
		Alert       string            `json:"alert"`
		Record      string            `json:"record"`
		Expr        string            `json:"expr"`
		For         string            `json:"for"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Selectors   []selector        `json:"selectors"`
	}
	rulesResult struct {
		Rules  []rule   `json:"rules"`
		Errors []string `json:"errors"`
	}
	exprResult struct {
		Expr      string     `json:"expr"`
		Selectors []selector `json:"selectors"`
		Error     string     `json:"error"`
	}
	selector struct {
		Metric   string    `json:"metric"`
		Matchers []matcher `json:"matchers"`
	}
	matcher struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Value string `json:"value"`
	}
)

func (s selector) String() string {
	var ms []string
	for _, m := range s.Matchers {
		ms = append(ms, m.Name+m.Type+strconv.Quote(m.Value))
	}
	return s.Metric + "{" + strings.Join(ms, ", ") + "}"
}

var (
	promcheckOnce sync.Once
	promcheckBin  string
	promcheckErr  error
)

// promcheck runs tools/promcheck (built once per machine by tools.Build)
// with args and stdin, decodes its JSON into out and returns its exit status.
func promcheck(t *testing.T, stdin []byte, out any, args ...string) int {
	t.Helper()
	promcheckOnce.Do(func() {
		promcheckBin, promcheckErr = tools.Build(repoRoot, tools.Tool{Dir: "tools/promcheck", Package: ".", Name: "promcheck"}, t.Logf)
	})
	if promcheckErr != nil {
		t.Fatalf("building tools/promcheck: %v", promcheckErr)
	}
	cmd := exec.Command(promcheckBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("promcheck %v: %v", args, err)
	}
	if status == 2 {
		t.Fatalf("promcheck %v: usage error: %s", args, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("promcheck %v: %v; stdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return status
}

// parseExprs parses PromQL expressions with Prometheus' parser.
func parseExprs(t *testing.T, exprs []string) []exprResult {
	t.Helper()
	in, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	var out []exprResult
	promcheck(t, in, &out, "exprs")
	if len(out) != len(exprs) {
		t.Fatalf("promcheck exprs: %d results for %d expressions", len(out), len(exprs))
	}
	return out
}

// TestPromcheckRejectsBadPromQL shows that the parser the other tests rely on
// fails on what Prometheus would refuse, and names metrics literally.
func TestPromcheckRejectsBadPromQL(t *testing.T) {
	res := parseExprs(t, []string{
		`sum by (election) (rate(electd_leadership_acquired_total[5m])`, // unclosed
		`rate(electd_is_leader)`,  // range vector expected
		`{__name__=~"electd_.*"}`, // no literal name
		`sum by (election) (electd_zk_state{state="connected"}) > 0`,
	})
	for i, r := range res[:3] {
		if r.Error == "" {
			t.Errorf("expression %d parsed without error: %s", i, r.Expr)
		}
	}
	if r := res[3]; r.Error != "" || len(r.Selectors) != 1 || r.Selectors[0].Metric != "electd_zk_state" ||
		len(r.Selectors[0].Matchers) != 1 || r.Selectors[0].Matchers[0] != (matcher{"state", "=", "connected"}) {
		t.Errorf("good expression: %+v", r)
	}
	var rr rulesResult
	bad := t.TempDir() + "/bad.yaml"
	writeFile(t, bad, "groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: up\n        fro: 1m\n")
	if status := promcheck(t, nil, &rr, "rules", bad); status != 1 || len(rr.Errors) == 0 {
		t.Errorf("a rule with an unknown field: status %d, errors %q; want 1 and an error", status, rr.Errors)
	}
}
