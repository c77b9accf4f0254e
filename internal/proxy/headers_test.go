package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The first proxy sets the forwarding headers once; what a client sent is
// kept only from a trusted front proxy, with the client's address
// appended (docs/design/proxy-app.md, "Forwarding": forwarding headers).
func TestAdmitForwardingHeaders(t *testing.T) {
	trusted, err := ParseTrusted([]string{"10.0.0.0/8", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote string
		in           http.Header
		want         map[string]string
	}{
		{"a client", "192.0.2.7:5555", http.Header{
			"X-Forwarded-For": {"6.6.6.6"}, "X-Forwarded-Proto": {"https"}, "Forwarded": {"for=6.6.6.6"}, "X-Forwarded-Host": {"evil"},
		}, map[string]string{
			"X-Forwarded-For": "192.0.2.7", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "app.example",
			"Forwarded": "for=192.0.2.7;host=app.example;proto=http",
		}},
		{"a trusted load balancer", "10.1.2.3:5555", http.Header{
			"X-Forwarded-For": {"203.0.113.9"}, "X-Forwarded-Proto": {"https"}, "Forwarded": {`for=203.0.113.9;proto=https`},
			"X-Forwarded-Host": {"shop.example"},
		}, map[string]string{
			"X-Forwarded-For": "203.0.113.9, 10.1.2.3", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example",
			"Forwarded": "for=203.0.113.9;proto=https, for=10.1.2.3;host=app.example;proto=http",
		}},
		{"a trusted IPv6 proxy that sent nothing", "[fd00::1]:443", http.Header{}, map[string]string{
			"X-Forwarded-For": "fd00::1", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "app.example",
			"Forwarded": `for="[fd00::1]";host=app.example;proto=http`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{Header: tc.in, RemoteAddr: tc.remote, Host: "app.example"}
			id := admit(r, trusted)
			for k, v := range tc.want {
				if got := strings.Join(r.Header.Values(k), ", "); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if !saneID(id) || r.Header.Get("X-Request-Id") != id {
				t.Errorf("request id %q, X-Request-Id %q", id, r.Header.Get("X-Request-Id"))
			}
		})
	}
}

// A client's X-Request-Id is the request's id when it is sane; else the
// proxy makes one.
func TestRequestID(t *testing.T) {
	for in, kept := range map[string]bool{
		"abc-123": true, strings.Repeat("x", maxRequestID): true, strings.Repeat("x", maxRequestID+1): false,
		"has space": false, "tab\t": false, "": false, "é": false,
	} {
		r := &http.Request{Header: http.Header{}, RemoteAddr: "127.0.0.1:1"}
		if in != "" {
			r.Header.Set("X-Request-Id", in)
		}
		id := admit(r, nil)
		if (id == in) != kept || !saneID(id) {
			t.Errorf("X-Request-Id %q: id %q, kept %v, want kept %v", in, id, id == in, kept)
		}
	}
}

// A forward's headers round-trip, and anything malformed is refused.
func TestForwardHeaders(t *testing.T) {
	h := http.Header{}
	setForward(h, Route{Election: "/e@0x5", Token: 42}, 1500*time.Millisecond, "req-1", true)
	f, err := readForward(h, 5*time.Second)
	if err != nil || f.election != "/e@0x5" || f.token != 42 || f.hold != 1500*time.Millisecond || f.requestID != "req-1" || !f.h2 {
		t.Fatalf("read back %+v, %v", f, err)
	}
	h.Set(HeaderHold, "60000")
	if f, _ := readForward(h, 5*time.Second); f.hold != 5*time.Second {
		t.Fatalf("a hold past this proxy's own: %v, want 5s", f.hold)
	}
	v := http.Header{}
	setView(v, Route{ID: "b", Token: 9, Addr: "10.0.0.2:4042", Election: "/e@0x5"})
	got, ok := readView(v)
	if !ok || got != (Route{ID: "b", Token: 9, Addr: "10.0.0.2:4042", Election: "/e@0x5"}) {
		t.Fatalf("view %+v %v", got, ok)
	}
	if _, ok := readView(http.Header{}); ok {
		t.Fatal("an answer without Electd-Not-Leader read as a bounce")
	}
}

// Idempotent (RFC 9110, 9.2.2) or declared so with an Idempotency-Key.
func TestIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		header string
		want   bool
	}{
		{"GET", "", true}, {"HEAD", "", true}, {"OPTIONS", "", true}, {"TRACE", "", true},
		{"PUT", "", true}, {"DELETE", "", true}, {"POST", "", false}, {"PATCH", "", false},
		{"POST", "Idempotency-Key", true}, {"PATCH", "X-Idempotency-Key", true},
	} {
		r := &http.Request{Method: tc.method, Header: http.Header{}}
		if tc.header != "" {
			r.Header[tc.header] = []string{"k1"}
		}
		if got := idempotent(r); got != tc.want {
			t.Errorf("%s with %q: %v, want %v", tc.method, tc.header, got, tc.want)
		}
	}
}
