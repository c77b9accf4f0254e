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
// dial, through Yield as the daemon wires it. No request runs twice, and
// none that the application never ran is lost:
//   - with ResendUnreadBody (this application reads every body before it
//     acts), what the application dropped unread goes to the new leader:
//     none fails;
//   - with AppH2C, its GOAWAY names the last request it took, and the rest
//     go to the new leader. What may still fail is the answer to a request
//     it ran: net/http's HTTP/2 server counts a stream closed, and its
//     connection idle, once the last frame is in its buffer, and Shutdown
//     may close an idle connection before that buffer is written out
//     (golang/go#39776 is of that family). Such a POST ran, and its client
//     is told it may or may not have been processed. And a stream written
//     as the application closes the connection draws a reset, which can
//     discard the GOAWAY not yet read (seen at load 29): that POST did not
//     run, and its client is told the same;
//   - by default, over HTTP/1.1, a POST the application dropped unread
//     gets a 502 saying it may or may not have been processed (HTTP/1.1
//     cannot say otherwise): none of those ran.
func TestHTTPApplicationStopsLosesNoPost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		// failed: how a POST that failed may have fared: none may fail
		// (""), every one that did ran ("ran") or did not ("unread"), or
		// either ("either"): each was told it may or may not have been
		// processed, and none ran twice.
		failed string
	}{
		{"ResendUnreadBody", Config{ResendUnreadBody: true}, ""},
		{"h2c", Config{AppProtocol: AppH2C}, "either"},
		{"default", Config{}, "unread"},
	} {
		t.Run(tc.name, func(t *testing.T) { applicationStops(t, tc.cfg, tc.failed) })
	}
}

func applicationStops(t *testing.T, cfg Config, failedAs string) {
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
			if failedAs == "" || !strings.Contains(f.body, "may or may not have been processed") {
				t.Fatalf("round %d: %d of %d POSTs failed; first: %s", round, len(failed), sent, strings.TrimSpace(f.body))
			}
			if _, ran := ran.Load(f.id); failedAs != "either" && ran != (failedAs == "ran") {
				t.Fatalf("round %d: POST %s ran: %v; it got %s", round, f.id, ran, strings.TrimSpace(f.body))
			}
		}
		lost += len(failed)
		a.stop()
		b.stop()
	}
	if lost > 0 {
		t.Logf("%d POSTs answered that they may or may not have been processed (%s) in %d stops", lost, failedAs, rounds)
	}
}
