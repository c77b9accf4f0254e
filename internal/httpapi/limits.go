package httpapi

import (
	"net/http"
	"strconv"
	"time"
)

// WriteTimeout is how long writing one answer may take. The server sets it
// as http.Server.WriteTimeout; the handlers that outlive it (/events and
// ?wait= long polls) move the write deadline themselves before they write,
// so a client that stops reading is dropped after WriteTimeout instead of
// holding its goroutine for ever.
const WriteTimeout = 10 * time.Second

// Defaults of the caps in Options (docs/design/http-contract.md, "HTTP API": past a cap
// the answer is 503 with Retry-After; the probes never count against one).
const (
	DefaultMaxStreams = 64
	DefaultMaxWaiters = 64
	// maxParticipants caps concurrent GET /participants: the one read
	// endpoint that asks ZooKeeper, so that outsiders cannot make electd
	// send ZooKeeper an unbounded number of reads at once.
	maxParticipants = 8
	// retryAfter is the Retry-After of an answer refused at a cap.
	retryAfter = 5 * time.Second
)

// slots is a counting semaphore that never waits: a request that finds
// every slot taken is refused at once, so a flood costs one short answer
// per request instead of a goroutine held for the length of a stream.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

func (s slots) take() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s slots) give() { <-s }

// capped runs a held request (a stream or a long poll) in one of s's slots.
// Past the cap it answers 503 with Retry-After and calls refused(reason).
// held, when the server set it, learns that the request is bounded by a
// cap now, so the connection-level eviction leaves it alone.
type capped struct {
	s       slots
	reason  string // the cap's name for Options.Refused: "streams", ...
	what    string // what is counted, for the error: "/events clients", ...
	held    func(*http.Request) func()
	refused func(reason string)
}

// enter takes a slot or answers the refusal; on true the caller must call
// the returned function when the request ends.
func (c capped) enter(w http.ResponseWriter, r *http.Request) (func(), bool) {
	done, ok := c.try(r)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
		writeError(w, http.StatusServiceUnavailable, c.refusal())
	}
	return done, ok
}

// try takes a slot, or counts the refusal and leaves the answer to the
// caller; on true the caller must call the returned function when done.
func (c capped) try(r *http.Request) (func(), bool) {
	if !c.s.take() {
		c.refused(c.reason)
		return nil, false
	}
	unhold := c.held(r)
	return func() {
		unhold()
		c.s.give()
	}, true
}

// refusal says why a request was refused at the cap.
func (c capped) refusal() string {
	return "too many " + c.what + " (the limit is " + strconv.Itoa(cap(c.s)) + "); retry later"
}

// noBody refuses every request that carries a body, except POST
// /candidacy's (takesBody), which reads its own with the same care.
// net/http would otherwise try to read (and discard) the body before it
// answers or reuses the connection, so a client that announces a body and
// never sends it would get no answer and hold a goroutine, and make a
// graceful shutdown wait for it. The answer says Connection: close and the
// read deadline is moved to now, so the server gives up on the body at once.
func noBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || takesBody(r) {
			next.ServeHTTP(w, r)
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // not supported: a test recorder
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, r.Method+" "+r.URL.Path+" takes no request body")
	})
}

// extendWrite gives the answer that follows a long wait its own WriteTimeout.
func extendWrite(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout)) // not supported: a test recorder
}
