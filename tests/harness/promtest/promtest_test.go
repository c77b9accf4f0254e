package promtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/electd/electd/tests/harness/wait"
)

// TestServerEvaluatesRulesAndStops starts a server with one rule that always
// fires, reads the alert and a query through the HTTP API, and stops it.
func TestServerEvaluatesRulesAndStops(t *testing.T) {
	rules := writeFile(t, t.TempDir(), "rules.yaml", "groups:\n  - name: t\n    rules:\n      - alert: Always\n        expr: vector(1)\n")
	s := Start(t, Options{RuleFiles: []string{rules}})
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") {
		t.Errorf("listens on %s, want loopback", s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.Until(ctx, 30*time.Second, 100*time.Millisecond, func() error {
		res, err := s.API.Alerts(ctx)
		if err == nil && len(res.Alerts) == 1 && res.Alerts[0].Labels["alertname"] == "Always" && res.Alerts[0].State == "firing" {
			return nil
		}
		return fmt.Errorf("%+v, %v", res, err)
	})
	if err != nil {
		t.Fatalf("the alert did not fire: %v", err)
	}
	v, _, _, err := s.API.Query(ctx, "1 + 1", time.Now())
	if sc, ok := v.(*model.Scalar); err != nil || !ok || sc.Value != 2 {
		t.Errorf("query 1 + 1: %v, %v", v, err)
	}
	if err := s.Stop(); err != nil {
		t.Error(err)
	}
	if s.Alive() {
		t.Error("prometheus runs after Stop")
	}
}

// TestSetTargetsScrapesAndForgets adds a target while the server runs, sees
// it scraped, and removes it.
func TestSetTargetsScrapesAndForgets(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# TYPE promtest_answer gauge\npromtest_answer 42\n")
	}))
	defer target.Close()
	addr := strings.TrimPrefix(target.URL, "http://")
	s := Start(t, Options{})
	if err := s.SetTargets("one", []string{addr}); err != nil {
		t.Fatal(err)
	}
	query := fmt.Sprintf(`promtest_answer{job=%q, instance=%q}`, Job, addr)
	wait.For(t, time.Minute, "the added target scraped", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, _, _, err := s.API.Query(ctx, query, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1 && vec[0].Value == 42
	})
	if err := s.SetTargets("one", nil); err != nil {
		t.Fatal(err)
	}
	wait.For(t, time.Minute, "the removed target dropped", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := s.API.Targets(ctx)
		return err == nil && len(res.Active) == 0
	})
}
