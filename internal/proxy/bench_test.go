package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// BenchmarkForward measures what a forward adds on loopback, for make
// bench (BENCHMARKS.md): the same small request sent straight to the
// application, through a bare httputil.ReverseProxy (the floor a Go proxy
// starts from), through the leader's proxy, and through a follower's proxy
// and then the leader's. Each reports p50 and p99 of the round trip in
// microseconds besides ns/op; the difference from "direct" is the cost of
// the proxies. With -trace, go tool trace -pprof=sched shows what each
// path waits on.
//
//	go test -run '^$' -bench Forward -benchtime 5000x ./internal/proxy
func BenchmarkForward(b *testing.B) {
	app := newApp(b, "a", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})
	leader := startProxy(b, newLead(leading("a", 1)), app.addr(), Config{Clock: clock.Real()})
	follower := startProxy(b, newLead(following("a", 1, leader.peerAddr())), newApp(b, "b", nil).addr(), Config{Clock: clock.Real()})
	bare := bareProxy(b, app.addr())
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, tc := range []struct{ name, addr string }{
			{"direct", app.addr()},
			{"bare", bare},
			{"leader", leader.addr},
			{"follower", follower.addr},
		} {
			b.Run(method+"/"+tc.name, func(b *testing.B) {
				c := newClient(b)
				send := func() {
					var body io.Reader
					if method == http.MethodPost {
						body = strings.NewReader(`{"op":"write","value":42}`)
					}
					req, _ := http.NewRequest(method, "http://"+tc.addr+"/", body)
					res, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Fatalf("status %d", res.StatusCode)
					}
				}
				for range 100 { // warm the connections
					send()
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					send()
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}

// bareProxy serves a bare httputil.ReverseProxy in front of app until b
// ends, keeping idle connections as the proxy does, and returns its
// address.
func bareProxy(b *testing.B, app string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: maxIdlePerHost}
	target := &url.URL{Scheme: "http", Host: app}
	srv := &http.Server{Handler: &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() {
		_ = srv.Close()
		tr.CloseIdleConnections()
	})
	return ln.Addr().String()
}
