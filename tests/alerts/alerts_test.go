package alerts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/promtest"
	"github.com/electd/electd/tests/harness/zktest"
)

const (
	// speedUp divides every window and `for` of rules.yaml in the live copy:
	// ElectdElectionBusy's 5m window and 10m `for` become 15s and 30s,
	// ElectdLeadershipFlapping's 10m window 30s, ElectdNotOneLeader's `for`
	// 3s, with Prometheus scraping and evaluating every second.
	speedUp = 20
	scrape  = time.Second

	rulesFile     = "../../deploy/prometheus/rules.yaml"
	dashboardFile = "../../deploy/grafana/electd.json"

	// patience bounds each wait; each takes seconds to a minute.
	patience = 2 * time.Minute
	// sessionTimeout is every sidecar's: its lease lasts about 6.4 s and is
	// renewed every second, ElectdLeaseRenewalSlow's threshold. Shorter
	// sessions expire on a machine busy with the rest of the suite.
	sessionTimeout = 10 * time.Second
	adminToken     = "alerts-admin-token"
)

// suite is what the scenarios share: one Prometheus evaluating the sped-up
// rules and one ZooKeeper (a scenario whose fault is ZooKeeper's runs its
// own).
type suite struct {
	prom  *promtest.Server
	zk    *zktest.Ensemble
	rules map[string]promtest.Rule
	log   timeline
}

// TestAlertsOnRealFaults runs each alert's scenario at once, on one
// Prometheus, each on an election path of its own; every alert must have
// fired and resolved by the end.
func TestAlertsOnRealFaults(t *testing.T) {
	promtest.Binary(t) // a missing Prometheus fails before anything starts
	fast := filepath.Join(t.TempDir(), "rules.yaml")
	rules, err := promtest.SpeedUp(rulesFile, fast, speedUp)
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{rules: map[string]promtest.Rule{}}
	for _, r := range rules {
		s.rules[r.Alert] = r
		t.Logf("%s, %dx faster: %s (for %v)", r.Alert, speedUp, strings.Join(strings.Fields(r.FastExpr), " "), r.FastFor)
	}
	s.prom = promtest.Start(t, promtest.Options{RuleFiles: []string{fast}, Interval: scrape})
	s.zk = zktest.Start(t, zktest.Options{})
	t.Cleanup(func() { s.log.check(t, rules) })

	for _, sc := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"not one leader", notOneLeader},
		{"flapping", flapping},
		{"misconfigured", misconfigured},
		{"slow renewals", slowRenewals},
		{"busy latch", busy("latch")},
		{"busy selector", busy("selector")},
		{"busy race", busy("race")},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, s)
		})
	}
}

// timeline records each alert's life in the run: how long after its fault
// began it was pending and firing, and how long after the fault ended it
// resolved.
type timeline struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	alert, fault              string
	pending, firing, resolved time.Duration // pending: 0 when not seen (no `for`)
}

func (tl *timeline) add(e event) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, e)
}

// check prints the timeline and fails t unless every rule fired and
// resolved.
func (tl *timeline) check(t *testing.T, rules []promtest.Rule) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	slices.SortFunc(tl.events, func(a, b event) int { return strings.Compare(a.alert+a.fault, b.alert+b.fault) })
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %-58s %9s %9s %9s\n", "alert", "fault", "pending", "firing", "resolved")
	for _, e := range tl.events {
		pending := "-"
		if e.pending > 0 {
			pending = e.pending.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "%-26s %-58s %9s %9s %9s\n", e.alert, e.fault, pending,
			e.firing.Round(100*time.Millisecond), e.resolved.Round(100*time.Millisecond))
	}
	t.Logf("alerts fired by their faults (pending, firing: after the fault began; resolved: after it ended), rules %dx faster:\n%s", speedUp, b.String())
	for _, r := range rules {
		if !slices.ContainsFunc(tl.events, func(e event) bool { return e.alert == r.Alert }) && !t.Failed() {
			t.Errorf("%s never fired and resolved in the live Prometheus: give it a scenario", r.Alert)
		}
	}
}
