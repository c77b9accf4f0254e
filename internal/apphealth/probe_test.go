package apphealth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a redirect to another host was followed")
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "electd-health-check" {
			w.WriteHeader(http.StatusTeapot)
		}
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/down", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("x"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/bighead", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("x", 2*maxHeaderBytes))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux) // a self-signed certificate, as a probe accepts
	defer tlsSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()

	// /slow and /trickle would answer after 10s and /endless never ends:
	// their outcomes show that the timeout and the body cap bound a check.
	client := NewClient(300 * time.Millisecond)
	for _, tc := range []struct {
		url    string
		result Result
		detail string
	}{
		{srv.URL + "/ok", Success, "HTTP 200 OK"},
		{tlsSrv.URL + "/ok", Success, "HTTP 200 OK"},
		{srv.URL + "/empty", Success, "HTTP 204 No Content"},
		{srv.URL + "/moved", Failure, "HTTP 503 Service Unavailable"},
		{srv.URL + "/away", Success, "HTTP 302 Found"},
		{srv.URL + "/loop", Error, "stopped after 10 redirects"},
		{srv.URL + "/down", Failure, "HTTP 503 Service Unavailable"},
		{srv.URL + "/missing", Failure, "HTTP 404 Not Found"},
		{srv.URL + "/slow", Timeout, "timed out"},
		{srv.URL + "/trickle", Timeout, "timed out"},
		{srv.URL + "/endless", Success, "HTTP 200 OK"},
		{srv.URL + "/bighead", Error, "header"},
		{closed, Error, "connection refused"},
	} {
		t.Run(strings.TrimPrefix(tc.url, "http://"), func(t *testing.T) {
			res, detail := probe(context.Background(), client, tc.url)
			if res != tc.result || !strings.Contains(detail, tc.detail) {
				t.Errorf("probe = %s %q, want %s with %q", res, detail, tc.result, tc.detail)
			}
			if strings.Contains(detail, tc.url) {
				t.Errorf("detail %q repeats the URL", detail)
			}
		})
	}
}

func TestDetailIsOneShortLine(t *testing.T) {
	got := detail("a\nb\x1b[2J" + strings.Repeat("é", 200))
	if strings.ContainsAny(got, "\n\x1b") || len(got) > maxDetail+3 || !strings.HasSuffix(got, "...") {
		t.Errorf("detail = %q", got)
	}
	if !strings.HasPrefix(got, "a b [2J") {
		t.Errorf("detail = %q", got)
	}
}
