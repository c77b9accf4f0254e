package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/electd/electd/internal/election/electiontest"
)

// Probes hit these endpoints every second on every pod.

func benchmarkGet(b *testing.B, target string) {
	h := newTestRouter(electiontest.New(leaderSt), Options{})
	req := httptest.NewRequest(http.MethodGet, target, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", target, rec.Code)
		}
	}
}

func BenchmarkHealthzLeader(b *testing.B) { benchmarkGet(b, "/healthz/leader") }

func BenchmarkLeader(b *testing.B) { benchmarkGet(b, "/leader") }
