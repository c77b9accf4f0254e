package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A chunked request's trailers reach the application, through the
// leader's proxy alone and through a follower's too.
func TestHTTPRequestTrailers(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s sum=%s", b, r.Trailer.Get("X-Sum"))
	})
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	for _, addr := range []string{b.addr, a.addr} {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", pr)
		req.Trailer = http.Header{"X-Sum": nil}
		go func() {
			io.WriteString(pw, "abc")
			req.Trailer.Set("X-Sum", "294")
			pw.Close()
		}()
		res, err := newClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) != "abc sum=294" {
			t.Fatalf("via %s: %q, want the body and its trailer", addr, body)
		}
	}
}

// h2cClient speaks HTTP/2 with prior knowledge.
func h2cClient(t *testing.T) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: patience}
}

// h2cApp serves h with HTTP/2 with prior knowledge only, as a gRPC server
// does.
func h2cApp(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// A client that speaks HTTP/2 with prior knowledge reaches an application
// that speaks it (gRPC's way, AppH2C): through a follower's proxy and the leader's,
// as a stream both ways at once, with the answer's trailers.
func TestHTTPH2cStreamsBothWays(t *testing.T) {
	baseline(t)
	app := h2cApp(t, func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 || r.Header.Get(HeaderFencingToken) != "7" {
			http.Error(w, "want HTTP/2 and the token", http.StatusBadRequest)
			return
		}
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			io.WriteString(w, "echo "+line)
			rc.Flush()
		}
		w.Header().Set("Grpc-Status", "0")
	})
	b := startProxy(t, newLead(leading("b", 7)), app, Config{AppProtocol: AppH2C})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr+"/svc/Echo", pr)
	req.Header.Set("Content-Type", "application/grpc")
	go io.WriteString(pw, "one\n")
	res, err := h2cClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.ProtoMajor != 2 || res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s", res.Proto, res.Status)
	}
	br := bufio.NewReader(res.Body)
	// The first echo comes while the request is still open: both ways at once.
	if line, err := br.ReadString('\n'); err != nil || line != "echo one\n" {
		t.Fatalf("%q %v", line, err)
	}
	io.WriteString(pw, "two\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo two\n" {
		t.Fatalf("%q %v", line, err)
	}
	pw.Close()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("more: %q", rest)
	}
	if got := res.Trailer.Get("Grpc-Status"); got != "0" {
		t.Fatalf("trailer Grpc-Status %q, want 0", got)
	}
}

// The release's answer says how long the drain waited and what it left.
func TestHTTPDrainIsReported(t *testing.T) {
	baseline(t)
	app, arrived, release := blockingApp(t, "a")
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{DrainTimeout: 2 * time.Second})
	ctx, report := ReportDrain(context.Background())
	if err := tp.Yield(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if d, ok := report(); !ok || d.Waited != 0 || d.Left != 0 {
		t.Fatalf("an idle drain: %+v %v", d, ok)
	}
	got := async(func() int { code, _, _ := get(t, newClient(t), tp.addr); return code })
	recv(t, arrived, "the request at the application")
	ctx, report = ReportDrain(context.Background())
	timers := tp.clock.Pending()
	yielded := async(func() error { return tp.Yield(ctx, func(context.Context) error { return nil }) })
	waitFor(t, "the drain timer", func() bool { return tp.clock.Pending() > timers })
	tp.clock.Advance(2 * time.Second)
	recv(t, yielded, "the yield")
	if d, ok := report(); !ok || d.Waited != 2*time.Second || d.Left != 1 {
		t.Fatalf("a drain that timed out: %+v %v, want 2s and 1 left", d, ok)
	}
	close(release)
	recv(t, got, "the answer")
	if _, ok := func() (Drained, bool) { _, r := ReportDrain(context.Background()); return r() }(); ok {
		t.Fatal("a report without a Yield")
	}
}

// proxy.app_max_in_flight (as HAProxy's server maxconn): past it a request
// waits in the hold, not in the application's accept queue, and goes on
// when one ends; one that finds no place within the hold time gets 503
// app_busy. A peer's forward waits for a place the same way.
func TestHTTPAppMaxInFlightHoldsTheRest(t *testing.T) {
	baseline(t)
	appB, arrived, release := blockingApp(t, "b")
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{AppMaxInFlight: 1})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	cl := newClient(t)
	first := async(func() int { code, _ := post(t, cl, b.addr); return code })
	recv(t, arrived, "the first request at the application")
	second := async(func() int { code, _ := post(t, cl, a.addr); return code }) // a peer's forward
	waitFor(t, "the second held at b", func() bool { return b.Held() == 1 })
	if n := len(appB.requests()); n != 1 {
		t.Fatalf("the application got %d requests, want 1", n)
	}
	release <- struct{}{}
	if code := recv(t, first, "the first answer"); code != http.StatusOK {
		t.Fatalf("first: %d", code)
	}
	recv(t, arrived, "the second request at the application")
	release <- struct{}{}
	if code := recv(t, second, "the second answer"); code != http.StatusOK {
		t.Fatalf("second: %d", code)
	}

	// One place, taken until the hold time of the next has passed.
	third := async(func() int { code, _ := post(t, cl, b.addr); return code })
	recv(t, arrived, "the third request at the application")
	fourth := async(func() int { code, _ := post(t, cl, b.addr); return code })
	waitFor(t, "the fourth held", func() bool { return b.Held() == 1 })
	b.clock.Advance(b.cfg.HoldTime)
	if code := recv(t, fourth, "the fourth answer"); code != http.StatusServiceUnavailable {
		t.Fatalf("fourth: %d, want 503 at the end of the hold time", code)
	}
	waitFor(t, "app_busy counted", func() bool { return b.rec.request(ResultAppBusy) == 1 })
	release <- struct{}{}
	if code := recv(t, third, "the third answer"); code != http.StatusOK {
		t.Fatalf("third: %d", code)
	}
}
