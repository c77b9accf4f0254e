package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// The status page (GET /) and its script and style, embedded in the binary.
// The page is static: everything it shows it reads from the API with the
// browser's own requests, so the server never puts a value into HTML.
//
//go:embed ui/index.html ui/app.js ui/app.css
var uiFiles embed.FS

// pageCSP lets the page run its own script and style only, talk to its own
// origin only (the API and /events), load nothing else (no images, fonts or
// frames), and be framed by nobody: a value that slipped into the page as
// HTML could neither run, nor load anything, nor send anything away.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	name  string // for http.ServeContent's Range and conditional handling
	ctype string
	body  []byte
	etag  string
}

// routeUI serves the status page at GET / and its files under /ui/.
func routeUI(r chi.Router) {
	for _, a := range []struct{ pattern, file, ctype string }{
		{"/", "ui/index.html", "text/html; charset=utf-8"},
		{"/ui/app.js", "ui/app.js", "text/javascript; charset=utf-8"},
		{"/ui/app.css", "ui/app.css", "text/css; charset=utf-8"},
	} {
		get(r, a.pattern, newAsset(a.file, a.ctype).serve)
	}
}

func newAsset(file, ctype string) asset {
	b, err := uiFiles.ReadFile(file)
	if err != nil {
		panic("httpapi: " + file + " is not embedded: " + err.Error()) // the go:embed line names it
	}
	sum := sha256.Sum256(b)
	return asset{name: file, ctype: ctype, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// serve answers with the file. no-cache with an ETag: a browser asks again
// each time (a new electd version serves a new page) and gets 304 when the
// file did not change.
func (a asset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
