package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
)

// appEnv carries a Go application's AppConfig (JSON) to the copy of the
// test binary that runs it.
const appEnv = "ELECTD_LEDGER_APP"

// AppConfig is what an application process is started with.
type AppConfig struct {
	Name   string `json:"name"`
	Listen string `json:"listen"` // host:port
	Ledger string `json:"ledger"` // the file it appends to
}

// MainIfApp runs the Go application, and exits, when this process is a copy
// of the test binary started as one (Start); otherwise it returns at once.
// Test packages that start Go applications call it first in TestMain.
func MainIfApp() {
	v := os.Getenv(appEnv)
	if v == "" {
		return
	}
	var cfg AppConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "ledger app: %s=%q: %v\n", appEnv, v, err)
		os.Exit(2)
	}
	if err := serveGo(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "ledger app %s: %v\n", cfg.Name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// goApp is the Go application: net/http, HTTP/1.1 and h2c on one port, as
// a Go service behind the proxy would be.
type goApp struct {
	cfg    AppConfig
	led    *writer
	grpc   *grpc.Server
	health *health.Server
}

func serveGo(cfg AppConfig) error {
	led, err := openWriter(cfg.Ledger)
	if err != nil {
		return err
	}
	a := &goApp{cfg: cfg, led: led}
	a.grpc = newGRPC(a)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC arrives as h2c prior knowledge
	srv := &http.Server{Handler: a, Protocols: &protocols, ReadHeaderTimeout: time.Minute}
	fmt.Fprintf(os.Stderr, "ledger app %s (go) on %s, ledger %s\n", cfg.Name, ln.Addr(), cfg.Ledger)
	return srv.Serve(ln) // until the test kills the process
}

func (a *goApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		return // 200, not a request of the test's
	}
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		a.grpc.ServeHTTP(w, r)
		return
	}
	e := a.entry(Arrive, r.Method, r.URL.Path, r.Proto, r.Header)
	a.led.write(e)
	pause(r.URL.Query().Get("sleep"))
	if r.Header.Get("Upgrade") != "" {
		a.upgrade(w, r, e)
		return
	}
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return // the request was broken off: no answer to give
	}
	d := e
	d.Ev, d.BodySize, d.Trailer, d.Header, d.At = Done, n, lower(r.Trailer), nil, time.Now().UnixNano()
	a.led.write(d)
	w.Header().Set("X-App", a.cfg.Name)
	w.Header().Set("Electd-Leak", a.cfg.Name) // the proxy must keep it from the client
	if n, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil && n > 0 {
		writeSize(w, n)
		return
	}
	fmt.Fprintf(w, "%s %s %s\n", a.cfg.Name, e.Token, e.ID)
}

// zeros is what writeSize sends, one block at a time.
var zeros = make([]byte, 64<<10)

// writeSize answers n zero bytes (the request's size parameter): a large
// answer, as a download is.
func writeSize(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Length", strconv.Itoa(n))
	for n > 0 {
		k, err := w.Write(zeros[:min(n, len(zeros))])
		if err != nil {
			return
		}
		n -= k
	}
}

// upgrade answers an Upgrade (a WebSocket handshake, say) with 101 and
// echoes the connection's bytes until either side closes it.
func (a *goApp) upgrade(w http.ResponseWriter, r *http.Request, e Entry) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\nX-App: %s\r\nX-Token: %s\r\nElectd-Leak: %s\r\n\r\n",
		r.Header.Get("Upgrade"), a.cfg.Name, e.Token, a.cfg.Name)
	if rw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, rw.Reader)
}

// entry is a ledger line for a request that just arrived.
func (a *goApp) entry(ev, method, path, proto string, h map[string][]string) Entry {
	hl := lower(h)
	e := Entry{Ev: ev, App: a.cfg.Name, Lang: "go", Method: method, Path: path, Proto: proto, At: time.Now().UnixNano(), Header: hl}
	e.ID = first(hl, "x-request-id")
	if e.ID == "" {
		e.ID = first(hl, "electd-request-id")
	}
	e.Token, e.Leader = first(hl, "electd-fencing-token"), first(hl, "electd-leader-id")
	return e
}

// pause sleeps ms milliseconds (the request's sleep parameter): the
// application's own time, between acting on a request and reading its body.
func pause(ms string) {
	if n, err := strconv.Atoi(ms); err == nil && n > 0 {
		time.Sleep(time.Duration(n) * time.Millisecond)
	}
}

func lower(h map[string][]string) map[string][]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = append(out[strings.ToLower(k)], v...)
	}
	return out
}

func first(h map[string][]string, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// writer appends ledger lines, each in one write(2) on a file opened with
// O_APPEND: a line is whole in the file once the write returns, whatever
// happens to the process next.
type writer struct {
	mu sync.Mutex
	f  *os.File
}

func openWriter(path string) (*writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &writer{f: f}, nil
}

func (w *writer) write(e Entry) {
	b, err := json.Marshal(e)
	if err != nil {
		panic("ledger: " + err.Error()) // strings and numbers always encode
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(append(b, '\n')); err != nil && !errors.Is(err, os.ErrClosed) {
		fmt.Fprintf(os.Stderr, "ledger: %v\n", err)
	}
}
