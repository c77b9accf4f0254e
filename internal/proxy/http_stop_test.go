package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// The leader's application stops on its own, gracefully (net/http's
// Shutdown: the listener closes, idle connections close, requests being
// read are dropped, those being handled finish), while POSTs with a body
// arrive through its proxy. The proxy steps down on the first refused
// dial, through Yield as the daemon wires it. With ResendUnreadBody (this
// application reads every body before it acts), what the application
// dropped unread goes to the new leader: round after round, none is lost.
// So it is with an application that speaks HTTP/2 (AppH2C): its GOAWAY
// names the last request it took, and the rest go to the new leader. By
// default, over HTTP/1.1, a POST the application dropped gets a 502 saying
// it may or may not have been processed (HTTP/1.1 cannot say otherwise):
// none of those ran, none runs twice, the rest succeed.
func TestHTTPApplicationStopsLosesNoPost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		lossless bool
	}{
		{"ResendUnreadBody", Config{ResendUnreadBody: true}, true},
		{"h2c", Config{AppProtocol: AppH2C}, true},
		{"default", Config{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { applicationStops(t, tc.cfg, tc.lossless) })
	}
}

func applicationStops(t *testing.T, cfg Config, lossless bool) {
	baseline(t)
	const rounds, workers, pace = 12, 6, 10 * time.Millisecond
	lost := 0
	var ids atomic.Int64
	type answer struct{ id, body string }
	for round := range rounds {
		var ran sync.Map // request id -> times an application ran it
		count := func(r *http.Request) {
			n, _ := ran.LoadOrStore(r.Header.Get("X-Request-Id"), new(atomic.Int32))
			if n.(*atomic.Int32).Add(1) > 1 {
				t.Errorf("request %s ran twice", r.Header.Get("X-Request-Id"))
			}
		}
		appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			count(r)
			io.WriteString(w, "b")
		})
		b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{Clock: clock.Real()})
		appA := newAppProto(t, "a", cfg.AppProtocol == AppH2C, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			count(r)
			io.WriteString(w, "a")
		})
		la := newLead(leading("a", 1))
		var a *testProxy
		la.onStepDown(func() {
			_ = a.Yield(context.Background(), func(context.Context) error {
				la.set(following("b", 2, b.peerAddr()))
				return nil
			})
		})
		cfg.Clock = clock.Real()
		a = startProxy(t, la, appA.addr(), cfg)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var sent int
		var failed []answer
		for range workers {
			wg.Go(func() {
				c := newClient(t)
				tick := time.NewTicker(pace)
				defer tick.Stop()
				for n := 0; n < 1000; n++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					id := fmt.Sprintf("%d-%d", round, ids.Add(1))
					code, body := post(t, c, a.addr, "X-Request-Id", id)
					mu.Lock()
					sent++
					if code != http.StatusOK {
						failed = append(failed, answer{id, body})
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(50 * time.Millisecond) // requests in flight, connections kept alive
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		_ = appA.Config.Shutdown(ctx)
		cancel()
		waitFor(t, "the step-down", func() bool { return la.stepDowns() == 1 })
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		for _, f := range failed {
			if lossless || !strings.Contains(f.body, "may or may not have been processed") {
				t.Fatalf("round %d: %d of %d POSTs failed; first: %s", round, len(failed), sent, strings.TrimSpace(f.body))
			}
			if _, ran := ran.Load(f.id); ran {
				t.Fatalf("round %d: POST %s ran, and got %s", round, f.id, strings.TrimSpace(f.body))
			}
		}
		lost += len(failed)
		a.stop()
		b.stop()
	}
	t.Logf("%d POSTs, dropped unread, answered 502 (may have been processed) in %d stops", lost, rounds)
}
