package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The owned names leave a request in every form but their own, and their
// own from a sender not trusted with them (docs/design/proxy-app.md, "Fencing and
// forwarding headers").
func TestCleanHeaders(t *testing.T) {
	in := func() http.Header {
		return http.Header{
			"X-Forwarded-For": {"6.6.6.6"}, "X_Forwarded_For": {"6.6.6.6"}, "X_forwarded_proto": {"https"},
			"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil"}, "X_Forwarded_Host": {"evil"},
			"Forwarded": {"for=6.6.6.6"}, "X-Real-Ip": {"6.6.6.6"}, "X_Real_Ip": {"6.6.6.6"},
			"X-Request-Id": {"id-1"}, "X_Request_Id": {"id-2"}, "Electd-Fencing-Token": {"999999"},
			"Electd_Leader_Id": {"evil"}, "Content-Type": {"text/plain"}, "X-Forwarded-Forx": {"kept"},
		}
	}
	for _, tc := range []struct {
		name    string
		trusted bool
		want    []string
	}{
		{"a client", false, []string{"Content-Type", "X-Forwarded-Forx", "X-Request-Id"}},
		{"a trusted proxy or a peer", true, []string{"Content-Type", "Forwarded", "X-Forwarded-For", "X-Forwarded-Forx",
			"X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "X-Request-Id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := in()
			cleanHeaders(h, tc.trusted)
			if got := slices.Sorted(mapKeys(h)); !slices.Equal(got, tc.want) {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
}

// Trailers cannot add any field the proxy owns, in any form, from anyone.
func TestCleanTrailers(t *testing.T) {
	tr := http.Header{
		"Electd-Fencing-Token": {"999999"}, "Electd-Leader-Id": {"evil"}, "X-Forwarded-For": {"6.6.6.6"},
		"X_forwarded_proto": {"https"}, "Forwarded": {"for=6.6.6.6"}, "X-Real-Ip": {"6.6.6.6"},
		"X-Request-Id": {"id"}, "X-Sum": {"42"}, "Grpc-Status": {"0"},
	}
	cleanTrailers(tr)
	if got, want := slices.Sorted(mapKeys(tr)), []string{"Grpc-Status", "X-Sum"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	cleanTrailers(nil) // a request without trailers
}

// An offer to switch to HTTP/2 is withdrawn; another protocol's is kept.
func TestDropH2CUpgrade(t *testing.T) {
	for _, tc := range []struct {
		upgrade []string
		want    []string
	}{
		{[]string{"h2c"}, nil},
		{[]string{"H2C"}, nil},
		{[]string{"h2c, websocket"}, []string{"websocket"}},
		{[]string{"websocket"}, []string{"websocket"}},
		{nil, nil},
	} {
		h := http.Header{"Http2-Settings": {"AAMAAABkAARAAAAAAAIAAAAA"}}
		if tc.upgrade != nil {
			h["Upgrade"] = tc.upgrade
		}
		dropH2CUpgrade(h)
		if got := h["Upgrade"]; !slices.Equal(got, tc.want) || h.Get("Http2-Settings") != "" {
			t.Errorf("Upgrade %q: %q and HTTP2-Settings %q, want %q", tc.upgrade, got, h.Get("Http2-Settings"), tc.want)
		}
	}
}

func mapKeys(h http.Header) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}
}

// fullApp is an application that records every request's headers and
// trailers (read once its body is) and its protocol.
type fullApp struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request // Header and Trailer cloned; Body nil
}

func newFullApp(t *testing.T, h2c bool) *fullApp {
	a := &fullApp{}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		c := &http.Request{Proto: r.Proto, ProtoMajor: r.ProtoMajor, Header: r.Header.Clone(), Trailer: r.Trailer.Clone()}
		a.mu.Lock()
		a.got = append(a.got, c)
		a.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	if h2c {
		a.Config.Protocols = new(http.Protocols)
		a.Config.Protocols.SetHTTP1(true)
		a.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *fullApp) addr() string { return a.Listener.Addr().String() }

func (a *fullApp) last(t *testing.T) *http.Request {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		t.Fatal("the application got nothing")
	}
	return a.got[len(a.got)-1]
}

// forgedTrailers are what a client tries to add after its body.
var forgedTrailers = map[string]string{
	"Electd-Fencing-Token": "999999", "Electd-Leader-Id": "evil", "X-Forwarded-For": "6.6.6.6",
	"X-Forwarded-Proto": "https", "X_Forwarded_Host": "evil.example", "X-Request-Id": "forged-id",
}

// forgedPost is a chunked POST whose trailers carry forgedTrailers (and an
// honest X-Sum), with the underscore forms of the forwarding headers.
func forgedPost(t *testing.T, url string) *http.Request {
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, url, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header["X_Forwarded_For"] = []string{"6.6.6.6"}
	req.Header["X_Forwarded_Proto"] = []string{"https"}
	req.Header["X_Forwarded_Host"] = []string{"evil.example"}
	req.Header["X_Real_Ip"] = []string{"6.6.6.6"}
	req.Trailer = http.Header{"X-Sum": nil}
	for k := range forgedTrailers {
		req.Trailer[k] = nil
	}
	go func() {
		io.WriteString(pw, "a body")
		req.Trailer.Set("X-Sum", "42")
		for k, v := range forgedTrailers {
			req.Trailer[k] = []string{v}
		}
		pw.Close()
	}()
	return req
}

// checkClean fails t for any forged value the application got, and wants
// the honest trailer.
func checkClean(t *testing.T, via string, r *http.Request) {
	t.Helper()
	for _, h := range []http.Header{r.Header, r.Trailer} {
		for k, vs := range h {
			for _, v := range vs {
				if v == "6.6.6.6" || v == "999999" || v == "evil" || v == "evil.example" || v == "https" || v == "forged-id" ||
					strings.Contains(k, "_") {
					t.Errorf("via %s: the application got %s: %q", via, k, v)
				}
			}
		}
	}
	if got := r.Trailer.Get("X-Sum"); got != "42" {
		t.Errorf("via %s: trailer X-Sum %q, want 42", via, got)
	}
}

// Must have 3 of issue 37: forged trailers and the underscore forms of the
// forwarding headers reach no application, from a client of the leader's
// proxy or a follower's, over HTTP/1.1 and h2c.
func TestHTTPOwnedFieldsFromClients(t *testing.T) {
	baseline(t)
	app := newFullApp(t, false)
	b := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	for _, via := range []struct {
		name, addr string
		client     *http.Client
	}{
		{"the leader's proxy, HTTP/1.1", b.addr, newClient(t)}, {"a follower's proxy, HTTP/1.1", a.addr, newClient(t)},
		{"the leader's proxy, h2c", b.addr, h2cClient(t)}, {"a follower's proxy, h2c", a.addr, h2cClient(t)},
	} {
		res, err := via.client.Do(forgedPost(t, "http://"+via.addr+"/w"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("via %s: %s", via.name, res.Status)
		}
		r := app.last(t)
		checkClean(t, via.name, r)
		if r.Header.Get(HeaderFencingToken) != "7" || r.Header.Get("X-Forwarded-For") != "127.0.0.1" {
			t.Errorf("via %s: token %q, X-Forwarded-For %q", via.name, r.Header.Get(HeaderFencingToken), r.Header.Get("X-Forwarded-For"))
		}
	}
}

// From the peer port, a forward's forwarding headers are the peer's (it
// set them) and kept; their other forms and every owned trailer go.
func TestHTTPOwnedFieldsFromAPeer(t *testing.T) {
	baseline(t)
	app := newFullApp(t, false)
	b := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{})
	// HTTP/2 inside the peers' TLS, as a follower's proxy forwards.
	req := forgedPost(t, "https://"+b.peerAddr()+"/w")
	setForward(req.Header, leading("b", 7), time.Second, "peer-id", false)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	res, err := newPeerH2Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtoMajor != 2 {
		t.Fatalf("the peer port answered in %s, want HTTP/2", res.Proto)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s", res.Status)
	}
	r := app.last(t)
	checkClean(t, "the peer port", r)
	if got := r.Header.Get("X-Forwarded-For"); got != "203.0.113.9" {
		t.Errorf("X-Forwarded-For %q, want the peer's", got)
	}
	if got := r.Header.Get("X-Request-Id"); got != "peer-id" {
		t.Errorf("X-Request-Id %q, want the forward's", got)
	}
}

// Must have 7 of issue 37: an h2c client reaches an HTTP/1.1 application
// (the default AppProtocol) as HTTP/1.1, through the leader's proxy and a
// follower's; with AppH2C it stays HTTP/2.
func TestHTTPH2cClientToHTTP1App(t *testing.T) {
	baseline(t)
	for _, tc := range []struct {
		proto AppProtocol
		major int
	}{{AppHTTP1, 1}, {AppH2C, 2}} {
		t.Run(string(tc.proto), func(t *testing.T) {
			app := newFullApp(t, tc.proto == AppH2C)
			b := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{AppProtocol: tc.proto})
			a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
			for _, addr := range []string{b.addr, a.addr} {
				code, body, _ := get(t, h2cClient(t), addr)
				if code != http.StatusOK || body != "ok" {
					t.Fatalf("via %s: %d %q", addr, code, body)
				}
				if got := app.last(t).ProtoMajor; got != tc.major {
					t.Errorf("via %s: the application got HTTP/%d, want HTTP/%d", addr, got, tc.major)
				}
			}
		})
	}
}

