package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/electd/electd/tests/freeport"
)

// Headers electd's forwarding proxy sets on what it hands to its
// application (docs/design/proxy-app.md, "Forwarding": fencing headers), spelled here
// rather than imported: the tests say what an application reads.
const (
	HeaderFencingToken = "Electd-Fencing-Token"
	HeaderLeaderID     = "Electd-Leader-Id"
)

// Fence is the storage every application of one election writes to, as
// docs/design/session-and-faults.md's "The gap, and the fencing token" asks: it refuses a
// token lower than one it has seen. Here it only records: a request that
// carries a token lower than the highest seen, a token already seen at
// another application, or a leader id that is not the application's own,
// is a request answered by a participant that did not lead at that moment.
// It also keeps the ledger of the requests the applications ran, by the
// request id the first proxy gave each (X-Request-Id): one that is not
// safe to repeat (a POST) and ran twice is a violation too.
type Fence struct {
	mu         sync.Mutex
	max        int64
	owner      map[int64]string  // token -> the application that saw it
	ran        map[string]string // request id -> the application that ran it
	violations []string
	stale      []string // a token lower than one seen: violations too, listed first
}

// NewFence returns an empty Fence.
func NewFence() *Fence { return &Fence{owner: map[int64]string{}, ran: map[string]string{}} }

// once records that app ran the request with id and method; a GET may
// be sent again (RFC 9110, 9.2.2), so only other methods are checked.
func (f *Fence) once(app, id, method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch first, ok := f.ran[id]; {
	case id == "":
		f.violations = append(f.violations, app+" got a request without X-Request-Id")
	case ok && method != http.MethodGet:
		f.violations = append(f.violations, fmt.Sprintf("%s %s ran twice: at %s, then at %s", method, id, first, app))
	}
	f.ran[id] = app
}

// Check records one request that app received with token and leader id, in
// the order the requests reached the applications.
func (f *Fence) Check(app, id, token string) {
	tok, err := strconv.ParseInt(token, 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil || tok <= 0:
		f.violations = append(f.violations, fmt.Sprintf("%s got fencing token %q", app, token))
		return
	case id != app:
		f.violations = append(f.violations, fmt.Sprintf("%s got leader id %q with token %d", app, id, tok))
	case tok < f.max:
		f.stale = append(f.stale, fmt.Sprintf("%s got token %d after token %d was seen: a stale leader served", app, tok, f.max))
	case f.owner[tok] != "" && f.owner[tok] != app:
		f.violations = append(f.violations, fmt.Sprintf("%s got token %d, which %s got before", app, tok, f.owner[tok]))
	}
	if f.owner[tok] == "" {
		f.owner[tok] = app
	}
	f.max = max(f.max, tok)
}

// Ran reports whether an application ran the request with id.
func (f *Fence) Ran(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.ran[id]
	return ok
}

// Violations lists what the applications saw that a fence would refuse,
// the stale tokens first.
func (f *Fence) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Concat(f.stale, f.violations)
}

// Stale lists the violations that are a token lower than one seen: a
// stale leader's request, which a fenced storage refuses (Violations
// lists them first).
func (f *Fence) Stale() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stale)
}

// Tokens counts the tokens seen: the leaderships that served.
func (f *Fence) Tokens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.owner)
}

// Max is the highest token seen.
func (f *Fence) Max() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max
}

// App is one participant's application: an HTTP server on a loopback port
// of this process that checks every request against the Fence, reads its
// body and answers "<name> <token>". It can stop as a Go application does
// on SIGTERM (http.Server.Shutdown) and start again on the same port.
type App struct {
	Name  string
	Addr  string // 127.0.0.1:port, the proxy's proxy.app
	fence *Fence
	h2c   bool // serves HTTP/2 without TLS too

	mu     sync.Mutex
	srv    *http.Server
	served chan struct{}
	count  int
	hung   chan struct{} // while not nil, requests wait for it to close: the application hangs
}

// StartApp serves an application for name on a free loopback port.
func StartApp(name string, fence *Fence) (*App, error) { return startApp(name, fence, false) }

// StartAppH2C is StartApp serving HTTP/2 with prior knowledge too (for
// proxy.app_protocol h2c): as it stops, its GOAWAY names the last request
// it took.
func StartAppH2C(name string, fence *Fence) (*App, error) { return startApp(name, fence, true) }

func startApp(name string, fence *Fence, h2c bool) (*App, error) {
	// A port from freeport, not port 0: Restart binds the same port again
	// seconds later, and a port the kernel handed out for port 0 may by
	// then be another listener's or an outgoing connection's.
	addr, err := freeport.Addrs(1)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	a := &App{Name: name, Addr: ln.Addr().String(), fence: fence, h2c: h2c}
	a.serve(ln)
	return a, nil
}

func (a *App) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(a.handle), ReadHeaderTimeout: 10 * time.Second}
	if a.h2c {
		var protocols http.Protocols
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		srv.Protocols = &protocols
	}
	served := make(chan struct{})
	a.mu.Lock()
	a.srv, a.served = srv, served
	a.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
}

// Hang makes the application take connections and answer nothing, until
// Unhang.
func (a *App) Hang() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hung == nil {
		a.hung = make(chan struct{})
	}
}

// Unhang lets the requests it held go on.
func (a *App) Unhang() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hung != nil {
		close(a.hung)
		a.hung = nil
	}
}

func (a *App) handle(w http.ResponseWriter, r *http.Request) {
	// Checked as it arrives: what a fenced storage would see first.
	tok := r.Header.Get(HeaderFencingToken)
	a.fence.Check(a.Name, r.Header.Get(HeaderLeaderID), tok)
	a.mu.Lock()
	hung := a.hung
	a.mu.Unlock()
	if hung != nil {
		<-hung // a hung application: even a client gone does not wake it
	}
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	a.fence.once(a.Name, r.Header.Get("X-Request-Id"), r.Method)
	a.mu.Lock()
	a.count++
	a.mu.Unlock()
	fmt.Fprintf(w, "%s %s", a.Name, tok)
}

// Served counts the requests the application handled.
func (a *App) Served() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// Stop shuts the application down as a Go application does on SIGTERM:
// the listener closes, idle connections close, what is being handled
// finishes (within ctx).
func (a *App) Stop(ctx context.Context) error {
	a.mu.Lock()
	srv, served := a.srv, a.served
	a.mu.Unlock()
	err := srv.Shutdown(ctx)
	<-served
	return err
}

// Restart serves again on the same port after Stop.
func (a *App) Restart() error {
	ln, err := net.Listen("tcp", a.Addr)
	if err != nil {
		return fmt.Errorf("app %s: listen again on %s: %w", a.Name, a.Addr, err)
	}
	a.serve(ln)
	return nil
}

// Close stops the application at once.
func (a *App) Close() {
	a.mu.Lock()
	srv, served := a.srv, a.served
	a.mu.Unlock()
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return
	}
	<-served
}
