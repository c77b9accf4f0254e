package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/electd/electd/internal/election"
)

// Limits of the keys that are the daemon's (the engine's are election's).
const (
	// MaxShutdownTimeout: shutdown resigns, drains and closes in well under
	// a second when ZooKeeper answers; past ten minutes a typo keeps a pod
	// Terminating (Kubernetes kills it at terminationGracePeriodSeconds).
	// shutdown_grace is shorter than shutdown_timeout, so bounded too.
	MaxShutdownTimeout = 10 * time.Minute
	// MaxConnections bounds http.max_connections: each connection costs a
	// file descriptor and a few KiB; 16384 is four times a default ulimit.
	MaxConnections = 16384
	// MaxStreams and MaxWaiters bound http.max_streams and http.max_waiters:
	// a held stream costs ~40 KB, so 4096 already fill a 64 MiB pod's
	// memory four times over and exist only for pods sized for them.
	MaxStreams = 4096
	MaxWaiters = 4096
	// MaxAdminTokenBytes bounds http.admin_token; it is compared in
	// constant time on every mutating request.
	MaxAdminTokenBytes = 4096
	// maxServerNameBytes is DNS's limit on a name.
	maxServerNameBytes = 253
)

// validate checks the keys that are not the engine's, each check on its
// own, so that every wrong key is named.
func (c *Config) validate(errs *errorList) {
	errs.add(c.validateServers(), c.validateChroot(), c.validateFixACL(), c.validateKubernetes())
	errs.add(c.validateExec()...)
	c.validateZooKeeperTLS(errs)
	c.validateHTTP(errs)
	errs.add(c.validateLog()...)
	c.validateShutdown(errs)
	c.validateApp(errs)
	c.validateListenHold(errs)
}

// validateKubernetes checks what does not depend on running in a pod; the
// rest is kube.Config.Validate's, when a label or Lease is set.
func (c *Config) validateKubernetes() error {
	if d := c.Kubernetes.RecheckInterval; d < time.Second || d > time.Hour {
		return errorf("kubernetes.recheck_interval", "%v is outside 1s to 1h", d)
	}
	return nil
}

// validateChroot uses the engine's path rule: chroot and election.path are
// joined into the one path the engine validates (its limit counts both).
func (c *Config) validateChroot() error {
	if ch := c.ZooKeeper.Chroot; ch != "" && ch != "/" {
		if err := election.ValidatePath(ch); err != nil {
			return errorf("zookeeper.chroot", "%v", err)
		}
	}
	return nil
}

func (c *Config) validateZooKeeperTLS(errs *errorList) {
	z := c.ZooKeeper
	if !z.TLS {
		for _, k := range []string{"zookeeper.tls_ca_file", "zookeeper.tls_cert_file", "zookeeper.tls_key_file", "zookeeper.tls_server_name"} {
			if c.str(k) != "" {
				errs.add(errorf(k, "only meaningful with zookeeper.tls: true"))
			}
		}
		return
	}
	errs.add(bothOrNeither("zookeeper.tls_cert_file", z.TLSCertFile, "zookeeper.tls_key_file", z.TLSKeyFile))
	if n := z.TLSServerName; len(n) > maxServerNameBytes || !printable(n) || strings.ContainsRune(n, ' ') {
		errs.add(errorf("zookeeper.tls_server_name", "%s is not a host name", quote(n)))
	}
}

func (c *Config) validateFixACL() error {
	if c.ZooKeeper.FixACL && c.ZooKeeper.Auth == "" {
		return errorf("zookeeper.fix_acl", "only meaningful with zookeeper.auth or zookeeper.auth_file: without credentials electd's nodes are open to all")
	}
	return nil
}

