package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// blockingApp answers each request once release is closed, and says when
// a request arrived.
func blockingApp(t *testing.T, name string) (*testApp, chan struct{}, chan struct{}) {
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	app := newApp(t, name, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, name+" "+r.Header.Get(HeaderFencingToken))
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return app, arrived, release
}

// post sends a POST with a body through addr: a request that may not be
// sent twice.
func post(t *testing.T, c *http.Client, addr string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/w", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A leader that stops leading cuts what its application still has: the
// client gets a 503 at once rather than an answer from a stale leader; a
// request that may be sent twice (a GET) goes to the new leader instead.
func TestHTTPLeadershipLostCutsInFlight(t *testing.T) {
	baseline(t)
	app, arrived, _ := blockingApp(t, "a")
	appB := newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 5)), appB.addr(), Config{})
	lead := newLead(leading("a", 4))
	tp := startProxy(t, lead, app.addr(), Config{})
	c := newClient(t)
	type answer struct {
		code int
		body string
	}
	read := async(func() answer { code, body, _ := get(t, c, tp.addr); return answer{code, body} })
	recv(t, arrived, "the GET at the application")
	got := async(func() answer { code, body := post(t, c, tp.addr); return answer{code, body} })
	recv(t, arrived, "the POST at the application")
	lead.set(following("b", 5, b.peerAddr()))
	a := recv(t, got, "the answer to the POST")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "leadership moved") {
		t.Fatalf("%d %q, want 503 saying leadership moved", a.code, a.body)
	}
	if r := recv(t, read, "the answer to the GET"); r.code != http.StatusOK || r.body != "b 5" {
		t.Fatalf("GET: %d %q, want it sent again to the new leader", r.code, r.body)
	}
	waitFor(t, "one leadership_lost counted", func() bool { return tp.rec.request(ResultLeadershipLost) == 1 })
}

// The lease runs out without any change announced (the election is stuck,
// the process was paused): the proxy looks again when the lease is due to
// end and cuts what the application still has.
func TestHTTPLeaseEndCutsWithoutAnnouncement(t *testing.T) {
	baseline(t)
	app, arrived, _ := blockingApp(t, "a")
	r := leading("a", 4)
	r.Lease = 3 * time.Second
	lead := newLead(r)
	tp := startProxy(t, lead, app.addr(), Config{})
	c := newClient(t)
	got := async(func() int { code, _ := post(t, c, tp.addr); return code })
	recv(t, arrived, "the request at the application")
	lead.hush(true)
	lead.set(Route{}) // the lease lapsed, and nobody said so
	tp.clock.Advance(3*time.Second + time.Millisecond)
	if code := recv(t, got, "the answer"); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", code)
	}
}

// Yield lets the application finish the requests it has before the
// hand-over, and holds those that arrive meanwhile; after the hand-over
// they go to the new leader. No request fails.
func TestHTTPYieldDrainsThenHandsOver(t *testing.T) {
	baseline(t)
	appA, arrived, release := blockingApp(t, "a")
	appB := newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 6)), appB.addr(), Config{})
	la := newLead(leading("a", 5))
	a := startProxy(t, la, appA.addr(), Config{})
	c := newClient(t)
	first := async(func() string { _, body, _ := get(t, c, a.addr); return body })
	recv(t, arrived, "the first request at a's application")

	var released atomic.Bool
	yielded := async(func() error {
		return a.Yield(context.Background(), func(context.Context) error {
			released.Store(true)
			la.set(following("b", 6, b.peerAddr()))
			return nil
		})
	})
	waitFor(t, "a to stop handing requests to its application", func() bool { return a.State().Route == "hold" })
	second := async(func() string { _, body, _ := get(t, c, a.addr); return body })
	waitFor(t, "the second request to be held", func() bool { return a.Held() == 1 })
	if released.Load() {
		t.Fatal("released while the application still had a request")
	}
	close(release)
	if body := recv(t, first, "the first answer"); body != "a 5" {
		t.Fatalf("first answer %q, want a 5", body)
	}
	if err := recv(t, yielded, "Yield"); err != nil {
		t.Fatal(err)
	}
	if body := recv(t, second, "the second answer"); body != "b 6" {
		t.Fatalf("second answer %q, want b 6 (the new leader)", body)
	}
}

// Yield waits for the application at most DrainTimeout.
func TestHTTPYieldDrainIsBounded(t *testing.T) {
	baseline(t)
	app, arrived, _ := blockingApp(t, "a")
	lead := newLead(leading("a", 5))
	tp := startProxy(t, lead, app.addr(), Config{DrainTimeout: time.Second})
	c := newClient(t)
	got := async(func() int { code, _ := post(t, c, tp.addr); return code })
	recv(t, arrived, "the request at the application")
	yielded := async(func() error {
		return tp.Yield(context.Background(), func(context.Context) error { lead.set(Route{}); return nil })
	})
	waitFor(t, "the drain to start", func() bool { return tp.State().Route == "hold" })
	tp.clock.Advance(time.Second)
	if err := recv(t, yielded, "Yield"); err != nil {
		t.Fatal(err)
	}
	if code := recv(t, got, "the answer"); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: the request outlived the drain", code)
	}
}

