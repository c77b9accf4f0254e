package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/candidacy"
)

// Candidacy is the daemon's control of whether this participant stands
// (internal/candidacy.Controller): the operator's setting and the
// application's health.
type Candidacy interface {
	// State is computed from memory.
	State() candidacy.State
	// SetOperator records the operator's setting and applies it, or
	// returns ctx's error with the change still pending.
	SetOperator(ctx context.Context, candidate bool) (candidacy.State, error)
}

// Bounds of POST /candidacy, the one endpoint that reads a body.
const (
	// maxCandidacyBody is far more than {"candidate": false} with any
	// white space a person or a tool would add.
	maxCandidacyBody = 256
	// bodyReadTimeout bounds how long the body may take to arrive; it is
	// read only after the token was checked.
	bodyReadTimeout = 5 * time.Second
	// candidacyTimeout bounds the wait for the change: a withdrawn leader
	// hands over first (milliseconds when ZooKeeper answers).
	candidacyTimeout = 10 * time.Second
)

func newCandidacyBody(st statusReader, c Candidacy) api.Candidacy {
	s, es := c.State(), st.Status()
	return api.Candidacy{
		ID: es.ID, Candidate: s.Operator, Standing: es.Candidate, Pending: s.Pending,
		AppHealth: string(s.App), AppDetail: s.AppDetail, Reason: es.Reason,
	}
}

// getCandidacy serves GET /candidacy, from memory.
func getCandidacy(el statusReader, c Candidacy) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, newCandidacyBody(el, c))
	}
}

// takesBody reports whether r is POST /candidacy, the one request with a
// body. noBody lets it through; postCandidacy bounds it.
func takesBody(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/candidacy"
}

// postCandidacy serves POST /candidacy. {"candidate": false} withdraws this
// participant; a leader hands over as on release. {"candidate": true} lets
// it stand again, at the back of the queue. The answer is 200 once the
// election has it. It is 202 with "pending": true when that takes longer
// than candidacyTimeout; the setting holds and electd keeps applying it.
func postCandidacy(el statusReader, c Candidacy, token string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !admit(w, r, token, log) {
			dropBody(w)
			return
		}
		want, code, msg := readCandidacy(w, r)
		if code != 0 {
			dropBody(w)
			writeError(w, code, msg)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), candidacyTimeout)
		defer cancel()
		s, err := c.SetOperator(ctx, want)
		log.Info("candidacy set on request", "candidate", want, "standing", s.Standing, "remote", r.RemoteAddr, "err", err)
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, newCandidacyBody(el, c))
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			writeJSON(w, http.StatusAccepted, newCandidacyBody(el, c))
		default:
			writeError(w, http.StatusServiceUnavailable, "candidacy recorded, not applied yet: "+err.Error())
		}
	}
}

// readCandidacy reads and checks the body: one JSON object with the one
// key "candidate", a boolean. On a bad body it returns a 4xx code and why.
func readCandidacy(w http.ResponseWriter, r *http.Request) (want bool, code int, msg string) {
	tooLarge := "the body is larger than " + strconv.Itoa(maxCandidacyBody) + ` bytes; send {"candidate": false} or {"candidate": true}`
	if r.ContentLength > maxCandidacyBody {
		return false, http.StatusRequestEntityTooLarge, tooLarge
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout)) // a test recorder cannot
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCandidacyBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return false, http.StatusRequestEntityTooLarge, tooLarge
	case err != nil:
		return false, http.StatusBadRequest, "cannot read the body: " + err.Error()
	}
	var req api.CandidacyRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return false, http.StatusBadRequest, `the body is not {"candidate": true|false}: ` + jsonProblem(err)
	}
	if dec.More() || dec.InputOffset() != int64(len(bytes.TrimRight(b, " \t\r\n"))) {
		return false, http.StatusBadRequest, `the body holds more than one JSON value; send {"candidate": true|false}`
	}
	if req.Candidate == nil {
		return false, http.StatusBadRequest, `"candidate" is missing; send {"candidate": true|false}`
	}
	return *req.Candidate, 0, ""
}

// jsonProblem says what is wrong with a body that did not decode, in JSON
// terms. encoding/json's own messages name the Go struct and fields.
func jsonProblem(err error) string {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("%q is a JSON %s, not true or false", typ.Field, typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s, not an object", typ.Value)
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return "it is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	}
	return strings.TrimPrefix(err.Error(), "json: ") // an unknown field: `unknown field "x"`
}

// dropBody gives up on the rest of a refused request's body, as noBody
// does. The server stops reading at once and closes after the answer. A
// client that announced a body and never sends it then holds nothing.
func dropBody(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // a test recorder cannot
	w.Header().Set("Connection", "close")
}

// admit checks the admin token of a mutating request and reports whether
// it may go on. It answers 403 when no token is configured, 401 when it is
// missing or wrong.
func admit(w http.ResponseWriter, r *http.Request, token string, log *slog.Logger) bool {
	if token == "" {
		writeError(w, http.StatusForbidden, tokenDisabled)
		return false
	}
	if msg, challenge := checkBearer(r, token); msg != "" {
		log.Warn(r.Method+" "+r.URL.Path+" refused", "remote", r.RemoteAddr, "reason", msg)
		w.Header().Set("WWW-Authenticate", challenge)
		writeError(w, http.StatusUnauthorized, msg)
		return false
	}
	return true
}

// selfCandidacy fills /leader's self.app_healthy: left out without
// app.health_url (or a nil c), false until the first check passed.
func selfCandidacy(s *api.Self, c Candidacy) {
	if c == nil {
		return
	}
	if st := c.State(); st.App != candidacy.AppDisabled {
		healthy := st.App == candidacy.AppHealthy
		s.AppHealthy = &healthy
	}
}
