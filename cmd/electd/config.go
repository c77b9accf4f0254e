package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/kube"
)

// Config is electd's effective configuration: DESIGN.md's table, parsed.
type Config struct {
	ID        string
	Advertise string
	ZooKeeper struct {
		Servers        []string
		Chroot         string
		SessionTimeout time.Duration
		Auth           string // from zookeeper.auth or the contents of zookeeper.auth_file
		AuthFile       string
	}
	Election struct {
		Path          string // as configured, without the chroot
		Mode          string
		Term          time.Duration
		OnSuspend     string
		ClaimDelay    time.Duration
		FencingOffset int64
	}
	HTTP struct {
		Addr       string
		AdminToken string
	}
	Log struct {
		Level  string
		Format string
	}
	ShutdownGrace   time.Duration
	ShutdownTimeout time.Duration
	Kubernetes      struct {
		LeaderLabel     string
		LeaseName       string
		PodName         string // default $POD_NAME
		Namespace       string // default $POD_NAMESPACE, else the service account's namespace file
		TokenFile       string
		CAFile          string
		RecheckInterval time.Duration
	}
}

// key is one configuration key: its name is also its flag, and envName(name)
// its environment variable.
type key struct {
	name   string
	kind   string // shown in --help: string, list, duration, int
	def    string // default as a string; "" for none
	help   string
	secret bool
}

// keys lists every key of DESIGN.md's table, in its order. The defaults are
// the table's.
var keys = []key{
	{"id", "string", "", "this participant's id, written as its node's data", false},
	{"advertise", "string", "", "data published with the id, e.g. the app's address, so followers can find the leader", false},
	{"zookeeper.servers", "list", "", "ZooKeeper host:port list, comma-separated (required)", false},
	{"zookeeper.chroot", "string", "", "path prefix for everything, e.g. /prod", false},
	{"zookeeper.session_timeout", "duration", "10s", "requested ZooKeeper session timeout; the negotiated one counts", false},
	{"zookeeper.auth", "string", "", "digest credentials user:password; nodes then get ACLs only these may change", true},
	{"zookeeper.auth_file", "string", "", "path of a file holding user:password (a mounted Kubernetes Secret)", false},
	{"election.path", "string", "", "absolute znode path of the election (required)", false},
	{"election.mode", "string", "latch", "latch, selector or race", false},
	{"election.term", "duration", "0s", "selector mode only: length of one leadership term; 0s holds until released", false},
	{"election.on_suspend", "string", "hold", "hold (lead through a disconnect while the lease lasts) or step-down", false},
	{"election.claim_delay", "duration", "0s", "a new leader waits this long before its first 200", false},
	{"election.fencing_offset", "int", "0", "added to every fencing token", false},
	{"http.addr", "string", ":4040", "listen address host:port of the HTTP API and /metrics", false},
	{"http.admin_token", "string", "", "bearer token for POST /leader/release; empty disables it", true},
	{"log.level", "string", "info", "debug, info, warn or error", false},
	{"log.format", "string", "json", "json or text", false},
	{"shutdown_grace", "duration", "0s", "on SIGTERM, answer 503 this long before releasing leadership", false},
	{"shutdown_timeout", "duration", "10s", "how long shutdown after SIGTERM may take in all", false},
	{"kubernetes.leader_label", "string", "", "label key set to \"true\" on the leader's own pod, e.g. electd.io/leader; empty: no label", false},
	{"kubernetes.lease_name", "string", "", "coordination.k8s.io/v1 Lease that mirrors the leader; empty: none", false},
	{"kubernetes.pod_name", "string", "", "this pod's name (default: $POD_NAME)", false},
	{"kubernetes.namespace", "string", "", "this pod's namespace (default: $POD_NAMESPACE, else the service account's namespace file)", false},
	{"kubernetes.token_file", "string", kube.DefaultTokenFile, "service account token, read again for every call (the kubelet rotates it)", false},
	{"kubernetes.ca_file", "string", kube.DefaultCAFile, "CA bundle that verifies the API server", false},
	{"kubernetes.recheck_interval", "duration", "10s", "how often the leader re-checks the label and renews the Lease", false},
}

// envName is the environment variable of a key: ELECTD_ZOOKEEPER_SERVERS.
func envName(k string) string {
	return "ELECTD_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_"))
}

// keyError names the key a bad value came from.
type keyError struct{ key, msg string }

func (e *keyError) Error() string { return e.key + ": " + e.msg }

func errorf(key, format string, args ...any) error {
	return &keyError{key, fmt.Sprintf(format, args...)}
}

// path is the election path with the chroot applied.
func (c *Config) path() string {
	return strings.TrimSuffix(c.ZooKeeper.Chroot, "/") + c.Election.Path
}

func (c *Config) sessionConfig() election.SessionConfig {
	return election.SessionConfig{
		Servers:        c.ZooKeeper.Servers,
		SessionTimeout: c.ZooKeeper.SessionTimeout,
		Auth:           c.ZooKeeper.Auth,
	}
}

