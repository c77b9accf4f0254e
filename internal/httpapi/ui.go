package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electd/electd/internal/api"
)

// The status page (GET /) and its script and style, embedded in the binary.
// The server draws the page with the values of the moment. So curl, a
// text browser or a page without JavaScript shows them. ui/index.html is an
// html/template: it escapes every value, since whoever may write the
// election path writes ids and addresses. The script then keeps the values
// current from the API with the browser's own requests.
//
//go:embed ui/index.html ui/app.js ui/app.css
var uiFiles embed.FS

// pageCSP lets the page run only its own script and style. It talks only
// to its own origin (the API and /events). It loads nothing else (no images,
// fonts or frames), and nobody may frame it. A value that slipped into the
// page as HTML could not run, load or send anything.
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
func routeUI(r chi.Router, page statusPage) {
	page.tmpl = template.Must(template.ParseFS(uiFiles, "ui/index.html")) // a bad template fails every test
	get(r, "/", page.serve)
	for _, a := range []struct{ pattern, file, ctype string }{
		{"/ui/app.js", "ui/app.js", "text/javascript; charset=utf-8"},
		{"/ui/app.css", "ui/app.css", "text/css; charset=utf-8"},
	} {
		get(r, a.pattern, newAsset(a.file, a.ctype).serve)
	}
}

// statusPage draws GET / from the readers behind the endpoints the script
// asks. /leader, /healthz/leader and /history come from memory.
// /participants comes from ZooKeeper, under that endpoint's own cap.
type statusPage struct {
	el        Election
	now       func() time.Time
	log       *slog.Logger
	candidacy Candidacy
	proxy     func() *api.ProxyStatus
	history   HistoryReader
	readers   capped // shared with GET /participants
	tmpl      *template.Template
}

func (p statusPage) serve(w http.ResponseWriter, r *http.Request) {
	st := p.el.Status()
	l := newLeaderBody(st, p.now)
	selfCandidacy(&l.Self, p.candidacy)
	withProxy(&l, p.proxy)
	ps, psErr := p.queue(r)
	var hs []api.HistoryEntry
	hsErr := "no such endpoint: /history"
	if p.history != nil {
		hsErr = ""
		for _, e := range p.history.Last(historyShown) {
			hs = append(hs, newHistoryJSON(e))
		}
	}
	v := newPageView(l, newLeaderHealthBody(st), st.SessionTimeout, ps, psErr, hs, hsErr, p.now())
	var b bytes.Buffer
	if err := p.tmpl.Execute(&b, v); err != nil { // a programming error: the tests draw every branch
		writeError(w, http.StatusInternalServerError, "cannot draw the status page: "+err.Error())
		return
	}
	h := w.Header()
	pageHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store") // it says who leads now, as /leader
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes()) // an error means the client went away
	}
}

// queue reads the queue as GET /participants does, or says why it cannot.
// Past that endpoint's cap the page is drawn without the queue, not
// refused.
func (p statusPage) queue(r *http.Request) ([]api.Participant, string) {
	done, ok := p.readers.try(r)
	if !ok {
		return nil, p.readers.refusal()
	}
	defer done()
	ctx, cancel := context.WithTimeout(r.Context(), participantsTimeout)
	defer cancel()
	ps, err := p.el.Participants(ctx)
	if err != nil {
		p.log.Warn("GET / could not read the participants", "err", err)
		return nil, "cannot read the participants from ZooKeeper: " + err.Error()
	}
	return participantsJSON(ps), ""
}

func newAsset(file, ctype string) asset {
	b, err := uiFiles.ReadFile(file)
	if err != nil {
		panic("httpapi: " + file + " is not embedded: " + err.Error()) // the go:embed line names it
	}
	sum := sha256.Sum256(b)
	return asset{name: file, ctype: ctype, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// serve answers with the file, no-cache with an ETag. A browser asks again
// each time, since a new electd version serves a new page. It gets 304
// when the file did not change.
func (a asset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	pageHeaders(h)
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}

// pageHeaders are the page's and its files' security headers.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
