package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawApp is an HTTP/1.1 application written by hand: answer writes the
// raw answer to the n-th request of a connection (from 0); close says
// whether the application closes the connection after it.
type rawApp struct {
	ln    net.Listener
	conns atomic.Int32
}

func newRawApp(t *testing.T, answer func(n int, r *http.Request) (raw string, close bool)) *rawApp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a := &rawApp{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, r.Body)
					raw, closeIt := answer(n, r)
					if _, err := io.WriteString(c, raw); err != nil || closeIt {
						return
					}
				}
			}()
		}
	}()
	return a
}

func (a *rawApp) addr() string { return a.ln.Addr().String() }

const rawOK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// A request with nothing to stream goes to the application on the
// handler's goroutine (appclient.go), on a kept-alive connection; a
// connection the application closed, or that holds bytes nobody asked
// for, or whose answer said close, is never used again.
func TestAppClientKeepsOnlyCleanConnections(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		close bool
		conns int32
	}{
		{"kept alive", rawOK, false, 1},
		{"closed by the application", rawOK, true, 3},
		{"bytes after the answer", rawOK + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno", false, 3},
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseline(t)
			app := newRawApp(t, func(int, *http.Request) (string, bool) { return tc.raw, tc.close })
			tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
			c := newClient(t)
			for i := range 3 {
				if i > 0 && tc.close {
					// The application's FIN is there before the next request.
					waitFor(t, "the application to close", func() bool { return idleClosed(tp) })
				}
				code, body, _ := get(t, c, tp.addr)
				if code != http.StatusOK || body != "ok" {
					t.Fatalf("request %d: %d %q, want 200 ok", i, code, body)
				}
			}
			if n := app.conns.Load(); n != tc.conns {
				t.Fatalf("the application accepted %d connections, want %d", n, tc.conns)
			}
		})
	}
}

// idleClosed reports that the application's end of the direct client's
// idle connection is closed.
func idleClosed(tp *testProxy) bool {
	ac := tp.http.appDirect
	ac.mu.Lock()
	defer ac.mu.Unlock()
	for _, cc := range ac.free {
		if ap, ok := cc.c.(*appConn); ok && ap.peerClosed() {
			return true
		}
	}
	return len(ac.free) == 0
}

// An interim answer of the application (103 Early Hints) reaches the
// client, then the final one.
func TestAppClientRelaysEarlyHints(t *testing.T) {
	baseline(t)
	app := newRawApp(t, func(int, *http.Request) (string, bool) {
		return "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" + rawOK, false
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	var hints []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if h.Get("Link") != "" {
			hints = append(hints, code)
		}
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, "http://"+tp.addr+"/", nil)
	res, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != "ok" || len(hints) != 1 || hints[0] != http.StatusEarlyHints {
		t.Fatalf("%d %q, interim %v: want 103 with its Link, then 200 ok", res.StatusCode, b, hints)
	}
}

// An answer whose head does not come within ResponseTimeout is a 504,
// and its connection is not used again.
func TestAppClientResponseTimeout(t *testing.T) {
	baseline(t)
	release := make(chan struct{})
	defer close(release)
	app := newRawApp(t, func(n int, r *http.Request) (string, bool) {
		if strings.HasPrefix(r.URL.Path, "/slow") {
			<-release
		}
		return rawOK, false
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{ResponseTimeout: 200 * time.Millisecond})
	c := newClient(t)
	if code, _, _ := get(t, c, tp.addr+"/slow"); code != http.StatusGatewayTimeout {
		t.Fatalf("a late answer: %d, want 504", code)
	}
	// The late answer's connection still waits: a request on it would
	// time out too.
	if code, body, _ := get(t, c, tp.addr+"/"); code != http.StatusOK || body != "ok" {
		t.Fatalf("the next request: %d %q, want 200 ok on a new connection", code, body)
	}
}

// An answer's head is bounded as the Transport bounds it: one past
// MaxHeaderBytes is a 502 at once, not a head kept growing in memory. (A
// POST: a GET would be sent again, on the fake clock's backoff.)
func TestAppClientBoundsTheHead(t *testing.T) {
	baseline(t)
	app := newRawApp(t, func(int, *http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", MaxHeaderBytes+1), false
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	res, err := newClient(t).Post("http://"+tp.addr+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("an endless head: %d, want 502", res.StatusCode)
	}
}

// An answer's body is in hand only when all of it came with the head: a
// part still to come keeps the flush timer that brings it to the client.
func TestAppClientBodyInHand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length int64
		read   string // what the connection's buffer holds after the head
		want   bool
	}{
		{"whole", 2, "ok", true},
		{"empty", 0, "", true},
		{"a part to come", 10, "hello", false},
		{"unknown length", -1, "hello", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.read))
			_, _ = br.Peek(len(tc.read))
			b := &appBody{cc: &clientConn{br: br}, res: &http.Response{ContentLength: tc.length}}
			if got := inHand(b); got != tc.want {
				t.Fatalf("inHand = %v, want %v", got, tc.want)
			}
		})
	}
	if !inHand(http.NoBody) {
		t.Fatal("no body: not in hand")
	}
	if inHand(io.NopCloser(strings.NewReader("ok"))) {
		t.Fatal("the Transport's body: in hand")
	}
}

// A read deadline set after the round trip's context ended must not undo
// the end: the read fails at once, it does not wait for the deadline.
func TestSetReadDeadlineKeepsAnEndedContext(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	setReadDeadline(ctx, a, time.Now().Add(time.Hour))
	go func() { _, _ = b.Write([]byte{1}) }() // what a read that waits would get
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after an ended context: %v, want a deadline exceeded", err)
	}
}
