package follow

// The application the tests of app health put next to each electd.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// app is a small application next to one electd: its /healthz answers 200
// or 503 as the test says.
type app struct {
	srv     *httptest.Server
	healthy atomic.Bool
}

func startApp(t *testing.T, healthy bool) *app {
	t.Helper()
	a := &app{}
	a.healthy.Store(healthy)
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.healthy.Load() {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *app) url() string { return a.srv.URL + "/healthz" }
