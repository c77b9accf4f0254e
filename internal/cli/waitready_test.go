package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// readyAfter serves /readyz: 503 for the first n questions, then 200.
func readyAfter(t *testing.T, n int32) (*httptest.Server, *atomic.Int32) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if asked.Add(1) <= n {
			writeRaw(w, http.StatusServiceUnavailable, `{"ready":false,"joined":false,"state":"connected","reason":"not joined"}`)
			return
		}
		writeRaw(w, http.StatusOK, `{"ready":true,"joined":true,"state":"connected","node":"n","reason":"joined"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func TestWaitReady(t *testing.T) {
	t.Run("asks again until 200", func(t *testing.T) {
		srv, asked := readyAfter(t, 2)
		code, out, errOut := runCLI(t, context.Background(), nil, "wait-ready", "--addr", srv.URL, "--every", "1ms")
		if code != exitOK || out != "ready: joined\n" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and the reason", code, out, errOut)
		}
		if got := asked.Load(); got != 3 {
			t.Errorf("asked %d times, want 3", got)
		}
	})
	t.Run("no answer yet is asked again", func(t *testing.T) {
		srv, _ := readyAfter(t, 0)
		srv.Listener.Close() // refused, as before electd listens
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		code, _, errOut := runCLI(t, ctx, nil, "wait-ready", "--addr", srv.URL, "--every", "1ms")
		if code != exitFailed || !strings.Contains(errOut, "interrupted") {
			t.Errorf("exit %d, stderr %q; want 1, interrupted", code, errOut)
		}
	})
	t.Run("bad --every", func(t *testing.T) {
		code, _, errOut := runCLI(t, context.Background(), nil, "wait-ready", "--every", "0s")
		if code != exitUsage || !strings.Contains(errOut, "--every") {
			t.Errorf("exit %d, stderr %q; want 2 naming --every", code, errOut)
		}
	})
}
