package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/electd/electd/internal/api"
)

const statusHelp = `Usage: electd status [--addr URL] [--cacert FILE] [--watch] [--timeout 5s]

Shows the election an electd takes part in, as a table: the participants in
queue order, who leads, each one's fencing token, the asked electd's own
connection state and, while it leads, its lease. It reads the daemon's HTTP
API (GET /leader, /participants, /healthz/leader); --watch follows
GET /events and redraws on every change until interrupted.

  --addr URL      the electd to ask (default: http.addr from
                  ELECTD_HTTP_ADDR on this host, else http://localhost:4040)
  --cacert FILE   PEM CA certificates that verify an https:// --addr
                  (default: the system's, or SSL_CERT_FILE)
  --watch         redraw on every change of leader or state
  --timeout D     how long one request may take (default 5s)
  -h, --help      print this help

Columns: # is the queue position (the leader is first), Role is Leader or
Follower, State is the asked electd's connection state on its own row
(marked *, found by its ZooKeeper session) and "joined" on the others (their
node exists, so their session lives), Token is the fencing token of the
participant's node, Lease how long the asked electd's leadership is certain
to last. A member marked ! shares its id with another participant: give each
a unique id (docs/operations.md, "Duplicate ids").

Exit status: 0 a leader is known, 4 the daemon knows no leader now, 1 the
daemon answered with an error (e.g. 503: it cannot read ZooKeeper), 2 usage,
3 the daemon cannot be reached. With --watch: 0 when interrupted, 3 if the
daemon cannot be reached at the start. To ask whether this node leads, use
GET /healthz/leader (200 or 503), or look for the * row with Role Leader.
`

// status is `electd status`.
func (c *client) status(ctx context.Context, args []string) int {
	c.command = "status"
	fs := pflag.NewFlagSet("electd status", pflag.ContinueOnError)
	var f common
	var watch bool
	c.commonFlags(fs, &f)
	fs.BoolVar(&watch, "watch", false, "redraw on every change")
	if code, done := c.parse(fs, &f, args, statusHelp); done {
		return code
	}
	if watch {
		return c.watch(ctx)
	}
	v, err := c.fetchView(ctx)
	if v != nil {
		fmt.Fprint(c.Stdout, v.render(c.base.String()))
	}
	if err != nil {
		return c.failure(err)
	}
	if v.leader.Leader == nil {
		return exitNoLeader
	}
	return exitOK
}

// view is one reading of the election from one daemon.
type view struct {
	leader       api.Leader
	participants []api.Participant
	health       api.LeaderHealth
	partsErr     error // /participants failed: the table shows the rest
}

// fetchView reads /leader, /healthz/leader and /participants. It returns a
// view whenever /leader answered, with the error of what failed after it.
func (c *client) fetchView(ctx context.Context) (*view, error) {
	v := &view{}
	// 503 with "leader": null is an answer: no leader known.
	if _, err := c.getJSON(ctx, "/leader", &v.leader, http.StatusOK, http.StatusServiceUnavailable); err != nil {
		return nil, err
	}
	if _, err := c.getJSON(ctx, "/healthz/leader", &v.health, http.StatusOK, http.StatusServiceUnavailable); err != nil {
		return nil, err
	}
	if _, err := c.getJSON(ctx, "/participants", &v.participants, http.StatusOK); err != nil {
		v.partsErr = err
		var ae *apiError
		if errors.As(err, &ae) {
			return v, err
		}
		return nil, err
	}
	return v, nil
}
