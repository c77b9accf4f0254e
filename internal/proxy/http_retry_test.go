package proxy

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// An application that closes the connection unanswered gets a request
// that may be repeated at most maxResends+1 times, then the client gets
// the application's failure (502), and the refusal is counted.
func TestHTTPDroppedRequestSentAtMostThrice(t *testing.T) {
	baseline(t)
	var mu sync.Mutex
	calls := 0
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{Clock: clock.Real()})
	code, body, _ := get(t, newClient(t), tp.addr)
	if code != http.StatusBadGateway || !strings.Contains(body, "may or may not have been processed") {
		t.Fatalf("%d %q, want a 502 saying it may have been processed", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != maxResends+1 {
		t.Errorf("the application got the GET %d times, want %d", calls, maxResends+1)
	}
	if n, r := tp.rec.resends(ResendSafe), tp.rec.refusals(LimitPerRequest); n != maxResends || r != 1 {
		t.Errorf("%d re-sends, %d refusals at the per-request limit: want %d and 1", n, r, maxResends)
	}
	if n := tp.rec.tries(TargetApp); n != maxResends+1 {
		t.Errorf("%d attempts counted, want %d", n, maxResends+1)
	}
}

// Requests held for a leader whose address refuses do not each dial it:
// one probe at a time, with a backoff, and all get their 503 at the end
// of the hold time.
func TestHTTPDeadLeaderProbedOnceForAll(t *testing.T) {
	baseline(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	const held, hold = 20, time.Second
	tp := startProxy(t, newLead(following("b", 2, dead)), newApp(t, "a", nil).addr(),
		Config{Clock: clock.Real(), HoldTime: hold})
	c := newClient(t)
	var answers []<-chan int
	for range held {
		answers = append(answers, async(func() int { code, _, _ := get(t, c, tp.addr); return code }))
	}
	for _, ch := range answers {
		if code := recv(t, ch, "an answer"); code != http.StatusServiceUnavailable {
			t.Errorf("%d, want 503", code)
		}
	}
	// Each request's first attempt may go before the route is known to
	// fail; after that, probes 25 ms, 50 ms, ... apart fit in the hold
	// time at most log2(hold/25ms) times: 6. Every held request dialling
	// every 25 ms would be 800.
	if n := tp.rec.tries(TargetLeader); n > held+6 {
		t.Errorf("%d attempts to the dead leader's address for %d requests, want at most %d", n, held, held+6)
	}
}
