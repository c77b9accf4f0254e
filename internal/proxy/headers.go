package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Headers of the forwarding contract (docs/design/proxy.md, "Forwarding").
const (
	// HeaderFencingToken and HeaderLeaderID are set on every request the
	// leader's proxy hands to its application: the token to fence writes
	// with, and the leader's id. Copies sent by a client are removed.
	HeaderFencingToken = "Electd-Fencing-Token"
	HeaderLeaderID     = "Electd-Leader-Id"
	// HeaderElection names the election a forward is meant for (Route's
	// Election), HeaderLeaderToken the leadership (its fencing token).
	HeaderElection    = "Electd-Election"
	HeaderLeaderToken = "Electd-Leader-Token"
	// HeaderHold is what is left of the hold time, in milliseconds, when a
	// proxy forwards a request: the leader's proxy holds it no longer, so
	// that the client is answered within the hold time it was promised.
	HeaderHold = "Electd-Hold"
	// HeaderRequestID is the request's id, set by the proxy a client sent
	// it to (its X-Request-Id when sane) and given to the application as
	// X-Request-Id.
	HeaderRequestID = "Electd-Request-Id"
	// HeaderClientProto is the client's HTTP version as the first proxy
	// got it ("1.1" or "2"). The leader's proxy no longer chooses its
	// application's protocol by it (Config.AppProtocol does); proxies
	// that did may still read it.
	HeaderClientProto = "Electd-Client-Proto"
	// HeaderTaken is sent by the leader's proxy in an interim 102 answer
	// right before it hands a forward to its application, with the fencing
	// token of the leadership that takes it. Never relayed to a client.
	HeaderTaken = "Electd-Taken"
	// HeaderRequestIDOut is the header the application gets the id in.
	HeaderRequestIDOut = "X-Request-Id"
)

// maxRequestID bounds an id taken from a client's X-Request-Id.
const maxRequestID = 128

// forward is what a peer's forward carries in its headers.
type forward struct {
	election  string
	token     int64
	hold      time.Duration
	requestID string
	h2        bool // the client spoke HTTP/2
}

// readForward reads the forwarding headers of a request that arrived on
// the peer port; anything missing or malformed is an error (400): only a
// proxy sends there.
func readForward(h http.Header, hold time.Duration) (forward, error) {
	f := forward{election: single(h[HeaderElection]), hold: hold, requestID: single(h[HeaderRequestID])}
	if f.election == "" {
		return f, fmt.Errorf("%s: required on a forward", HeaderElection)
	}
	tok, err := strconv.ParseInt(single(h[HeaderLeaderToken]), 10, 64)
	if err != nil || tok <= 0 {
		return f, fmt.Errorf("%s: want one positive fencing token", HeaderLeaderToken)
	}
	f.token = tok
	if v, ok := h[HeaderHold]; ok {
		ms, err := strconv.ParseUint(single(v), 10, 32)
		if err != nil {
			return f, fmt.Errorf("%s: want one whole number of milliseconds", HeaderHold)
		}
		f.hold = min(hold, time.Duration(ms)*time.Millisecond)
	}
	switch single(h[HeaderClientProto]) {
	case "2":
		f.h2 = true
	case "", "1.1", "1.0":
	default:
		return f, fmt.Errorf("%s: want 1.1 or 2", HeaderClientProto)
	}
	if !saneID(f.requestID) {
		f.requestID = ""
	}
	return f, nil
}

// setForward sets the forwarding headers on a request to the leader's
// proxy at route r.
func setForward(h http.Header, r Route, hold time.Duration, id string, h2 bool) {
	h.Set(HeaderElection, r.Election)
	h.Set(HeaderLeaderToken, strconv.FormatInt(r.Token, 10))
	h.Set(HeaderHold, strconv.FormatInt(hold.Milliseconds(), 10))
	h.Set(HeaderRequestID, id)
	proto := "1.1"
	if h2 {
		proto = "2"
	}
	h.Set(HeaderClientProto, proto)
}

// single is the value of a header sent once; "" (which parses as nothing)
// when sent several times.
func single(v []string) string {
	if len(v) != 1 {
		return ""
	}
	return v[0]
}

// stripElectd removes every header named Electd-* (in any case, and with
// '_' for '-', which CGI-style servers read as the same name), so that a
// client can forge neither the fencing headers nor a forward's, and no
// proxy's own reaches a client.
func stripElectd(h http.Header) {
	for k := range h {
		if isElectd(k) {
			delete(h, k)
		}
	}
}