// kubeConfig is the label and Lease configuration; the API server is the
// in-cluster one ($KUBERNETES_SERVICE_HOST and _PORT).
func (c *Config) kubeConfig() kube.Config {
	k := &c.Kubernetes
	return kube.Config{
		LeaderLabel:     k.LeaderLabel,
		LeaseName:       k.LeaseName,
		Identity:        c.ID,
		PodName:         k.PodName,
		Namespace:       k.Namespace,
		Server:          kube.InClusterServer(os.Getenv),
		TokenFile:       k.TokenFile,
		CAFile:          k.CAFile,
		RecheckInterval: k.RecheckInterval,
	}
}

func (c *Config) electionConfig() election.Config {
	return election.Config{
		Path:          c.path(),
		Mode:          election.Mode(c.Election.Mode),
		ID:            c.ID,
		Advertise:     c.Advertise,
		Term:          c.Election.Term,
		OnSuspend:     election.SuspendPolicy(c.Election.OnSuspend),
		ClaimDelay:    c.Election.ClaimDelay,
		FencingOffset: c.Election.FencingOffset,
	}
}

// validate checks every key and their relations; the error names the key.
// Values were parsed already (types, units, signs).
func (c *Config) validate() error {
	if c.ID == "" {
		return errorf("id", "empty, and neither $POD_NAME nor the host name is available")
	}
	if len(c.ZooKeeper.Servers) == 0 {
		return errorf("zookeeper.servers", "required: at least one host:port")
	}
	for _, s := range c.ZooKeeper.Servers {
		if err := checkHostPort(s, false); err != nil {
			return errorf("zookeeper.servers", "%v", err)
		}
	}
	if ch := c.ZooKeeper.Chroot; ch != "" && ch != "/" {
		if err := election.ValidatePath(ch); err != nil {
			return errorf("zookeeper.chroot", "%v", err)
		}
	}
	if err := c.validateAuth(); err != nil {
		return err
	}
	if c.Election.Path == "" {
		return errorf("election.path", "required: an absolute znode path such as /services/web")
	}
	if err := election.ValidatePath(c.Election.Path); err != nil {
		return errorf("election.path", "%v", err)
	}
	if err := oneOf("election.mode", c.Election.Mode, "latch", "selector", "race"); err != nil {
		return err
	}
	if c.Election.Term > 0 && c.Election.Mode != "selector" {
		return errorf("election.term", "only meaningful in selector mode (election.mode is %s); remove it or set it to 0s", c.Election.Mode)
	}
	if err := oneOf("election.on_suspend", c.Election.OnSuspend, "hold", "step-down"); err != nil {
		return err
	}
	if err := checkHostPort(c.HTTP.Addr, true); err != nil {
		return errorf("http.addr", "%v", err)
	}
	if err := oneOf("log.level", strings.ToLower(c.Log.Level), "debug", "info", "warn", "error"); err != nil {
		return err
	}
	if err := oneOf("log.format", c.Log.Format, "json", "text"); err != nil {
		return err
	}
	if c.ShutdownTimeout <= 0 {
		return errorf("shutdown_timeout", "must be positive")
	}
	if c.ShutdownGrace >= c.ShutdownTimeout {
		return errorf("shutdown_grace", "%v must be shorter than shutdown_timeout (%v)", c.ShutdownGrace, c.ShutdownTimeout)
	}
	if c.Kubernetes.RecheckInterval < time.Second {
		return errorf("kubernetes.recheck_interval", "%v is below 1s", c.Kubernetes.RecheckInterval)
	}
	if err := c.kubeConfig().Validate(); err != nil {
		return err // names the key
	}
	// The engine's own checks, last: their messages name the key too.
	if err := c.sessionConfig().Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "election: "))
	}
	if err := c.electionConfig().Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "election: "))
	}
	return nil
}

// validateAuth checks zookeeper.auth and reads zookeeper.auth_file into
// ZooKeeper.Auth. Messages never quote the secret.
func (c *Config) validateAuth() error {
	z := &c.ZooKeeper
	if z.AuthFile != "" {
		if z.Auth != "" {
			return errorf("zookeeper.auth_file", "set together with zookeeper.auth; use one of them")
		}
		b, err := os.ReadFile(z.AuthFile)
		if err != nil {
			return errorf("zookeeper.auth_file", "cannot read: %v", err)
		}
		z.Auth = strings.TrimSpace(string(b))
		if !isUserPassword(z.Auth) {
			return errorf("zookeeper.auth_file", "%s does not hold user:password", z.AuthFile)
		}
		return nil
	}
	if z.Auth != "" && !isUserPassword(z.Auth) {
		return errorf("zookeeper.auth", "not user:password")
	}
	return nil
}

func isUserPassword(s string) bool {
	u, p, ok := strings.Cut(s, ":")
	return ok && u != "" && p != "" && !strings.ContainsAny(s, "\n\r")
}

func oneOf(k, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return errorf(k, "%q is not %s", v, strings.Join(allowed, ", "))
}

// checkHostPort accepts host:port with a numeric port 1-65535; an empty host
// only when listening (":4040").
func checkHostPort(s string, listen bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	if host == "" && !listen {
		return fmt.Errorf("%q has no host", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has a bad port (want 1-65535)", s)
	}
	return nil
}
