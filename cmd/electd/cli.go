package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
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

// runCommand runs `electd status ...` or `electd release ...` and reports
// whether args named one of them; the daemon runs otherwise.
func runCommand(args []string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	var cmd func(*cli, []string) int
	switch args[0] {
	case "status":
		cmd = (*cli).status
	case "release":
		cmd = (*cli).release
	default:
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr, getenv: os.Getenv, now: time.Now, isTerminal: isTerminal(stdout)}
	return cmd(c, args[1:]), true
}

// cli is what the commands share; tests build one around an httptest server.
type cli struct {
	ctx        context.Context // ends --watch (SIGINT, SIGTERM)
	stdout     io.Writer
	stderr     io.Writer
	getenv     func(string) string
	now        func() time.Time
	isTerminal bool // stdout is a terminal: --watch redraws in place

	base    *url.URL     // the daemon, from --addr
	client  *http.Client // bounded by --timeout
	command string       // "status" or "release", for messages
}

// commonFlags adds --addr, --timeout and --help to a command's flags.
func (c *cli) commonFlags(fs *pflag.FlagSet, addr *string, timeout *time.Duration, help *bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.StringVar(addr, "addr", defaultAddr(c.getenv("ELECTD_HTTP_ADDR")), "the electd to ask")
	fs.DurationVar(timeout, "timeout", 5*time.Second, "how long one request may take")
	fs.BoolVarP(help, "help", "h", false, "print this help and exit")
}

// setup checks the common flags' values after parsing.
func (c *cli) setup(addr string, timeout time.Duration) error {
	u, err := parseAddr(addr)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		return fmt.Errorf("--timeout: %v is not positive", timeout)
	}
	c.base = u
	c.client = &http.Client{Timeout: timeout}
	return nil
}

// defaultAddr is the daemon on this host: http.addr from the environment
// (as in the sidecar's own container), with an unspecified host meaning
// localhost, else http://localhost:4040.
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
func (c *cli) usageError(err error) int {
	fmt.Fprintf(c.stderr, "electd %s: %v (see electd %s --help)\n", c.command, err, c.command)
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
func (c *cli) do(ctx context.Context, method, path string, header http.Header) (int, []byte, error) {
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.client.Do(req)
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

// getJSON decodes the answer to GET path into v when its status is one of
// ok; any other status is an *apiError.
func (c *cli) getJSON(ctx context.Context, path string, v any, ok ...int) (int, error) {
	code, body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	for _, want := range ok {
		if code == want {
			if err := json.Unmarshal(body, v); err != nil {
				return code, fmt.Errorf("GET %s: %d with a body that is not electd's JSON: %v", path, code, err)
			}
			return code, nil
		}
	}
	return code, &apiError{http.MethodGet, c.base.String() + path, code, strings.TrimSpace(string(body))}
}

// failure prints err and returns the status it calls for.
func (c *cli) failure(err error) int {
	fmt.Fprintf(c.stderr, "electd %s: %v\n", c.command, err)
	if errors.As(err, new(unreachable)) {
		return exitUnreachable
	}
	return exitFailed
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