// A request whose body the application began to read is never sent
// again: if the application then fails, the client gets a 502.
func TestHTTPReadBodyIsNotRetried(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", nil)
	appA := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadFull(r.Body, make([]byte, 3))
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close() // dies mid-request
		}
	})
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
	la := newLead(leading("a", 1))
	a := startProxy(t, la, appA.addr(), Config{})
	la.onStepDown(func() { la.set(following("b", 2, b.peerAddr())) })
	res, err := newClient(t).Post("http://"+a.addr+"/", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", res.StatusCode)
	}
	if n := len(appB.requests()); n != 0 {
		t.Fatalf("the request was sent again, to b (%d)", n)
	}
}

// An application that stops as a request arrives (net/http's server drops
// a request whose headers it reads once its shutdown has begun, closing
// the connection unanswered). By default the proxy cannot know that the
// application did nothing with it: a POST gets a 502 saying it may or may
// not have been processed, and is never sent again. With ResendUnreadBody
// the application is asked for 100 Continue, never answers it, and the
// request goes to the new leader whole.
func TestHTTPBodyNotAskedForGoesToTheNewLeader(t *testing.T) {
	for _, resend := range []bool{false, true} {
		t.Run(fmt.Sprintf("ResendUnreadBody %v", resend), func(t *testing.T) {
			baseline(t)
			appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				io.WriteString(w, "b "+string(b))
			})
			expect := make(chan string, 1)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() { // reads the headers, then stops as net/http's server does
				c, err := ln.Accept()
				if err != nil {
					return
				}
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err == nil {
					expect <- req.Header.Get("Expect")
				}
				ln.Close() // the next dial is refused: a step-down
				c.Close()
			}()
			b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
			la := newLead(leading("a", 1))
			la.onStepDown(func() { la.set(following("b", 2, b.peerAddr())) })
			// The real clock: the proxy tries again after a backoff.
			a := startProxy(t, la, ln.Addr().String(), Config{Clock: clock.Real(), ResendUnreadBody: resend})
			code, body := post(t, newClient(t), a.addr)
			e := <-expect
			if !resend {
				if code != http.StatusBadGateway || !strings.Contains(body, "may or may not have been processed") {
					t.Fatalf("%d %q, want a 502 saying it may have been processed", code, body)
				}
				if e != "" || len(appB.requests()) != 0 {
					t.Fatalf("the application saw Expect %q; b got %d requests: want none and none", e, len(appB.requests()))
				}
				return
			}
			if code != http.StatusOK || body != "b payload" {
				t.Fatalf("%d %q, want 200 from b with the whole body", code, body)
			}
			if e != "100-continue" {
				t.Errorf("the application saw Expect %q, want 100-continue", e)
			}
			if la.stepDowns() != 1 || a.rec.resends(ResendUnreadBody) != 1 {
				t.Errorf("%d step-downs, %d resends: want 1 and 1", la.stepDowns(), a.rec.resends(ResendUnreadBody))
			}
		})
	}
}

// A streamed body that stops arriving, and an answer that stops coming,
// are cut after BodyTimeout without progress.
func TestHTTPStalledBodiesAreCut(t *testing.T) {
	t.Run("request body", func(t *testing.T) {
		baseline(t)
		readErr := make(chan error, 1)
		app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErr <- err
		})
		tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{BodyTimeout: 2 * time.Second, BufferSize: MinBufferSize})
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Longer than BufferSize: streamed.
		io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\nabc")
		waitFor(t, "the body at the application", func() bool { return len(app.requests()) == 1 })
		waitFor(t, "the guard to be armed", func() bool { return tp.clock.Pending() > 0 })
		tp.clock.Advance(2 * time.Second)
		if err := recv(t, readErr, "the application's read"); err == nil {
			t.Fatal("the application read the whole body of a stalled client")
		}
		conn.SetReadDeadline(time.Now().Add(patience))
		b, _ := io.ReadAll(conn)
		if !strings.Contains(string(b), "504") {
			t.Fatalf("the client got %q, want a 504", b)
		}
	})
	t.Run("answer", func(t *testing.T) {
		baseline(t)
		stop := make(chan struct{})
		app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "abc")
			http.NewResponseController(w).Flush()
			<-stop
		})
		defer close(stop)
		tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{BodyTimeout: 2 * time.Second})
		res, err := newClient(t).Get("http://" + tp.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got := async(func() error { _, err := io.ReadAll(res.Body); return err })
		waitFor(t, "the guard to be armed", func() bool { return tp.clock.Pending() > 0 })
		tp.clock.Advance(2 * time.Second)
		if err := recv(t, got, "the end of the answer"); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("read %v, want the answer cut short", err)
		}
	})
}
