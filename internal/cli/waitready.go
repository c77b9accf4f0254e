package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/electd/electd/internal/api"
)

const waitReadyHelp = `Usage: electd wait-ready [--addr URL] [--cacert FILE] [--every 250ms] [--timeout 5s]

Waits until the electd at --addr is ready (GET /readyz answers 200: it is
connected, has joined and knows who leads), then prints its answer and
exits 0. Run as a plain init container after the electd sidecar, it holds
the application's start until electd has its first view, once per pod: a
restarted electd container then needs no startup probe, and its pod is
listed again at its first passing readiness probe (docs/kubernetes.md, "A
crashed sidecar, a lost node").

  --addr URL      the electd to ask (default: http.addr from
                  ELECTD_HTTP_ADDR on this host, else http://localhost:4040)
  --cacert FILE   PEM CA certificates that verify an https:// --addr
                  (default: the system's, or SSL_CERT_FILE)
  --every D       how long to wait between two questions (default 250ms)
  --timeout D     how long one request may take (default 5s)
  -h, --help      print this help

Exit status: 0 ready; 1 interrupted (SIGTERM or SIGINT) before that; 2
usage. An electd that does not answer yet, or answers 503, is asked again.
`

// waitReady is `electd wait-ready`.
func (c *client) waitReady(ctx context.Context, args []string) int {
	c.command = "wait-ready"
	fs := pflag.NewFlagSet("electd wait-ready", pflag.ContinueOnError)
	var f common
	var every time.Duration
	c.commonFlags(fs, &f)
	fs.DurationVar(&every, "every", 250*time.Millisecond, "how long to wait between two questions")
	if code, done := c.parse(fs, &f, args, waitReadyHelp); done {
		return code
	}
	if every <= 0 {
		return c.usageError(fmt.Errorf("--every: %v is not positive", every))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var r api.Ready
		code, err := c.getJSON(ctx, "/readyz", &r, http.StatusOK, http.StatusServiceUnavailable)
		if err == nil && code == http.StatusOK {
			fmt.Fprintf(c.Stdout, "ready: %s\n", r.Reason)
			return exitOK
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(c.Stderr, "electd wait-ready: interrupted before %s was ready\n", c.base)
			return exitFailed
		case <-t.C:
		}
	}
}