func isElectd(k string) bool {
	return len(k) > 6 && strings.EqualFold(k[:6], "electd") && (k[6] == '-' || k[6] == '_')
}

// unannounceElectd removes the Electd-* names from an answer's Trailer
// header. Their values never follow (upstreamBody removes them), but an
// HTTP/2 answer's announced names cannot be removed from its trailer map
// before its end, and ReverseProxy announces that map's names.
func unannounceElectd(h http.Header) {
	vs, ok := h["Trailer"]
	if !ok {
		return
	}
	var keep []string
	for _, v := range vs {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" && !isElectd(name) {
				keep = append(keep, name)
			}
		}
	}
	if len(keep) == 0 {
		delete(h, "Trailer")
		return
	}
	h["Trailer"] = []string{strings.Join(keep, ", ")}
}

// sender says who may send an owned field in its canonical form.
type sender uint8

const (
	// fromTrusted: a client in TrustedProxies, or a peer's proxy (which
	// set it); from anyone else it is replaced.
	fromTrusted sender = iota
	// fromAnyone: any client, checked where it is read (X-Request-Id:
	// saneID).
	fromAnyone
)

// owned is the one table of the request fields the proxy owns
// (docs/design/proxy-app.md, "Fencing and forwarding headers"), besides every
// Electd-* field, which the proxy alone sets. Any other form of these names
// (CGI and WSGI read '_' as '-': X_Forwarded_For is X-Forwarded-For there)
// is removed from every request, and none of them, in any form, may come
// as a trailer: trailers arrive after the headers were checked, and an
// application that merges them would believe them.
var owned = []struct {
	name string // canonical (http.CanonicalHeaderKey)
	from sender
}{
	{"X-Forwarded-For", fromTrusted},
	{"X-Forwarded-Proto", fromTrusted},
	{"X-Forwarded-Host", fromTrusted},
	{"Forwarded", fromTrusted},
	// Not set by the proxy, but read as the client's address by common
	// stacks (nginx's realip, many frameworks): kept from trusted senders.
	{"X-Real-Ip", fromTrusted},
	{HeaderRequestIDOut, fromAnyone},
}

// ownedAs finds k's entry in owned, by its folded form (any case, '_' for
// '-'); canonical says k is that entry's own spelling.
func ownedAs(k string) (i int, canonical bool) {
	for i, f := range owned {
		if foldEqual(k, f.name) {
			return i, k == f.name
		}
	}
	return -1, false
}

// foldEqual compares header names as CGI-style servers do: case and '_'
// against '-' folded.
func foldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if fold(a[i]) != fold(b[i]) {
			return false
		}
	}
	return true
}

func fold(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	}
	return c
}

// cleanHeaders removes from a request's headers every field the sender may
// not set (owned): Electd-* fields, the owned names in any form but their
// own, and the fromTrusted ones unless trusted (a trusted front proxy, or a
// peer's proxy).
func cleanHeaders(h http.Header, trusted bool) {
	for k := range h {
		if isElectd(k) {
			delete(h, k)
			continue
		}
		if i, canonical := ownedAs(k); i >= 0 && (!canonical || owned[i].from == fromTrusted && !trusted) {
			delete(h, k)
		}
	}
}

// cleanTrailers removes every owned field, in any form, from trailers.
func cleanTrailers(t http.Header) {
	for k := range t {
		if i, _ := ownedAs(k); i >= 0 || isElectd(k) {
			delete(t, k)
		}
	}
}

// trailerGuard is a request body that, when it ends, removes the owned
// fields from the trailers that came with it, before a transport reads
// them: net/http fills r.Trailer in as the body ends (HTTP/1.1: in the
// read that meets the end; HTTP/2: before that read returns), and the
// transport that sends the request on reads it after the body's end.
type trailerGuard struct {
	io.ReadCloser
	r *http.Request
}

func (t *trailerGuard) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err != nil {
		cleanTrailers(t.r.Trailer)
	}
	return n, err
}

// guardTrailers makes r's body clean its trailers at its end, and cleans
// those an HTTP/1.1 request announced (Trailer:), which are not sent on
// then. An HTTP/2 request's map is not touched before its end: the
// server's connection goroutine fills it in, unsynchronised until then.
func guardTrailers(r *http.Request) {
	if r.ProtoMajor == 1 {
		cleanTrailers(r.Trailer)
	}
	if hasBody(r) {
		r.Body = &trailerGuard{ReadCloser: r.Body, r: r}
	}
}

