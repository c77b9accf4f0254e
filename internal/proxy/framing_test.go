package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// smuggled is a request hidden behind a faulty one.
const smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

// framingCases are requests whose framing is at fault (bad: the request's
// index, why) or sound (bad -1): each then parses whole.
var framingCases = []struct {
	name, in string
	bad      int64
	why      string
}{
	{"get", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", -1, ""},
	{"head", "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", -1, ""},
	{"http/1.0", "GET / HTTP/1.0\r\n\r\n", -1, ""},
	{"content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + smuggled, -1, ""},
	{"content-length twice, equal", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length:  5 \r\n\r\nhello", -1, ""},
	{"chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled, -1, ""},
	{"chunked, extensions and trailers", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n" +
		"5;a=b;c=\"d e\"\r\nhello\r\n00A\r\n0123456789\r\n0;x\r\nX-Sum: 1\r\nY: \t2\r\n\r\n" + smuggled, -1, ""},
	{"pipelined keep-alive", strings.Repeat("GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok", 50), -1, ""},
	{"upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello", -1, ""},
	{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00", -1, ""},

	{"chunk line bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n" + smuggled, 0, faultChunkLine},
	{"chunk size zz", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + smuggled, 0, faultChunkLine},
	{"chunk size 2^64", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n" + smuggled, 0, faultChunkSize},
	{"chunk size 17 digits", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n", 0, faultChunkSize},
	{"chunk data bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n" + smuggled, 0, faultChunkEnd},
	{"chunk size with space", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n" + smuggled, 0, faultChunkLine},
	{"chunk size negative", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n" + smuggled, 0, faultChunkLine},
	{"chunk extension bare CR", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n", 0, faultChunkLine},
	{"trailer bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\n\r\n" + smuggled, 0, faultLineEnd},
	{"trailer content-length", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n", 0, faultTrailer},
	{"content-length and chunked", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 43\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 0, faultCLTE},
	{"chunked and content-length", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n" + smuggled, 0, faultCLTE},
	{"http/1.0 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 0, faultTE10},
	{"gzip, chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0, faultTE},
	{"chunked twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, faultTE},
	{"content-length differs", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 0, faultCLs},
	{"content-length list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello", 0, faultCL},
	{"content-length sign", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 0, faultCL},
	{"obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 0, faultFold},
	{"bare LF in head", "GET / HTTP/1.1\nHost: x\n\n" + smuggled, 0, faultRequestLine},
	{"bare LF after a field", "GET / HTTP/1.1\r\nHost: x\n\r\n" + smuggled, 0, faultLineEnd},
	{"bare CR in a value", "GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 0, faultLineEnd},
	{"space before colon", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello", 0, faultField},
	{"HTTP/1.2", "GET / HTTP/1.2\r\n\r\n", 0, faultVersion},
	{"PRI later", "GET / HTTP/1.1\r\nHost: x\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1, faultVersion},
	{"second request at fault", "GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 1, faultCLTE},
}

// netHTTPRefuses are the faulty cases net/http refuses itself, with its
// own answer, before a handler sees them.
var netHTTPRefuses = map[string]bool{
	"gzip, chunked": true, "chunked twice": true, "content-length differs": true, "content-length list": true,
	"content-length sign": true, "bare CR in a value": true, "space before colon": true, "HTTP/1.2": true,
}

// scanAll feeds in to a framer in pieces of size step and returns what it
// let through.
func scanAll(in string, step int) (string, *framer) {
	f := &framer{on: true, maxHead: 1 << 20}
	var out strings.Builder
	for i := 0; i < len(in); i += step {
		p := in[i:min(i+step, len(in))]
		k := f.scan([]byte(p))
		out.WriteString(p[:k])
		if k < len(p) {
			break
		}
	}
	return out.String(), f
}

func TestFramer(t *testing.T) {
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{len(tc.in), 1, 3, 7} {
				out, f := scanAll(tc.in, step)
				if got, want := f.bad.Load()-1, tc.bad; got != want {
					t.Fatalf("step %d: the request at fault is %d (%q), want %d", step, got, f.why, want)
				}
				if tc.bad < 0 {
					if out != tc.in {
						t.Fatalf("step %d: %d of %d bytes let through", step, len(out), len(tc.in))
					}
					continue
				}
				if f.why != tc.why {
					t.Errorf("step %d: fault %q, want %q", step, f.why, tc.why)
				}
				if strings.Contains(out, "/smuggled") {
					t.Errorf("step %d: the hidden request was let through: %q", step, out)
				}
			}
		})
	}
}

// A faulty head reaches net/http up to its end, so that the handler can
// answer it; nothing after it does.
func TestFramerFaultyHeadEnds(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET / HTTP/1.1\nHost: x\n\nGET /smuggled", "GET / HTTP/1.1\nHost: x\n\n"},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\nGET /smuggled", "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n"},
		{"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"},
	} {
		if got, _ := scanAll(tc.in, 1); got != tc.want {
			t.Errorf("let through %q, want %q", got, tc.want)
		}
	}
}

// rawExchange sends in on a new connection to addr and returns the first
// answer's status and whether the connection closed after it.
func rawExchange(t *testing.T, addr, in string) (int, bool) {
	code, closed, _ := rawExchangeBody(t, addr, in)
	return code, closed
}

// rawExchangeBody is rawExchange, with the answer's body.
func rawExchangeBody(t *testing.T, addr, in string) (int, bool, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return rawExchangeOn(t, c, in)
}

// rawExchangePeer is rawExchangeBody on a peer port: the bytes go inside
// the peers' TLS (ALPN http/1.1), as a peer's upgrades do.
func rawExchangePeer(t *testing.T, addr, in string) (int, bool, string) {
	t.Helper()
	c, err := dialPeerTLS(t, addr, testPeerKey, alpnHTTP1)
	if err != nil {
		t.Fatal(err)
	}
	return rawExchangeOn(t, c, in)
}

// rawExchangeOn is rawExchangeBody on the connection c, which it closes.
func rawExchangeOn(t *testing.T, c net.Conn, in string) (int, bool, string) {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	_, err = br.ReadByte()
	var ne net.Error
	if err == nil || errAs(err, &ne) && ne.Timeout() {
		return res.StatusCode, false, string(b)
	}
	return res.StatusCode, true, string(b)
}

func errAs(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

// Through the leader's proxy and a follower's, every faulty request is
// answered 400, its connection closed, and the application gets neither
// it nor what it hid; sound ones are served.
func TestFramingThroughProxy(t *testing.T) {
	baseline(t)
	var mu sync.Mutex
	var paths []string
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, r.URL.Path)
	})
	leader := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	follower := startProxy(t, newLead(following("a", 1, leader.peerAddr())), newApp(t, "b", nil).addr(), Config{})
	for _, tc := range framingCases {
		if tc.bad != 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			for _, addr := range []string{leader.addr, follower.addr, leader.peerAddr()} {
				before := len(app.requests())
				exchange := rawExchangeBody
				if addr == leader.peerAddr() {
					exchange = rawExchangePeer
				}
				code, closed, body := exchange(t, addr, tc.in)
				want := http.StatusBadRequest
				if tc.why == faultTE {
					want = http.StatusNotImplemented // net/http's own answer, before the handler
				}
				if code != want || !closed {
					t.Errorf("%s: %d, closed %v; want %d and closed", addr, code, closed, want)
				}
				if !netHTTPRefuses[tc.name] && !strings.Contains(body, "framing is ambiguous") {
					t.Errorf("%s: answered %q, want the proxy's own answer", addr, body)
				}
				if n := len(app.requests()); n != before {
					t.Errorf("the application got %d requests", n-before)
				}
			}
		})
	}
	// The streamed path (a body longer than BufferSize) too: the fault
	// comes after the request was routed.
	big := strings.Repeat("x", 2<<20)
	in := "POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"200000\r\n" + big + "\r\nzz\r\n" + smuggled
	for _, addr := range []string{leader.addr, follower.addr} {
		code, closed := rawExchange(t, addr, in)
		if code == http.StatusOK || !closed {
			t.Errorf("a streamed body at fault: %d, closed %v", code, closed)
		}
	}
	// An upgrade that does not happen (the application answers 200) ends
	// the connection: what followed it was not parsed.
	up := "GET /up HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
	if code, closed := rawExchange(t, leader.addr, up); code != http.StatusOK || !closed {
		t.Errorf("an upgrade refused: %d, closed %v; want 200 and closed", code, closed)
	}
	// A request sent behind it is refused.
	c2, err := net.Dial("tcp", leader.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(patience))
	io.WriteString(c2, up+smuggled)
	br2 := bufio.NewReader(c2)
	for _, want := range []int{http.StatusOK, http.StatusBadRequest} {
		res, err := http.ReadResponse(br2, nil)
		if err != nil {
			t.Fatalf("behind an upgrade refused: %v", err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != want {
			t.Errorf("behind an upgrade refused: %d, want %d", res.StatusCode, want)
		}
	}
	closed(t, br2)
	mu.Lock()
	for _, p := range paths {
		if p == "/smuggled" {
			t.Error("the application got the hidden request")
		}
	}
	mu.Unlock()
	// Sound requests, pipelined on one connection, are all served.
	c, err := net.Dial("tcp", follower.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(patience))
	io.WriteString(c, framingCases[7].in+"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	for i := range 101 {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("answer %d: %d", i, res.StatusCode)
		}
	}
	// OPTIONS * is answered by the proxy as net/http would.
	if code, _ := rawExchange(t, leader.addr, "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); code != http.StatusOK {
		t.Errorf("OPTIONS *: %d", code)
	}
}

// A streamed body not read to its end, or read to an error, ends its
// connection's parsing after the answer; one read whole does not.
func TestFramingBodyEnds(t *testing.T) {
	whole := func(r io.Reader) { _, _ = io.Copy(io.Discard, r) }
	for _, tc := range []struct {
		name string
		body io.Reader
		read func(io.Reader)
		want string
	}{
		{"read whole", strings.NewReader("hello"), whole, ""},
		{"left unread", strings.NewReader("hello"), func(r io.Reader) { _, _ = r.Read(make([]byte, 2)) }, faultBody},
		{"read to an error", io.MultiReader(strings.NewReader("hel"), iotest.ErrReader(io.ErrUnexpectedEOF)), whole, faultBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &trackedConn{}
			conn.f.on = true
			ctx := context.WithValue(context.Background(), connKey{}, conn)
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", tc.body)
			if !checkFraming(&writer{ResponseWriter: httptest.NewRecorder()}, r, newRec()) {
				t.Fatal("a sound request refused")
			}
			r.Body = watchFraming(r)
			tc.read(r.Body)
			framingDone(r)
			if got := conn.f.fault(); got != tc.want {
				t.Errorf("the next request's fault is %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkFramer is the framer's cost for one typical request head (what
// BenchmarkForward's GET sends, with a browser's usual fields).
//
//	go test -run '^$' -bench Framer ./internal/proxy
func BenchmarkFramer(b *testing.B) {
	head := []byte("GET /api/v1/items?page=2 HTTP/1.1\r\nHost: app.example\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n" +
		"Accept: text/html,application/xhtml+xml\r\nAccept-Encoding: gzip, deflate\r\nAccept-Language: en-GB,en;q=0.9\r\n" +
		"Cookie: session=0123456789abcdef0123456789abcdef\r\nConnection: keep-alive\r\n\r\n")
	f := &framer{on: true, maxHead: 1 << 20}
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		if f.scan(head) != len(head) {
			b.Fatal("a sound head refused")
		}
	}
}
