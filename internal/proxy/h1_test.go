package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawConn is a client connection to the proxy's client port that writes
// bytes as given and reads answers with net/http's parser.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(patience))
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// answer reads the next answer to a request with method, body and
// trailers included.
func (c *rawConn) answer(t *testing.T, method string) (*http.Response, string) {
	t.Helper()
	res, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading an answer's body: %v", err)
	}
	return res, string(b)
}

// A connection whose requests h1Server serves goes on in net/http's
// server from the first one it does not (a chunked body, an Expect, an
// HTTP/1.0 request): every request is answered once, in order, and the
// application gets each once.
func TestH1HandsOverMidConnection(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(b))
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	c := dialRaw(t, tp.addr)
	io.WriteString(c, "GET /one HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"+
		"POST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ndef\r\n0\r\n\r\n"+
		"GET /four HTTP/1.1\r\nHost: x\r\n\r\n")
	want := []string{"GET /one ", "POST /two abc", "POST /three def", "GET /four "}
	for _, w := range want {
		res, body := c.answer(t, http.MethodGet)
		if res.StatusCode != http.StatusOK || body != w {
			t.Fatalf("got %d %q, want 200 %q", res.StatusCode, body, w)
		}
	}
	if n := len(app.requests()); n != len(want) {
		t.Fatalf("the application got %d requests, want %d", n, len(want))
	}
}

// The answers h1Server frames: one of unknown length is chunked, as it
// is flushed (ReverseProxy flushes such an answer at each write), with
// its trailers after it; one of a known length keeps it; a
// HEAD has no body, a 204 none either, and a request that asks to close
// gets Connection: close and a closed connection.
func TestH1FramesAnswers(t *testing.T) {
	baseline(t)
	long := strings.Repeat("x", 3*h1Hold)
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			io.WriteString(w, "short")
			w.(http.Flusher).Flush() // the app's own chunking: the proxy sees an unknown length
		case "/long":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, long)
			w.Header().Set("X-Sum", "42")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			io.WriteString(w, "plain")
		}
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	c := dialRaw(t, tp.addr)

	io.WriteString(c, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
	res, body := c.answer(t, http.MethodGet)
	if body != "short" || len(res.TransferEncoding) == 0 {
		t.Fatalf("short: got %q, transfer encoding %v; want it chunked", body, res.TransferEncoding)
	}
	io.WriteString(c, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n")
	res, body = c.answer(t, http.MethodGet)
	if body != long || len(res.TransferEncoding) == 0 || res.Trailer.Get("X-Sum") != "42" {
		t.Fatalf("long: got %d bytes, transfer encoding %v, trailers %v; want chunked with X-Sum", len(body), res.TransferEncoding, res.Trailer)
	}
	io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, body = c.answer(t, http.MethodGet); body != "plain" || res.ContentLength != int64(len("plain")) {
		t.Fatalf("plain: got %q with length %d, want its Content-Length", body, res.ContentLength)
	}
	io.WriteString(c, "HEAD /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, body = c.answer(t, http.MethodHead); res.StatusCode != http.StatusOK || body != "" {
		t.Fatalf("HEAD: got %d %q", res.StatusCode, body)
	}
	io.WriteString(c, "GET /empty HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, body = c.answer(t, http.MethodGet); res.StatusCode != http.StatusNoContent || body != "" {
		t.Fatalf("204: got %d %q", res.StatusCode, body)
	}
	io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if res, body = c.answer(t, http.MethodGet); body != "plain" || !res.Close {
		t.Fatalf("close: got %q, Connection %q; want the connection closed", body, res.Header.Get("Connection"))
	}
	closed(t, c.br)
}

// A request held for want of a leader ends when its client goes away
// (h1Writer.watchClient), and a request pipelined behind a held one is
// neither lost nor taken for a client gone.
func TestH1HeldRequestWatchesItsClient(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	lead := newLead(Route{})
	tp := startProxy(t, lead, app.addr(), Config{HoldTime: patience})

	gone := dialRaw(t, tp.addr)
	io.WriteString(gone, "GET /gone HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "the request held", func() bool { return tp.Held() == 1 })
	gone.Close()
	waitFor(t, "the held request canceled", func() bool { return tp.rec.request(ResultCanceled) == 1 })

	c := dialRaw(t, tp.addr)
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "the request held", func() bool { return tp.Held() == 1 })
	lead.set(leading("a", 2))
	for range 2 {
		if res, body := c.answer(t, http.MethodGet); res.StatusCode != http.StatusOK || body != "a 2" {
			t.Fatalf("got %d %q, want 200 from the leader", res.StatusCode, body)
		}
	}
	if got := tp.rec.request(ResultCanceled); got != 1 {
		t.Fatalf("%d requests canceled, want only the one whose client went", got)
	}
}
