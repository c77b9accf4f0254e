package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/proxy"
)

// releaser gives leadership up.
type releaser interface {
	statusReader
	Release(ctx context.Context) error
}

const tokenDisabled = "mutating endpoints are disabled: set http.admin_token " +
	"(environment ELECTD_HTTP_ADMIN_TOKEN, flag --http.admin_token) to enable them"

// release serves POST /leader/release: give leadership up and re-queue.
func release(el releaser, token string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			writeError(w, http.StatusForbidden, tokenDisabled)
			return
		}
		if msg, challenge := checkBearer(r, token); msg != "" {
			log.Warn("POST /leader/release refused", "remote", r.RemoteAddr, "reason", msg)
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), releaseTimeout)
		defer cancel()
		ctx, drained := proxy.ReportDrain(ctx)
		err := el.Release(ctx)
		switch {
		case errors.Is(err, election.ErrNotLeader):
			writeError(w, http.StatusConflict, "not the leader")
		case err != nil:
			log.Warn("POST /leader/release failed", "remote", r.RemoteAddr, "err", err)
			writeError(w, http.StatusServiceUnavailable, "release failed: "+err.Error())
		default:
			log.Info("leadership released on request", "remote", r.RemoteAddr)
			writeJSON(w, http.StatusAccepted, api.Release{Released: true, ID: el.Status().ID, Drain: drainOf(drained)})
		}
	}
}

// drainOf is what the forwarding proxy's drain reported under
// proxy.ReportDrain, for the release's answer; nil without a proxy.
func drainOf(report func() (proxy.Drained, bool)) *api.Drain {
	d, ok := report()
	if !ok {
		return nil
	}
	return &api.Drain{WaitedSeconds: d.Waited.Seconds(), InFlight: d.Left}
}

// checkBearer compares the request's bearer token with want in constant
// time (hashes, so not even the length leaks). On failure it returns a
// message and the WWW-Authenticate challenge (RFC 6750, section 3).
func checkBearer(r *http.Request, want string) (msg, challenge string) {
	const realm = `Bearer realm="electd"`
	auth := r.Header.Get("Authorization")
	scheme, got, ok := strings.Cut(auth, " ")
	if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return "missing bearer token: send Authorization: Bearer <http.admin_token>", realm
	}
	g, w := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 {
		return "invalid bearer token", realm + `, error="invalid_token"`
	}
	return "", ""
}
