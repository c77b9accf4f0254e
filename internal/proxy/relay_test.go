package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// relayAnswers are a raw application's answers, by the path's last
// element: the relay's own kind (whole, with a length) and each kind it
// leaves to ReverseProxy, hop-by-hop and proxy-owned fields among them.
var relayAnswers = map[string]string{
	"plain": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nX-Multi: a\r\n" +
		"X-Multi: b\r\nContent-Length: 2\r\n\r\nok",
	"hop": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nConnection: X-Hop, keep-alive\r\nX-Hop: 1\r\n" +
		"Keep-Alive: timeout=5\r\nProxy-Connection: x\r\nUpgrade: nothing\r\nContent-Length: 3\r\n\r\nhop",
	"electd": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nElectd-Leader-Id: app\r\nElectd_Fencing_Token: 9\r\n" +
		"Content-Length: 2\r\n\r\nok",
	"nocontent": "HTTP/1.1 204 No Content\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nX-A: 1\r\n\r\n",
	"notmod":    "HTTP/1.1 304 Not Modified\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nEtag: \"1\"\r\n\r\n",
	"hints": "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Length: 2\r\n\r\nok",
	"untyped-chunked": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<html\r\n0\r\n\r\n",
	"untyped-nolen":   "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nConnection: close\r\n\r\n<html>",
	"notype":          "HTTP/1.1 201 Created\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Length: 5\r\n\r\n<html",
	"empty":           "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Length: 0\r\n\r\n",
	"odd":             "HTTP/1.1 299 Whatever\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Length: 1\r\n\r\nx",
	"chunked":         "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"trailers": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n",
	"events": "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Type: text/event-stream\r\nContent-Length: 6\r\n\r\ndata:1",
	"close":  "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	"nolen":  "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end",
	"big":    "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 00:00:00 GMT\r\nContent-Length: 40000\r\n\r\n" + strings.Repeat("b", 40000),
}

// rawRelayApp answers each request with relayAnswers[its path's last
// element], and keeps the bytes of each request it read.
type rawRelayApp struct {
	ln  net.Listener
	mu  sync.Mutex
	got []string
	wg  sync.WaitGroup
}

func newRawRelayApp(t *testing.T) *rawRelayApp {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &rawRelayApp{ln: ln}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		a.wg.Wait()
	})
	return a
}

func (a *rawRelayApp) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(patience))
		var head bytes.Buffer
		n := int64(0)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length:"); ok {
				n, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
			if line == "\r\n" {
				break
			}
		}
		if _, err := io.CopyN(&head, br, n); err != nil {
			return
		}
		first, _, _ := strings.Cut(head.String(), " HTTP/1.1")
		path, _, _ := strings.Cut(first[strings.LastIndex(first, "/")+1:], "?")
		answer, ok := relayAnswers[path]
		if !ok {
			answer = relayAnswers["plain"]
		}
		if strings.HasPrefix(first, "HEAD ") {
			if i := strings.Index(answer, "\r\n\r\n"); i >= 0 && !strings.Contains(answer[:i], "103") {
				answer = answer[:i+4]
			}
		}
		a.mu.Lock()
		a.got = append(a.got, head.String())
		a.mu.Unlock()
		if _, err := io.WriteString(c, answer); err != nil || strings.Contains(answer, "Connection: close") {
			return
		}
	}
}

// last is the last request the application read.
func (a *rawRelayApp) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return ""
	}
	return a.got[len(a.got)-1]
}