// An HTTP/1.1 client's offer to switch to HTTP/2 (Upgrade: h2c) is
// ignored: the request is served as HTTP/1.1, and the application sees
// neither Upgrade nor HTTP2-Settings.
func TestHTTPUpgradeH2CIsIgnored(t *testing.T) {
	baseline(t)
	app := newFullApp(t, true)
	b := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	for _, addr := range []string{b.addr, a.addr} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(patience))
		fmt.Fprint(conn, "GET /x HTTP/1.1\r\nHost: app.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
			"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || res.ProtoMajor != 1 || string(body) != "ok" {
			t.Fatalf("via %s: %s %s %q", addr, res.Proto, res.Status, body)
		}
		r := app.last(t)
		if r.ProtoMajor != 1 || r.Header.Get("Upgrade") != "" || r.Header.Get("Http2-Settings") != "" {
			t.Errorf("via %s: the application got %s, Upgrade %q, HTTP2-Settings %q", addr, r.Proto,
				r.Header.Get("Upgrade"), r.Header.Get("Http2-Settings"))
		}
	}
}

// An answer's trailers lose their Electd-* fields, declared or not, before
// they reach a client of the leader's proxy or a follower's.
func TestHTTPAnswerTrailersLoseElectd(t *testing.T) {
	baseline(t)
	app := newAppProto(t, "b", true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Electd-Fencing-Token, X-Sum")
		io.WriteString(w, "b")
		w.(http.Flusher).Flush() // the trailers come after a body of unknown length
		w.Header().Set("Electd-Fencing-Token", "999999")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"Electd-Leader-Id", "evil")
	})
	b := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{})
	bh2 := startProxy(t, newLead(leading("b", 7)), app.addr(), Config{AppProtocol: AppH2C})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	for _, addr := range []string{b.addr, bh2.addr, a.addr} {
		for _, c := range []*http.Client{newClient(t), h2cClient(t)} {
			res, err := c.Get("http://" + addr + "/x")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(body) != "b" || res.Trailer.Get("X-Sum") != "42" {
				t.Fatalf("via %s: %q, trailers %v", addr, body, res.Trailer)
			}
			for k := range res.Trailer {
				if isElectd(k) {
					t.Errorf("via %s (%s): the client got trailer %s", addr, res.Proto, k)
				}
			}
		}
	}
}