// dropH2CUpgrade withdraws an HTTP/1.1 request's offer to switch to HTTP/2
// (Upgrade: h2c with HTTP2-Settings, RFC 7540 3.2): the proxy serves it as
// the HTTP/1.1 request it also is (docs/design/proxy-app.md, "Any application"), as
// RFC 9113 lets a server do, and the application never sees the offer.
func dropH2CUpgrade(h http.Header) {
	h.Del("Http2-Settings")
	up := h["Upgrade"]
	if len(up) == 0 {
		return
	}
	var keep []string
	for _, v := range up {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" && !strings.EqualFold(tok, "h2c") {
				keep = append(keep, tok)
			}
		}
	}
	if len(keep) == 0 {
		delete(h, "Upgrade")
		return
	}
	h["Upgrade"] = []string{strings.Join(keep, ", ")}
}

// isUpgrade reports a request that asks to switch protocols (WebSocket).
func isUpgrade(h http.Header) bool {
	if h.Get("Upgrade") == "" {
		return false
	}
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// isGRPC reports a gRPC request (its content type is application/grpc or
// application/grpc+codec; gRPC-Web's is not).
func isGRPC(h http.Header) bool {
	ct, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	ct, _, _ = strings.Cut(strings.TrimSpace(ct), "+")
	return strings.EqualFold(ct, "application/grpc")
}

// saneID accepts a request id of 1 to maxRequestID printable ASCII bytes.
func saneID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// admit sets, on a request a client sent to this proxy, what the first
// proxy on its way sets (docs/design/proxy-app.md, "Forwarding": forwarding
// headers): X-Forwarded-For with one entry, the client's address, appended
// to what a trusted front proxy sent (replacing what anyone else sent);
// X-Forwarded-Proto, X-Forwarded-Host and an RFC 7239 Forwarded element
// likewise; and the request's id (the client's X-Request-Id when sane).
// First it removes what the client may not send (cleanHeaders). Peers
// change none of it. It returns the id.
func admit(r *http.Request, trusted []netip.Prefix) string {
	h := r.Header
	ip := remoteIP(r.RemoteAddr)
	cleanHeaders(h, isTrusted(ip, trusted))
	addr := ""
	if ip.IsValid() {
		addr = ip.String()
	}
	// The values set here share one array: one allocation, not one a
	// header. Each keeps its own capacity, so that appending to one
	// never writes over the next.
	vals := make([]string, 0, 5)
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if prior := h.Values("X-Forwarded-For"); len(prior) > 0 && addr != "" {
		set("X-Forwarded-For", strings.Join(prior, ", ")+", "+addr)
	} else if addr != "" {
		set("X-Forwarded-For", addr)
	}
	if h.Get("X-Forwarded-Proto") == "" {
		set("X-Forwarded-Proto", "http")
	}
	if h.Get("X-Forwarded-Host") == "" && r.Host != "" {
		set("X-Forwarded-Host", r.Host)
	}
	elem := forwardedElement(ip, addr, r.Host)
	if prior := h.Values("Forwarded"); len(prior) > 0 {
		set("Forwarded", strings.Join(prior, ", ")+", "+elem)
	} else {
		set("Forwarded", elem)
	}
	id := h.Get(HeaderRequestIDOut)
	if !saneID(id) {
		id = uuid.NewString()
		set(HeaderRequestIDOut, id)
	}
	return id
}

// forwardedElement is this proxy's RFC 7239 element: for, host, proto;
// addr is ip as a string.
func forwardedElement(ip netip.Addr, addr, host string) string {
	var b strings.Builder
	b.Grow(len(addr) + len(host) + 32)
	switch {
	case !ip.IsValid():
		b.WriteString("for=unknown")
	case ip.Is6():
		b.WriteString(`for="[`)
		b.WriteString(addr)
		b.WriteString(`]"`)
	default:
		b.WriteString("for=")
		b.WriteString(addr)
	}
	if host != "" {
		b.WriteString(";host=")
		b.WriteString(quoteForwarded(host))
	}
	b.WriteString(";proto=http")
	return b.String()
}

// quoteForwarded quotes a value unless it is an RFC 7230 token.
func quoteForwarded(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return strconv.Quote(v)
		}
	}
	return v
}

func remoteIP(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	if !ip.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// idempotent reports a request that says it may be repeated: an
// idempotent method (RFC 9110, 9.2.2), or an Idempotency-Key (as net/http's
// transport reads it).
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := r.Header["Idempotency-Key"]
	_, xkey := r.Header["X-Idempotency-Key"]
	return key || xkey
}

func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}
