// Command floorproxy is the forward section's floor (BENCHMARKS.md): a bare
// net/http/httputil.ReverseProxy in a process of its own, in front of the
// address given, listening on a free loopback port that it prints on its
// first line. A hop through it costs what any proxy process costs on the
// machine (two wake-ups of a process and two loopback round trips), so
// electd's forward is judged against it, not against an in-process call.
// It keeps up to 64 idle connections to its target, as electd's proxy does
// (net/http's default of 2 would dial and close a connection for most
// requests from 16 clients at once), and sets the headers electd's proxy
// hands its application (docs/design/proxy-app.md, "Forwarding": the fencing token,
// the leader id, and an X-Request-Id unless the request has one), so that
// one application serves every path the bench times.
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floorproxy host:port")
		os.Exit(2)
	}
	target := &url.URL{Scheme: "http", Host: os.Args[1]}
	prefix := "floor-" + strconv.Itoa(os.Getpid()) + "-"
	var ids atomic.Uint64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Set("Electd-Fencing-Token", "1")
		r.Out.Header.Set("Electd-Leader-Id", "direct")
		if r.Out.Header.Get("X-Request-Id") == "" {
			r.Out.Header.Set("X-Request-Id", prefix+strconv.FormatUint(ids.Add(1), 10))
		}
	}}
	fmt.Fprintln(os.Stderr, http.Serve(ln, rp))
	os.Exit(1)
}
