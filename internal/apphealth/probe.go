package apphealth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// Bounds of one check: what an application (or whatever answers on its
// port) can make electd hold.
const (
	// maxBody is how much of an answer's body is read and dropped. The
	// connection is closed after each check anyway.
	maxBody = 4 << 10
	// maxHeaderBytes bounds the answer's header.
	maxHeaderBytes = 16 << 10
	// maxRedirects bounds redirects on the URL's own host, as Kubernetes
	// and net/http do.
	maxRedirects = 10
	// maxDetail bounds a check's outcome in words (logs, /candidacy).
	maxDetail = 200
)

// NewClient is the HTTP client of the checks, built as a Kubernetes
// httpGet probe's:
//   - no proxy from the environment;
//   - no connection kept between checks: a kept connection to an
//     application that restarted fails the next check for nothing;
//   - certificates not verified: the probe asks whether the application
//     works, not who it is;
//   - redirects followed only on the same host.
//
// timeout bounds each check whole: dial, TLS, header and the capped body.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxHeaderBytes,
			TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as Kubernetes probes
			ForceAttemptHTTP2:      false,
		},
		CheckRedirect: sameHostRedirects,
	}
}

// sameHostRedirects follows a redirect on the first URL's host only. A
// redirect elsewhere is not followed; the 3xx answer is the outcome (a
// pass, as for a Kubernetes probe). An application cannot point electd at
// another host.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// probe runs one check of target with client and returns its outcome and
// the outcome in words.
func probe(ctx context.Context, client *http.Client, target string) (Result, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Error, detail(err.Error())
	}
	req.Header.Set("User-Agent", "electd-health-check")
	req.Header.Set("Accept", "*/*")
	resp, err := client.Do(req)
	if err != nil {
		return failed(err)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil { // the body timed out or was cut: no full answer
		return failed(err)
	}
	text := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return Success, text
	}
	return Failure, text
}

// failed classifies a check that got no full answer.
func failed(err error) (Result, string) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop "Get \"<url>\": ": the URL is known
	}
	var te interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout() {
		return Timeout, "timed out"
	}
	return Error, detail(err.Error())
}

// detail makes s one short printable line.
func detail(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}
