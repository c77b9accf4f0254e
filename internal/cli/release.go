package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/electd/electd/internal/api"
)

const releaseHelp = `Usage: electd release [--to ID] [--addr URL] [--token-file FILE] [--wait 10s]

Asks the electd at --addr, which must be the leader, to give up leadership
now (POST /leader/release): it re-queues at the back and the next in line
leads within milliseconds. release then waits until the daemon names a new
leader and prints it.

  --to ID         hand leadership to this participant (POST
                  /leader/release?to=ID, a switchover); it succeeds only if
                  ID leads afterwards. A daemon that cannot hand over says
                  why, and release prints its JSON error
  --addr URL      the electd to ask (default: http.addr from
                  ELECTD_HTTP_ADDR on this host, else http://localhost:4040)
  --cacert FILE   PEM CA certificates that verify an https:// --addr
                  (default: the system's, or SSL_CERT_FILE)
  --token-file F  read the admin token from F (a mounted Secret; one
                  trailing newline is ignored). Default: the environment
                  variable ELECTD_HTTP_ADMIN_TOKEN, as the daemon reads it
  --wait D        how long to wait for the new leader (default 10s)
  --timeout D     how long one request may take (default 5s)
  -h, --help      print this help

Exit status: 0 released, and a new leader (with --to: ID) leads; 1 the
daemon refused (401 wrong token, 403 no token configured, 409 not the
leader or cannot hand over to ID) or no new leader came within --wait;
2 usage, or no admin token; 3 the daemon cannot be reached.
`

// maxTokenFile bounds the token file: a token is a line, not a document.
const maxTokenFile = 4096

// release is `electd release`.
func (c *client) release(ctx context.Context, args []string) int {
	c.command = "release"
	fs := pflag.NewFlagSet("electd release", pflag.ContinueOnError)
	var f common
	var to, tokenFile string
	var wait time.Duration
	c.commonFlags(fs, &f)
	fs.StringVar(&to, "to", "", "the participant to hand leadership to")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the admin token")
	fs.DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the new leader")
	if code, done := c.parse(fs, &f, args, releaseHelp); done {
		return code
	}
	if fs.Changed("to") && (to == "" || strings.IndexFunc(to, unicode.IsControl) >= 0) {
		return c.usageError(fmt.Errorf("--to: %q is not a participant id", to))
	}
	if wait <= 0 {
		return c.usageError(fmt.Errorf("--wait: %v is not positive", wait))
	}
	token, err := c.adminToken(tokenFile)
	if err != nil {
		return c.usageError(err)
	}
	return c.doRelease(ctx, token, to, wait)
}

// adminToken reads the token from the file, else the environment.
func (c *client) adminToken(file string) (string, error) {
	if file == "" {
		if t := c.Getenv("ELECTD_HTTP_ADMIN_TOKEN"); t != "" {
			return t, nil
		}
		return "", errors.New("no admin token: set ELECTD_HTTP_ADMIN_TOKEN or give --token-file")
	}
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("--token-file: %s is longer than %d bytes; it should hold the token alone", file, maxTokenFile)
	}
	t := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if t == "" {
		return "", fmt.Errorf("--token-file: %s is empty", file)
	}
	return t, nil
}

func (c *client) doRelease(ctx context.Context, token, to string, wait time.Duration) int {
	var before api.Leader
	if _, err := c.getJSON(ctx, "/leader", &before, http.StatusOK, http.StatusServiceUnavailable); err != nil {
		return c.failure(err)
	}
	path := "/leader/release"
	if to != "" {
		path += "?to=" + url.QueryEscape(to)
	}
	code, body, err := c.do(ctx, http.MethodPost, path, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return c.failure(err)
	}
	if code != http.StatusAccepted && code != http.StatusOK {
		// The daemon's JSON error, as it sent it.
		return c.failure(&apiError{http.MethodPost, c.base.String() + path, code, strings.TrimSpace(string(body))})
	}
	var ans api.Release
	if err := json.Unmarshal(body, &ans); err != nil {
		return c.failure(fmt.Errorf("POST %s: %d with a body that is not electd's JSON: %w", path, code, err))
	}
	line := clean(ans.ID) + " released leadership"
	if l := before.Leader; l != nil && l.ID == ans.ID {
		line += fmt.Sprintf(" (fencing token %d)", l.FencingToken)
	}
	fmt.Fprintln(c.Stdout, line)

	after, err := c.awaitNewLeader(ctx, before, wait)
	if err != nil {
		return c.failure(err)
	}
	fmt.Fprintf(c.Stdout, "%s leads now (fencing token %d)\n", clean(after.ID), after.FencingToken)
	if to != "" && after.ID != to {
		return c.failure(fmt.Errorf("%s leads, not %s: the leader was not handed to %s (a daemon without switchover ignores ?to=)",
			clean(after.ID), clean(to), clean(to)))
	}
	return exitOK
}

// awaitNewLeader polls GET /leader, at most wait, until it names a leader
// other than the one before. "Other" means another node: a lone
// participant may lead again under a new node and token.
func (c *client) awaitNewLeader(ctx context.Context, before api.Leader, wait time.Duration) (*api.LeaderInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var v api.Leader
		_, err := c.getJSON(ctx, "/leader", &v, http.StatusOK, http.StatusServiceUnavailable)
		if err == nil && v.Leader != nil && (before.Leader == nil || v.Leader.Node != before.Leader.Node) {
			return v.Leader, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("no new leader")
			}
			// The cause is told, not wrapped. The release was answered, so
			// a daemon silent after it is not "unreachable" (exit 1, not 3).
			return nil, fmt.Errorf("released, but no new leader within %v: %v", wait, err)
		case <-tick.C:
		}
	}
}
