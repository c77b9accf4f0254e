package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/electd/electd/internal/api"
)

// writeJSON writes v as one line of JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // a programming error: every body here is encodable
		code, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b) // an error means the client went away
}

// writeError writes {"error": msg} with code.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, api.Error{Error: msg})
}

// writeText writes s as text/plain with code.
func writeText(w http.ResponseWriter, code int, s string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(s)))
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s) // an error means the client went away
}
