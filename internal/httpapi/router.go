// Package httpapi serves electd's HTTP API (docs/design/http-contract.md, "HTTP API"): who
// leads, whether this participant leads, liveness, readiness, the queue,
// a stream of changes, an admin release, the recent transitions, and a
// status page for people (GET /) built on the rest.
//
// Every answer on /leader, /healthz* and /metrics comes from memory
// (Election.Status, the metrics handler): none waits on ZooKeeper.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election"
)

// Election is the narrow view of the election the HTTP layer needs.
// *election.Elector satisfies it.
type Election interface {
	// Status is computed from memory and lease-checked at call time.
	Status() election.Status
	// Observe sends the current status at once, then one per change; the
	// channel is closed when ctx ends.
	Observe(ctx context.Context) <-chan election.Status
	// Await blocks until this participant leads or ctx ends.
	Await(ctx context.Context) (<-chan struct{}, error)
	// Release gives leadership up; election.ErrNotLeader on a follower.
	Release(ctx context.Context) error
	// Participants reads the queue from ZooKeeper, in queue order.
	Participants(ctx context.Context) ([]election.Participant, error)
}

// Options configures NewRouter. The zero value serves every read-only
// endpoint with the defaults below and refuses the mutating ones.
type Options struct {
	// AdminToken is the bearer token of the mutating endpoints
	// (POST /leader/release). Empty disables them: 403.
	AdminToken string
	// Metrics is served at GET /metrics; nil answers 404.
	Metrics http.Handler
	// Live reports liveness for /healthz: nil error while the daemon's
	// loops are alive. It must not depend on ZooKeeper or the election
	// (that is /readyz). A nil Live is always alive.
	Live func() error
	// Logger receives request-level warnings. Default: discard.
	Logger *slog.Logger
	// Clock stamps observed_at when a status carries none. Default:
	// clock.Real().
	Clock clock.Clock
	// KeepAlive is the interval of the comment line on /events. Default 15s.
	KeepAlive time.Duration
	// MaxWait is the longest ?wait= on /healthz/leader. Default 5m.
	MaxWait time.Duration
	// MaxStreams caps concurrent GET /events clients; past it 503 with
	// Retry-After. Default DefaultMaxStreams.
	MaxStreams int
	// MaxWaiters caps concurrent GET /healthz/leader?wait= long polls that
	// wait; past it 503 with Retry-After. Default DefaultMaxWaiters.
	MaxWaiters int
	// Held, if set, is called when a request becomes a held one (a stream
	// or a long poll admitted under its cap) and returns the function to
	// call when it ends. The server uses it to tell a connection that is
	// bounded by these caps from one it may evict. Default: nothing.
	Held func(r *http.Request) (end func())
	// Refused, if set, is called with the cap's name ("streams",
	// "waiters" or "participants") each time a request is refused at it.
	Refused func(reason string)
	// Candidacy serves GET and POST /candidacy and /leader's
	// self.candidate and self.app_healthy; nil serves none of them.
	Candidacy Candidacy
	// Switchover serves POST /leader/release?to=; nil answers it 501.
	Switchover Switcher
	// Kubernetes, when set, is the leader label and Lease mirror's state,
	// shown under "kubernetes" on GET /leader; nil, or a nil state: no
	// mirror.
	Kubernetes func() *api.KubeStatus
	// Proxy, when set, is the forwarding proxy's state, shown under
	// "proxy" on GET /leader and in every /events event; nil, or a nil
	// state: no proxy.
	Proxy func() *api.ProxyStatus
	// History serves GET /history, the recent transitions the status page
	// (GET /) shows; nil answers 404.
	History HistoryReader
}

// Defaults of Options.
const (
	DefaultKeepAlive = 15 * time.Second
	DefaultMaxWait   = 5 * time.Minute
)

// Bounds of the endpoints that may wait on ZooKeeper.
const (
	participantsTimeout = 5 * time.Second
	releaseTimeout      = 10 * time.Second
)

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Live == nil {
		o.Live = func() error { return nil }
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxWaiters <= 0 {
		o.MaxWaiters = DefaultMaxWaiters
	}
	if o.Held == nil {
		o.Held = func(*http.Request) func() { return func() {} }
	}
	if o.Refused == nil {
		o.Refused = func(string) {}
	}
	return o
}

// NewRouter builds the whole HTTP API on el.
func NewRouter(el Election, opts Options) http.Handler {
	opts = opts.withDefaults()
	limit := func(n int, reason, what string) capped {
		return capped{s: newSlots(n), reason: reason, what: what, held: opts.Held, refused: opts.Refused}
	}
	r := chi.NewRouter()
	// Set before any Group or Use: inline routers copy these when created.
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed(r))
	r.Use(noBody)
	// One cap for every reader of the queue from ZooKeeper: /participants
	// and the status page.
	readers := limit(maxParticipants, "participants", "requests on /participants")

	r.Group(func(r chi.Router) {
		r.Use(noStore)
		get(r, "/leader", leader(el, opts.Clock.Now, opts.Candidacy, opts.Kubernetes, opts.Proxy))
		get(r, "/healthz", healthz(opts.Live))
		get(r, "/healthz/leader", healthzLeader(el, opts.MaxWait, limit(opts.MaxWaiters, "waiters", "waiters on /healthz/leader")))
		get(r, "/readyz", readyz(el))
		get(r, "/participants", participants(el, opts.Logger, readers))
		r.Post("/leader/release", withSwitchover(release(el, opts.AdminToken, opts.Logger), el, opts.Switchover, opts.AdminToken, opts.Logger))
		if opts.Candidacy != nil {
			get(r, "/candidacy", getCandidacy(el, opts.Candidacy))
			r.Post("/candidacy", postCandidacy(el, opts.Candidacy, opts.AdminToken, opts.Logger))
		}
		if opts.History != nil {
			get(r, "/history", historyHandler(opts.History))
		}
	})
	routeUI(r, statusPage{
		el: el, now: opts.Clock.Now, log: opts.Logger, candidacy: opts.Candidacy,
		proxy: opts.Proxy, history: opts.History, readers: readers,
	})
	get(r, "/events", events(el, opts.Clock.Now, opts.KeepAlive, opts.Logger, limit(opts.MaxStreams, "streams", "/events clients"), opts.Candidacy, opts.Proxy))
	if opts.Metrics != nil {
		get(r, "/metrics", opts.Metrics.ServeHTTP)
	}
	return r
}

// get serves h on GET and HEAD (probes and curl -I).
func get(r chi.Router, pattern string, h http.HandlerFunc) {
	r.Get(pattern, h)
	r.Head(pattern, h)
}

// noStore keeps caches from serving a stale answer about leadership.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
}

// allMethods are the methods a route may be registered for, in Allow order.
var allMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// methodNotAllowed answers 405 with the Allow header chi leaves out when the
// handler is custom. It asks mux which methods the path has.
func methodNotAllowed(mux *chi.Mux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		var allowed []string
		for _, m := range allMethods {
			if mux.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) == 0 {
			notFound(w, r)
			return
		}
		list := strings.Join(allowed, ", ")
		w.Header().Set("Allow", list)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path+"; allowed: "+list)
	}
}
