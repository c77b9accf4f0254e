package candidacy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/testkit"
)

var _ Elector = (*election.Elector)(nil)

// eventually waits until cond holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.For(t, 10*time.Second, what, cond)
}

func wantCalls(t *testing.T, f *electiontest.Fake, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprint("calls ", want), func() bool { return fmt.Sprint(f.Calls()) == fmt.Sprint(want) })
}

func run(t *testing.T, c *Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func healthy() apphealth.Health {
	return apphealth.Health{State: apphealth.Healthy, Detail: "HTTP 200 OK"}
}
func unhealthy() apphealth.Health {
	return apphealth.Health{State: apphealth.Unhealthy, Detail: "HTTP 503"}
}

func TestNothingToDoByDefault(t *testing.T) {
	for _, cfg := range []Config{
		{Operator: true, Standing: true},
		{Operator: false, Standing: false}, // election.candidate: false starts as an observer
	} {
		f := electiontest.New(election.Status{})
		c := New(f, cfg)
		run(t, c)
		if _, err := c.SetOperator(context.Background(), cfg.Operator); err != nil {
			t.Fatal(err)
		}
		if got := f.Calls(); len(got) != 0 {
			t.Errorf("%+v: calls %v, want none", cfg, got)
		}
		if s := c.State(); s.Standing != cfg.Operator || s.Pending || s.App != AppDisabled {
			t.Errorf("%+v: state %+v", cfg, s)
		}
	}
}

func TestAppHealthDecides(t *testing.T) {
	f := electiontest.New(election.Status{})
	c := New(f, Config{Operator: true, AppChecked: true, Standing: false})
	if s := c.State(); s.Standing || !s.Pending || s.App != AppUnknown {
		t.Errorf("at start: %+v", s)
	}
	run(t, c)
	// Not standing before the first passed check, for the app's sake.
	wantCalls(t, f, "withdraw app_unhealthy")
	c.SetApp(healthy())
	wantCalls(t, f, "withdraw app_unhealthy", "stand")
	if s := c.State(); !s.Standing || s.Pending || s.App != AppHealthy || s.AppDetail != "HTTP 200 OK" || s.Why != "" {
		t.Errorf("healthy: %+v", s)
	}
	c.SetApp(unhealthy())
	wantCalls(t, f, "withdraw app_unhealthy", "stand", "withdraw app_unhealthy")
	if s := c.State(); s.Standing || s.App != AppUnhealthy || s.Why != election.LossAppUnhealthy {
		t.Errorf("unhealthy: %+v", s)
	}
}

// An application that refuses connections withdraws the participant,
// with app_unhealthy, as a failed health check does, whatever the checks
// say; taking connections again lets it stand.
func TestAppRefusedWithdraws(t *testing.T) {
	f := electiontest.New(election.Status{})
	c := New(f, Config{Operator: true, Standing: true})
	run(t, c)
	c.SetAppRefused("the application at 127.0.0.1:8080 refuses connections")
	wantCalls(t, f, "withdraw app_unhealthy")
	if s := c.State(); s.Standing || s.App != AppUnhealthy || !strings.Contains(s.AppDetail, "refuses") || s.Why != election.LossAppUnhealthy {
		t.Errorf("refused: %+v", s)
	}
	c.SetAppRefused("")
	wantCalls(t, f, "withdraw app_unhealthy", "stand")
	if s := c.State(); !s.Standing || s.App != AppDisabled || s.AppDetail != "" {
		t.Errorf("taking connections again: %+v", s)
	}
	// With health checks, both must allow it.
	f2 := electiontest.New(election.Status{})
	c2 := New(f2, Config{Operator: true, AppChecked: true, Standing: false})
	run(t, c2)
	wantCalls(t, f2, "withdraw app_unhealthy")
	c2.SetApp(healthy())
	wantCalls(t, f2, "withdraw app_unhealthy", "stand")
	c2.SetAppRefused("refuses")
	wantCalls(t, f2, "withdraw app_unhealthy", "stand", "withdraw app_unhealthy")
	c2.SetApp(healthy())
	c2.SetAppRefused("")
	wantCalls(t, f2, "withdraw app_unhealthy", "stand", "withdraw app_unhealthy", "stand")
}

func TestOperatorWins(t *testing.T) {
	f := electiontest.New(election.Status{})
	c := New(f, Config{Operator: true, AppChecked: true, Standing: false})
	run(t, c)
	wantCalls(t, f, "withdraw app_unhealthy")
	c.SetApp(healthy())
	wantCalls(t, f, "withdraw app_unhealthy", "stand")

	s, err := c.SetOperator(context.Background(), false)
	if err != nil || s.Standing || s.Operator || s.Pending || s.Why != election.LossWithdrawn {
		t.Fatalf("withdrawn: %+v, %v", s, err)
	}
	// An unhealthy application changes nothing while withdrawn.
	c.SetApp(unhealthy())
	if _, err := c.SetOperator(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "withdraw app_unhealthy", "stand", "withdraw withdrawn")

	// Restored by the operator, it still waits for a healthy application.
	s, err = c.SetOperator(context.Background(), true)
	if err != nil || s.Standing || !s.Operator || s.Why != election.LossAppUnhealthy {
		t.Fatalf("restored, app unhealthy: %+v, %v", s, err)
	}
	c.SetApp(healthy())
	wantCalls(t, f, "withdraw app_unhealthy", "stand", "withdraw withdrawn", "withdraw app_unhealthy", "stand")
}

// A SetOperator whose context ends first returns its error with the change
// pending; the change stays wanted and Run applies it.
func TestSetOperatorTimesOutThenApplies(t *testing.T) {
	f, calls, gate := electiontest.New(election.Status{}), make(chan string, 4), make(chan struct{})
	f.Intercept(func(ctx context.Context, call string) error {
		calls <- call
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	c := New(f, Config{Operator: true, Standing: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.SetOperator(ctx, false)
		errc <- err
	}()
	if got := <-calls; got != "withdraw withdrawn" {
		t.Fatalf("call %q", got)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if s := c.State(); !s.Pending || !s.Standing || s.Operator {
		t.Errorf("after the timeout: %+v", s)
	}
	run(t, c)
	if got := <-calls; got != "withdraw withdrawn" {
		t.Fatalf("Run's call %q", got)
	}
	gate <- struct{}{}
	wantCalls(t, f, "withdraw withdrawn", "withdraw withdrawn") // the cancelled call, then Run's
	eventually(t, "applied", func() bool { s := c.State(); return !s.Pending && !s.Standing })
}

// Changes that come faster than they apply are applied as one.
func TestChangesCoalesce(t *testing.T) {
	f := electiontest.New(election.Status{})
	c := New(f, Config{Operator: true, AppChecked: true, Standing: false})
	c.SetApp(unhealthy())
	c.SetApp(healthy())
	run(t, c)
	wantCalls(t, f, "stand")
}

// A failed SetCandidate is tried again Retry (1s) later on the clock
// the Controller was given.
func TestRunRetries(t *testing.T) {
	clk := clocktest.NewFake(time.Unix(1000, 0))
	f, calls := electiontest.New(election.Status{}), make(chan string, 4)
	f.Fail(electiontest.SetCandidate, errors.New("zk: connection closed"), election.ErrClosed)
	f.Intercept(func(_ context.Context, call string) error { calls <- call; return nil })
	c := New(f, Config{Operator: true, AppChecked: true, Standing: false, Clock: clk})
	run(t, c)
	for range 2 {
		<-calls
		eventually(t, "the retry's timer", func() bool { return clk.Pending() == 1 })
		if len(calls) != 0 {
			t.Fatal("tried again before the clock moved")
		}
		clk.Advance(time.Second)
	}
	// Two failed tries, then the one that held.
	wantCalls(t, f, "withdraw app_unhealthy", "withdraw app_unhealthy", "withdraw app_unhealthy")
}

// The first change from the observer a checked participant starts as is
// reported as the reason it does not stand, not as a change from a
// "withdrawn" the operator never asked for.
func TestFirstReasonLoggedAlone(t *testing.T) {
	var buf testkit.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	f := electiontest.New(election.Status{})
	c := New(f, Config{Operator: true, AppChecked: true, Standing: false, Logger: log})
	run(t, c)
	wantCalls(t, f, "withdraw app_unhealthy")
	testkit.For(t, 10*time.Second, "a line that says not standing", func() bool {
		return strings.Contains(buf.String(), "not standing")
	})
	if out := buf.String(); !strings.Contains(out, `msg="not standing for leadership" reason=app_unhealthy`) || strings.Contains(out, "was=") {
		t.Fatalf("first change logged as %q", out)
	}
}

// A resumed participant keeps standing through its restart: its
// application counts as healthy until the first check, which alone
// decides (docs/design/session-and-faults.md, "Resuming a session after a
// restart"). A fresh start waits for a pass (TestAppHealthDecides).
func TestResumedStandsUntilFirstCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   []string
	}{
		{"first check passes", http.StatusOK, nil},
		{"first check fails", http.StatusServiceUnavailable, []string{"withdraw app_unhealthy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var checks atomic.Int64
			app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				checks.Add(1)
				w.WriteHeader(tc.status)
			}))
			defer app.Close()
			f := electiontest.New(election.Status{})
			c := New(f, Config{Operator: true, AppChecked: true, Resumed: true, Standing: true})
			if s := c.State(); !s.Standing || s.Pending || s.App != AppHealthy {
				t.Errorf("at start: %+v", s)
			}
			ck := apphealth.New(apphealth.Config{URL: app.URL, Interval: 10 * time.Millisecond, Timeout: 5 * time.Second,
				FailureThreshold: 100, SuccessThreshold: 1, Resumed: true})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				ck.Run(ctx, c.SetApp)
			}()
			defer func() { cancel(); <-done }()
			run(t, c)
			// The second check starts after the first one's outcome reached
			// c; SetOperator returns once c applied what it has.
			eventually(t, "two checks", func() bool { return checks.Load() >= 2 })
			if _, err := c.SetOperator(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if got := f.Calls(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
			s := c.State()
			if got, want := s.Standing, tc.want == nil; got != want || s.Pending {
				t.Errorf("after the checks: %+v, want standing %v", s, want)
			}
		})
	}
}