func (c *Config) validateHTTP(errs *errorList) {
	h := c.HTTP
	if err := checkListenAddr(h.Addr); err != nil {
		errs.add(errorf("http.addr", "%v", err))
	}
	key := "http.admin_token"
	if h.AdminTokenFile != "" {
		key = "http.admin_token_file"
	}
	switch {
	case len(h.AdminToken) > MaxAdminTokenBytes:
		errs.add(errorf(key, "%d bytes; at most %d", len(h.AdminToken), MaxAdminTokenBytes))
	case !printable(h.AdminToken):
		errs.add(errorf(key, "has a control character or is not UTF-8; an Authorization header cannot carry it"))
	}
	errs.add(bothOrNeither("http.tls_cert_file", h.TLSCertFile, "http.tls_key_file", h.TLSKeyFile))
	inRange := true
	for _, r := range []struct {
		key     string
		n, max  int
		purpose string
	}{
		{"http.max_connections", h.MaxConnections, MaxConnections, "connections"},
		{"http.max_streams", h.MaxStreams, MaxStreams, "/events clients"},
		{"http.max_waiters", h.MaxWaiters, MaxWaiters, "long polls"},
	} {
		if r.n < 1 || r.n > r.max {
			errs.add(errorf(r.key, "%d is outside 1 to %d %s", r.n, r.max, r.purpose))
			inRange = false
		}
	}
	// Streams and long polls are never evicted at the connection cap (the
	// server evicts idle connections instead), so they must leave room for
	// the probes and the other capped requests.
	if need := h.MaxStreams + h.MaxWaiters + HTTPHeadroom; inRange && h.MaxConnections < need {
		errs.add(errorf("http.max_connections", "%d must be at least http.max_streams + http.max_waiters + %d (%d), so the probes always get in",
			h.MaxConnections, HTTPHeadroom, need))
	}
}

// HTTPHeadroom is the connections http.max_connections keeps beyond the
// /events streams and long polls: for the other capped requests
// (/participants, 8) and the probes.
const HTTPHeadroom = 16

func (c *Config) validateLog() []error {
	return []error{
		oneOf("log.level", strings.ToLower(c.Log.Level), "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "json", "text"),
	}
}

func (c *Config) validateShutdown(errs *errorList) {
	switch t := c.ShutdownTimeout; {
	case t <= 0:
		errs.add(errorf("shutdown_timeout", "must be positive"))
	case t > MaxShutdownTimeout:
		errs.add(errorf("shutdown_timeout", "%v is more than %v", t, MaxShutdownTimeout))
	case c.ShutdownGrace >= t:
		errs.add(errorf("shutdown_grace", "%v must be shorter than shutdown_timeout (%v)", c.ShutdownGrace, t))
	}
}

// validateListenHold checks listen_hold_dir: the holder keeps a socket by
// its address, so each port it holds is fixed (docs/design/kubernetes.md,
// "A crashed electd's ports").
func (c *Config) validateListenHold(errs *errorList) {
	d := c.ListenHoldDir
	if d == "" {
		return
	}
	if !filepath.IsAbs(d) {
		errs.add(errorf("listen_hold_dir", "%s is not an absolute path", quote(d)))
	}
	for _, k := range []struct{ key, addr string }{
		{"http.addr", c.HTTP.Addr}, {"proxy.listen", c.Proxy.Listen}, {"proxy.peer_listen", c.Proxy.PeerListen},
	} {
		if _, port, err := net.SplitHostPort(k.addr); err == nil && port == "0" {
			errs.add(errorf(k.key, "%s: port 0 cannot be held across a restart (listen_hold_dir); name the port", quote(k.addr)))
		}
	}
}

func bothOrNeither(k1, v1, k2, v2 string) error {
	switch {
	case v1 != "" && v2 == "":
		return errorf(k2, "required with %s", k1)
	case v1 == "" && v2 != "":
		return errorf(k1, "required with %s", k2)
	}
	return nil
}

func oneOf(k, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return errorf(k, "%s is not %s", quote(v), orList(allowed))
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// checkListenAddr accepts host:port with a port 0-65535; the host may be
// empty (":4040": every address). Port 0 asks the system for any free port
// (tests, local runs): electd logs the one it got.
func checkListenAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%s is not host:port", quote(s))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s has a bad port (want 0-65535; 0 for any free port)", quote(s))
	}
	return nil
}

// checkPort accepts a port 1-65535, one a client can connect to.
func checkPort(port string) error {
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("bad port %s (want 1-65535)", quote(port))
	}
	return nil
}

// printable reports valid UTF-8 without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}
