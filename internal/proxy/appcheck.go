package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// The proxy's own check of its application (docs/design/proxy-app.md, "Hand-overs":
// a hung application). An answer that times out proves nothing alone: any
// client can ask for a slow path. So a timeout only starts a check, one at
// a time: a probe of the application on a new connection, with a short
// timeout of its own. AppTimeoutStepDown failed probes in a row, with no
// answer from the application between them, step this participant down.

// maxProbeTimeout bounds one probe (or ResponseTimeout, when shorter): an
// application that answers nothing this long on a fresh connection
// answers nobody.
const maxProbeTimeout = 5 * time.Second

// probeAgent names the probes in the application's logs.
const probeAgent = "electd-proxy-check"

// checker probes the application: GET HealthURL when set (200 to 399
// passes, as app.health_url's checks), else HEAD / (any answer passes:
// the application reads and answers requests).
type checker struct {
	client  *http.Client
	url     string
	health  bool // url is HealthURL
	timeout time.Duration
}

func newChecker(cfg Config) *checker {
	var protocols http.Protocols
	if cfg.AppProtocol == AppH2C && cfg.HealthURL == "" {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	url, health := cfg.HealthURL, cfg.HealthURL != ""
	if !health {
		url = "http://" + cfg.App + "/"
	}
	return &checker{url: url, health: health, timeout: min(maxProbeTimeout, cfg.ResponseTimeout), client: &http.Client{
		// A new connection each time: a kept one says nothing of whether
		// the application still takes connections.
		Transport: &http.Transport{
			DialContext:            (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext,
			Protocols:              &protocols,
			DisableKeepAlives:      true,
			DisableCompression:     true,
			MaxResponseHeaderBytes: MaxHeaderBytes,
			TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as app.health_url's checks
		},
		// A redirect is an answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// what names the check in logs.
func (c *checker) what() string {
	if c.health {
		return "GET " + c.url
	}
	return "HEAD / on a new connection"
}

// probe runs one check as leadership r, within ctx.
func (c *checker) probe(ctx context.Context, r Route) error {
	method := http.MethodHead
	if c.health {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, nil)
	if err != nil {
		return err
	}
	// Sent by the leader, as every request of the proxy's, with an id of
	// its own, as every request the application gets.
	req.Header.Set(HeaderFencingToken, strconv.FormatInt(r.Token, 10))
	req.Header.Set(HeaderLeaderID, r.ID)
	req.Header.Set(HeaderRequestIDOut, uuid.NewString())
	req.Header.Set("User-Agent", probeAgent)
	res, err := c.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	_ = res.Body.Close()
	if c.health && (res.StatusCode < 200 || res.StatusCode > 399) {
		return fmt.Errorf("%s answered %s", c.url, res.Status)
	}
	return nil
}
