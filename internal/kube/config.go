package kube

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

// In-cluster defaults: where the kubelet mounts a pod's service account.
const (
	DefaultTokenFile     = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	DefaultCAFile        = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	DefaultNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// Defaults of Config.
const (
	DefaultRecheckInterval = 10 * time.Second
	DefaultCallTimeout     = 5 * time.Second
	DefaultGateGrace       = time.Second
)

// maxFileSize bounds every file read here (token, CA bundle, namespace).
const maxFileSize = 1 << 20

// Config says what to mirror and how to reach the API server. Validate's
// errors name its fields; internal/config maps them to its keys.
type Config struct {
	// LeaderLabel is the label key set to "true" on the leader's pod, e.g.
	// electd.io/leader. Empty: no label.
	LeaderLabel string
	// LeaseName is the coordination.k8s.io/v1 Lease that mirrors the leader.
	// Empty: no Lease.
	LeaseName string
	// Identity is the Lease's holderIdentity: the participant's id.
	Identity string
	// PodName and Namespace name this participant's pod (downward API).
	// PodName is needed for the label only; Namespace for both.
	PodName   string
	Namespace string
	// Server is the API server's base URL, https://host:port; see InClusterServer.
	Server string
	// TokenFile holds the service account's bearer token. It is read again
	// for every call: the kubelet rotates projected tokens.
	TokenFile string
	// CAFile is the PEM bundle that verifies the API server's certificate.
	CAFile string
	// RecheckInterval is how often a leader checks the label (and renews
	// the Lease). Default DefaultRecheckInterval.
	RecheckInterval time.Duration
	// CallTimeout bounds one API call. Default DefaultCallTimeout.
	CallTimeout time.Duration
	// ParticipantGate turns the participant gate on (Gate): the pod
	// condition GateCondition follows the participant. It maps ids to pod
	// names, so Identity must be PodName.
	ParticipantGate bool
	// GateGrace is how long a lost participant's id may take to join
	// again before the leader sets its pod's condition False. Default
	// DefaultGateGrace.
	GateGrace time.Duration

	// Logger, Recorder and Clock may be nil: discard, count nothing, real time.
	Logger   *slog.Logger
	Recorder Recorder
	Clock    clock.Clock
	// Transport replaces the TLS transport built from CAFile (tests).
	Transport http.RoundTripper
}

// Enabled reports whether there is anything to mirror.
func (c Config) Enabled() bool { return c.LeaderLabel != "" || c.LeaseName != "" }

// LeaseDuration is the Lease's leaseDurationSeconds: three recheck
// intervals. One or two late renewals then do not make readers of the
// Lease think the leader gone.
func (c Config) LeaseDuration() time.Duration { return 3 * c.withDefaults().RecheckInterval }

func (c Config) withDefaults() Config {
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = DefaultRecheckInterval
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.GateGrace <= 0 {
		c.GateGrace = DefaultGateGrace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return c
}

var (
	// A label key: an optional DNS subdomain prefix and "/", then a name
	// (apimachinery's IsQualifiedName).
	labelNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	subdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabelRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// ValidateLabelKey checks a label key the way the API server does.
func ValidateLabelKey(k string) error {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		prefix, name = "", k
	}
	switch {
	case hasPrefix && (len(prefix) > 253 || !subdomainRE.MatchString(prefix)):
		return fmt.Errorf("%q: the prefix before / must be a DNS subdomain such as electd.io", k)
	case len(name) > 63 || !labelNameRE.MatchString(name):
		return fmt.Errorf("%q: the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k)
	}
	return nil
}

func validateSubdomain(s string) error {
	if len(s) > 253 || !subdomainRE.MatchString(s) {
		return fmt.Errorf("%q is not a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253)", s)
	}
	return nil
}

// Validate checks every field and that the token and CA files are usable.
// It returns every wrong field at once, each *FieldError, joined
// (errors.Join): one error a field, the first found.
func (c Config) Validate() error {
	if !c.Enabled() && !c.ParticipantGate {
		return nil
	}
	var errs []error
	wrong := map[string]bool{}
	add := func(field string, err error) {
		if err != nil && !wrong[field] {
			wrong[field] = true
			errs = append(errs, &FieldError{Pkg: "kube", Field: field, Err: err})
		}
	}
	if c.LeaderLabel != "" {
		add("LeaderLabel", ValidateLabelKey(c.LeaderLabel))
		add("PodName", validatePodName(c.PodName))
	}
	if c.LeaseName != "" {
		add("LeaseName", validateSubdomain(c.LeaseName))
		if c.Identity == "" {
			add("LeaseName", errors.New("set, but the participant has no id"))
		}
	}
	if c.ParticipantGate {
		add("PodName", validatePodName(c.PodName))
		if c.PodName != "" && c.Identity != c.PodName {
			// The leader finds a lost participant's pod by its id.
			add("ParticipantGate", fmt.Errorf("set, but the id %q is not the pod name %q: leave the id unset (it defaults to $POD_NAME)", c.Identity, c.PodName))
		}
	}
	add("Namespace", validateNamespace(c.Namespace))
	if c.Server == "" {
		// Server comes from the pod's environment: name the field that needs it.
		field := "LeaderLabel"
		switch {
		case c.LeaderLabel != "":
		case c.LeaseName != "":
			field = "LeaseName"
		default:
			field = "ParticipantGate"
		}
		add(field, errors.New("set, but $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT are not: "+
			"electd must run in a pod (or those variables must name the API server)"))
	}
	if c.RecheckInterval < 0 || c.RecheckInterval > 0 && c.RecheckInterval < time.Second {
		add("RecheckInterval", fmt.Errorf("%v is below 1s", c.RecheckInterval))
	}
	if _, err := readToken(c.TokenFile); err != nil {
		add("TokenFile", err)
	}
	if c.Transport == nil {
		if _, err := loadCA(c.CAFile); err != nil {
			add("CAFile", err)
		}
	}
	return errors.Join(errs...)
}

func validatePodName(name string) error {
	if name == "" {
		return errors.New("empty and $POD_NAME is not set; set POD_NAME from the downward API (metadata.name)")
	}
	return validateSubdomain(name)
}

func validateNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("empty, $POD_NAMESPACE is not set and %s cannot be read", DefaultNamespaceFile)
	case len(ns) > 63 || !dnsLabelRE.MatchString(ns):
		return fmt.Errorf("%q is not a DNS label", ns)
	}
	return nil
}

// FieldError is a Validate error: Field names the wrong field of Config,
// Err says how. A caller that set the fields from its configuration keys
// maps Field back to the key, as for election.FieldError.
type FieldError = fielderr.Error

// InClusterServer is the API server's URL from the variables the kubelet
// sets in every container, or "" outside a pod.
func InClusterServer(getenv func(string) string) string {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return ""
	}
	return "https://" + net.JoinHostPort(host, port)
}

// DefaultNamespace is $POD_NAMESPACE, else the service account's namespace
// file, else "".
func DefaultNamespace(getenv func(string) string, namespaceFile string) string {
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := readSmall(namespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readSmall reads a file of at most maxFileSize bytes.
func readSmall(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no file named")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return b, nil
}

// readToken reads a bearer token file: one line of printable ASCII.
func readToken(path string) (string, error) {
	b, err := readSmall(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	for _, r := range tok {
		if r < 0x21 || r > 0x7e {
			return "", fmt.Errorf("%s does not hold a bearer token (one line of printable ASCII)", path)
		}
	}
	return tok, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	b, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
