// Package cli holds electd's client commands, `electd status`, `electd
// release` and `electd wait-ready`. They ask a running electd over its HTTP API
// (docs/design/http-contract.md, "HTTP API"). They decode its answers with
// internal/api's types.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Exit statuses of the commands `electd status` and `electd release`, for
// scripts; printed by their --help.
const (
	exitOK          = 0 // done; status: a leader is known
	exitFailed      = 1 // the daemon answered with an error, or refused
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // no answer from the daemon at --addr
	exitNoLeader    = 4 // status: the daemon answered, but knows no leader
)

// Env is what a command reads and writes besides its arguments; main passes
// the process's, tests their own.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string // ELECTD_HTTP_ADDR, ELECTD_HTTP_ADMIN_TOKEN
	Now            func() time.Time    // the time --watch prints; default time.Now
	IsTerminal     bool                // Stdout is a terminal: --watch redraws in place
}

// commands are the client commands by name.
var commands = map[string]func(*client, context.Context, []string) int{
	"status":     (*client).status,
	"release":    (*client).release,
	"wait-ready": (*client).waitReady,
}

// IsCommand reports whether args name a client command (else they are the
// daemon's).
func IsCommand(args []string) bool {
	return len(args) > 0 && commands[args[0]] != nil
}

// Run runs `electd status ...` or `electd release ...` (IsCommand) and
// returns its exit status. It stops when done or when ctx ends; --watch
// then exits 0.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Now == nil {
		env.Now = time.Now
	}
	return commands[args[0]](&client{Env: env}, ctx, args[1:])
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// client is what a command shares, once its flags are parsed.
type client struct {
	Env
	base    *url.URL     // the daemon, from --addr
	addrBy  string       // where base came from when not --addr: a hint's words
	http    *http.Client // bounded by --timeout, trusting --cacert
	command string       // "status" or "release", for messages
}

// common are the flags every command takes.
type common struct {
	addr    string
	timeout time.Duration
	cacert  string
	help    bool
}

// commonFlags adds --addr, --cacert, --timeout and --help to a command's flags.
func (c *client) commonFlags(fs *pflag.FlagSet, f *common) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.StringVar(&f.addr, "addr", defaultAddr(c.Getenv("ELECTD_HTTP_ADDR")), "the electd to ask")
	fs.StringVar(&f.cacert, "cacert", "", "PEM CA certificates to verify an https:// --addr with")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "how long one request may take")
	fs.BoolVarP(&f.help, "help", "h", false, "print this help and exit")
}

// parse parses a command's args into fs and sets the client up from the
// common flags. done says the command ends here with code: --help, or a
// usage error.
func (c *client) parse(fs *pflag.FlagSet, f *common, args []string, help string) (code int, done bool) {
	if err := fs.Parse(oneDash(fs, args)); err != nil {
		return c.usageError(err), true
	}
	if f.help {
		fmt.Fprint(c.Stdout, help)
		return exitOK, true
	}
	if fs.NArg() > 0 {
		return c.usageError(fmt.Errorf("unexpected argument %q", fs.Arg(0))), true
	}
	if err := c.setup(fs, *f); err != nil {
		return c.usageError(err), true
	}
	return 0, false
}