// The relay hands the application the bytes ReverseProxy's way would, and
// the client gets the same answer, whatever the request's header and the
// application's answer hold (relay.go's header).
func TestRelayWritesWhatReverseProxyWrites(t *testing.T) {
	baseline(t)
	app := newRawRelayApp(t)
	relayed := startProxy(t, newLead(leading("a", 1)), app.ln.Addr().String(), Config{Clock: clock.Real()})
	plain := startProxy(t, newLead(leading("a", 1)), app.ln.Addr().String(), Config{Clock: clock.Real()})
	plain.http.noRelay = true
	requests := []struct {
		name, head, body string
	}{
		{"a GET", "GET /r/plain HTTP/1.1\r\nHost: app\r\nUser-Agent: curl/8\r\nAccept: */*\r\n", ""},
		{"no User-Agent", "GET /r/plain?x=1&y HTTP/1.1\r\nHost: app:8080\r\n", ""},
		{"an empty User-Agent", "GET /r/plain HTTP/1.1\r\nHost: app\r\nUser-Agent:\r\n", ""},
		{"two User-Agents", "GET /r/plain HTTP/1.1\r\nHost: app\r\nUser-Agent: a\r\nUser-Agent: b\r\n", ""},
		{"odd paths", "GET //a/%2F/./b;c/plain?%20=%41 HTTP/1.1\r\nHost: app\r\n", ""},
		{"hop-by-hop fields", "GET /r/plain HTTP/1.1\r\nHost: app\r\nConnection: keep-alive, X-Hop, x-other\r\nX-Hop: 1\r\n" +
			"X-Other: 2\r\nKeep-Alive: 5\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nTe: trailers, gzip\r\n", ""},
		{"Te without trailers", "GET /r/plain HTTP/1.1\r\nHost: app\r\nTe: gzip\r\n", ""},
		{"forwarding fields", "GET /r/plain HTTP/1.1\r\nHost: app\r\nX-Forwarded-For: 6.6.6.6\r\nX_Forwarded_Proto: https\r\n" +
			"Forwarded: for=6.6.6.6\r\nX-Real-Ip: 6.6.6.6\r\nElectd-Fencing-Token: 99\r\nElectd_Leader_Id: evil\r\n", ""},
		{"repeated fields", "GET /r/plain HTTP/1.1\r\nHost: app\r\nAccept: a\r\nAccept: b\r\nX-Y: 1\r\nx-y: 2\r\n", ""},
		{"a POST", "POST /r/plain HTTP/1.1\r\nHost: app\r\nContent-Type: application/json\r\nContent-Length: 11\r\n", `{"a":"b"}` + "\r\n"},
		{"an empty POST", "POST /r/plain HTTP/1.1\r\nHost: app\r\nContent-Length: 0\r\n", ""},
		{"an empty PUT", "PUT /r/plain HTTP/1.1\r\nHost: app\r\n", ""},
		{"a PATCH", "PATCH /r/plain HTTP/1.1\r\nHost: app\r\nContent-Length: 3\r\n", "abc"},
		{"a DELETE", "DELETE /r/plain HTTP/1.1\r\nHost: app\r\nContent-Length: 0\r\n", ""},
		{"an OPTIONS", "OPTIONS /r/plain HTTP/1.1\r\nHost: app\r\n", ""},
		{"a HEAD", "HEAD /r/plain HTTP/1.1\r\nHost: app\r\n", ""},
		{"a HEAD of no length", "HEAD /r/nolen HTTP/1.1\r\nHost: app\r\n", ""},
		{"a custom method", "PURGE /r/plain HTTP/1.1\r\nHost: app\r\n", ""},
		{"the client's close", "GET /r/plain HTTP/1.1\r\nHost: app\r\nConnection: close\r\n", ""},
	}
	for name := range relayAnswers {
		requests = append(requests, struct{ name, head, body string }{"an answer " + name,
			"GET /r/" + name + " HTTP/1.1\r\nHost: app\r\nUser-Agent: t\r\n", ""})
	}
	for _, tc := range requests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.head + "X-Request-Id: rid-1\r\n\r\n" + tc.body
			var sent, answered [2]string
			for i, tp := range []*testProxy{relayed, plain} {
				answered[i] = relayExchange(t, tp.addr, raw)
				sent[i] = app.last()
			}
			if sent[0] != sent[1] {
				t.Errorf("the application got, relayed:\n%q\nthrough ReverseProxy:\n%q", sent[0], sent[1])
			}
			if answered[0] != answered[1] {
				t.Errorf("the client got, relayed:\n%q\nthrough ReverseProxy:\n%q", answered[0], answered[1])
			}
			if !strings.HasPrefix(answered[0], "HTTP/1.1 ") {
				t.Errorf("no answer: %q", answered[0])
			}
		})
	}
	if relayed.http.relayed.Load() == 0 || plain.http.relayed.Load() != 0 {
		t.Errorf("relayed %d and %d requests, want some and none", relayed.http.relayed.Load(), plain.http.relayed.Load())
	}
}

// relayExchange sends raw on a connection of its own to addr and returns the
// answer's bytes: through the end of the first final answer that has a
// length, else until the proxy closes.
func relayExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &got))
	method, _, _ := strings.Cut(raw, " ")
	for {
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("read the answer: %v (so far %q)", err, got.String())
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode >= 200 {
			break
		}
	}
	return got.String()[:got.Len()-br.Buffered()]
}

// An answer keeps the type its application gave it, and gets none when it
// had none, whatever its framing, the client's protocol or the hops: a
// proxy adds no type (HAProxy and nginx add none), and none is sniffed on
// a race with the first bytes.
func TestAnswerTypeIsTheApplications(t *testing.T) {
	baseline(t)
	app := newRawRelayApp(t)
	leader := startProxy(t, newLead(leading("a", 1)), app.ln.Addr().String(), Config{Clock: clock.Real()})
	follower := startProxy(t, newLead(following("a", 1, leader.peerAddr())), newApp(t, "b", nil).addr(), Config{Clock: clock.Real()})
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	h2c := &http.Transport{Protocols: &h2}
	t.Cleanup(h2c.CloseIdleConnections)
	clients := map[string]*http.Client{"HTTP/1.1": newClient(t), "h2c": {Transport: h2c, Timeout: patience}}
	for _, tc := range []struct{ answer, want string }{
		{"notype", ""}, {"untyped-chunked", ""}, {"untyped-nolen", ""}, {"plain", "text/plain"}, {"chunked", "text/plain"},
	} {
		for via, addr := range map[string]string{"the leader's proxy": leader.addr, "a follower's": follower.addr} {
			for proto, c := range clients {
				res, err := c.Get("http://" + addr + "/r/" + tc.answer)
				if err != nil {
					t.Fatalf("%s via %s over %s: %v", tc.answer, via, proto, err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if got, ok := res.Header["Content-Type"]; res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated ||
					tc.want == "" && ok || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
					t.Errorf("%s via %s over %s: %d, Content-Type %q, want %q", tc.answer, via, proto, res.StatusCode, got, tc.want)
				}
			}
		}
	}
}
