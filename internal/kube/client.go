package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds an API server answer read into memory. A pod list here is
// partial metadata of the pods carrying one label: a few hundred bytes each.
const maxBody = 4 << 20

// client is the handful of REST calls the Labeler makes.
type client struct {
	server    string
	tokenFile string
	hc        *http.Client
	userAgent string
}

func newClient(cfg Config) (*client, error) {
	rt := cfg.Transport
	if rt == nil {
		pool, err := loadCA(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kube: CA bundle: %w", err)
		}
		rt = &http.Transport{
			Proxy:               nil, // in-cluster traffic never goes through a proxy
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 5 * time.Second,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	return &client{
		server:    strings.TrimSuffix(cfg.Server, "/"),
		tokenFile: cfg.TokenFile,
		hc:        &http.Client{Transport: rt},
		userAgent: "electd",
	}, nil
}

// StatusError is an API server's refusal: its HTTP code and the reason and
// message of the metav1.Status it sent.
type StatusError struct {
	Code    int
	Reason  string
	Message string
}

func (e *StatusError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

func hasCode(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// request is one API call.
type request struct {
	method, path string
	accept       string // default application/json
	contentType  string // of body
	body         any    // marshalled to JSON; nil: no body
}

// do sends one request; a JSON answer is decoded into out (if not nil).
// The token file is read for every call: a rotated token is used as soon
// as the kubelet writes it.
func (c *client) do(ctx context.Context, r request, out any) error {
	tok, err := readToken(c.tokenFile)
	if err != nil {
		return fmt.Errorf("service account token: %w", err)
	}
	var rd io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.server+r.path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return err
	}
	if len(b) > maxBody {
		return fmt.Errorf("%s %s: answer larger than %d bytes", r.method, r.path, maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Code: resp.StatusCode}
		var st struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			se.Reason, se.Message = st.Reason, st.Message
		} else {
			se.Message = truncate(string(b), 200)
		}
		return se
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	return nil
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