// oneDash adds the second dash to a long flag written with one (-watch,
// as Go's flag package takes it). The daemon's flags accept both. A
// flag's value is left as it is.
func oneDash(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if len(a) < 2 || a[0] != '-' || f == nil {
			out = append(out, a)
			continue
		}
		if a[1] != '-' && len(name) > 1 {
			a = "-" + a
		}
		out = append(out, a)
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) { // its value
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// setup checks the common flags' values after parsing.
func (c *client) setup(fs *pflag.FlagSet, f common) error {
	u, err := parseAddr(f.addr)
	if err != nil {
		return err
	}
	if !fs.Changed("addr") && u.Port() == "0" {
		return fmt.Errorf("--addr: ELECTD_HTTP_ADDR has port 0 (any free port), so the port is not known here; " +
			"give --addr with the port electd logged at start (http_addr)")
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout: %v is not positive", f.timeout)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if f.cacert != "" {
		if u.Scheme != "https" {
			return fmt.Errorf("--cacert: only meaningful with an https:// --addr")
		}
		pool, err := readCA(f.cacert)
		if err != nil {
			return fmt.Errorf("--cacert: %w", err)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.base = u
	switch {
	case fs.Changed("addr"):
	case c.Getenv("ELECTD_HTTP_ADDR") != "":
		c.addrBy = "from ELECTD_HTTP_ADDR"
	default:
		c.addrBy = "the default"
	}
	c.http = &http.Client{Timeout: f.timeout, Transport: tr}
	return nil
}

// maxCAFile bounds --cacert, as internal/config bounds a certificate file.
const maxCAFile = 1 << 20

// readCA reads a PEM bundle of CA certificates.
func readCA(file string) (*x509.CertPool, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > maxCAFile:
		return nil, fmt.Errorf("%s is larger than %d bytes", file, maxCAFile)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// defaultAddr is the daemon on this host. It is http.addr from the
// environment, as in the sidecar's own container; an unspecified host
// means localhost. Else it is http://localhost:4040.
func defaultAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if listen == "" || err != nil {
		return "http://localhost:4040"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// parseAddr accepts http(s)://host[:port] or host:port.
func parseAddr(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("--addr: %q is not http://host:port", addr)
	}
	u.Path = ""
	return u, nil
}

// usageError prints a usage error and returns its status.
func (c *client) usageError(err error) int {
	fmt.Fprintf(c.Stderr, "electd %s: %v (see electd %s --help)\n", c.command, err, c.command)
	return exitUsage
}

// unreachable is an error of a request that got no HTTP answer.
type unreachable struct{ err error }

func (u unreachable) Error() string { return u.err.Error() }

// apiError is an HTTP answer the command did not expect, with the daemon's
// JSON error when it sent one.
type apiError struct {
	method, url string
	code        int
	body        string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.method, e.url, e.code, http.StatusText(e.code), e.body)
}

// maxAnswer bounds what the commands read of one answer.
const maxAnswer = 4 << 20

// do sends one request and returns the answer's status and body.
func (c *client) do(ctx context.Context, method, path string, header http.Header) (int, []byte, error) {
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, unreachable{err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return 0, nil, unreachable{err}
	}
	if len(body) > maxAnswer {
		return 0, nil, fmt.Errorf("%s %s: answer longer than %d bytes", method, u, maxAnswer)
	}
	return resp.StatusCode, body, nil
}

// getJSON decodes the answer to GET path into v when its status is in ok.
// Any other status is an *apiError.
func (c *client) getJSON(ctx context.Context, path string, v any, ok ...int) (int, error) {
	code, body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	for _, want := range ok {
		if code == want {
			if err := json.Unmarshal(body, v); err != nil {
				return code, fmt.Errorf("GET %s: %d with a body that is not electd's JSON: %w", path, code, err)
			}
			return code, nil
		}
	}
	return code, &apiError{http.MethodGet, c.base.String() + path, code, strings.TrimSpace(string(body))}
}

// failure prints err and returns the status it calls for.
func (c *client) failure(err error) int {
	fmt.Fprintf(c.Stderr, "electd %s: %v\n", c.command, err)
	if errors.As(err, new(unreachable)) {
		if c.addrBy != "" {
			// Without --addr a newcomer's first run asks the default port,
			// where the sidecar they started may not be.
			fmt.Fprintf(c.Stderr, "electd %s: no electd answers at %s (%s, no --addr given); "+
				"ask the one you started with --addr and its http.addr, e.g. electd %s --addr localhost:5040\n",
				c.command, c.base, c.addrBy, c.command)
		}
		return exitUnreachable
	}
	return exitFailed
}
