package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// The leader's application stops on its own, gracefully (net/http's
// Shutdown: the listener closes, idle connections close, requests being
// read are dropped, those being handled finish), while POSTs with a body
// arrive through its proxy: round after round, none is lost. The proxy
// steps down on the first refused dial, through Yield as the daemon wires
// it, and what the application dropped unread goes to the new leader.
func TestHTTPApplicationStopsLosesNoPost(t *testing.T) {
	baseline(t)
	const rounds, workers, pace = 12, 6, 10 * time.Millisecond
	for round := range rounds {
		appB := newApp(t, "b", nil)
		b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{Clock: clock.Real()})
		appA := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
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
		a = startProxy(t, la, appA.addr(), Config{Clock: clock.Real()})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var sent int
		var failed []string
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
					code, body := post(t, c, a.addr)
					mu.Lock()
					sent++
					if code != http.StatusOK {
						failed = append(failed, body)
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
		if len(failed) > 0 {
			t.Fatalf("round %d: %d of %d POSTs failed; first: %s", round, len(failed), sent, strings.TrimSpace(failed[0]))
		}
		a.stop()
		b.stop()
	}
}
