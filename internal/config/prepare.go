package config

import (
	"crypto/tls"
	"errors"
	"strings"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/kube"
)

// Prepared is what a checked Config gives the parts of electd.
type Prepared struct {
	Session  election.SessionConfig
	Election election.Config
	// HTTPCert is the certificate of http.tls_cert_file, reloaded when the
	// files change; nil serves plain HTTP.
	HTTPCert *KeyPair
	// Kube configures the leader label and Lease mirror; off unless
	// Kube.Enabled().
	Kube kube.Config
}

// Prepare finishes a decoded Config: it reads the secret files into their
// secrets, checks every key and returns what the engine and the HTTP server
// need. The engine's keys are checked by the engine's own Validate, whose
// field errors are mapped to keys through the engine tags; the others here.
// Errors are *KeyError. Nothing connects.
func (c *Config) Prepare() (Prepared, error) {
	var p Prepared
	if err := c.checkRequired(); err != nil {
		return p, err
	}
	if err := c.readSecrets(); err != nil {
		return p, err
	}
	if err := c.validate(); err != nil {
		return p, err
	}
	zkTLS, err := c.zooKeeperTLS()
	if err != nil {
		return p, err
	}
	p.Session, p.Election = c.session(zkTLS), c.election()
	if err := p.Session.Validate(); err != nil {
		return p, c.keyOf(err)
	}
	if err := p.Election.Validate(); err != nil {
		return p, c.keyOf(err)
	}
	p.Kube = c.kube()
	if err := p.Kube.Validate(); err != nil {
		var ke *kube.KeyError
		if errors.As(err, &ke) {
			return p, &KeyError{Key: ke.Key, Err: ke.Err}
		}
		return p, err
	}
	if h := c.HTTP; h.TLSCertFile != "" {
		if p.HTTPCert, err = LoadKeyPair("http.tls_cert_file", h.TLSCertFile, "http.tls_key_file", h.TLSKeyFile); err != nil {
			return p, err
		}
	}
	return p, nil
}

// ElectionPath is election.path with zookeeper.chroot applied.
func (c *Config) ElectionPath() string {
	return strings.TrimSuffix(c.ZooKeeper.Chroot, "/") + c.Election.Path
}

// session and election map the keys onto the engine's configuration; each
// field set here is named by its key's engine tag (TestEngineTags).
func (c *Config) session(t *tls.Config) election.SessionConfig {
	return election.SessionConfig{
		Servers:        c.ZooKeeper.Servers,
		SessionTimeout: c.ZooKeeper.SessionTimeout,
		Auth:           c.ZooKeeper.Auth,
		FixACL:         c.ZooKeeper.FixACL,
		TLS:            t,
	}
}

func (c *Config) election() election.Config {
	return election.Config{
		Path:          c.ElectionPath(),
		Mode:          election.Mode(c.Election.Mode),
		ID:            c.ID,
		Advertise:     c.Advertise,
		Term:          c.Election.Term,
		OnSuspend:     election.SuspendPolicy(c.Election.OnSuspend),
		ClaimDelay:    c.Election.ClaimDelay,
		FencingOffset: c.Election.FencingOffset,
	}
}

func (c *Config) kube() kube.Config {
	k := c.Kubernetes
	return kube.Config{
		LeaderLabel: k.LeaderLabel, LeaseName: k.LeaseName, Identity: c.ID,
		PodName: k.PodName, Namespace: k.Namespace, Server: k.APIServer,
		TokenFile: k.TokenFile, CAFile: k.CAFile, RecheckInterval: k.RecheckInterval,
	}
}

// keyOf names the key behind an engine *election.FieldError: the key whose
// engine tag is the field, or the file it was read from.
func (c *Config) keyOf(err error) error {
	var fe *election.FieldError
	if errors.As(err, &fe) {
		for _, k := range table {
			if k.Engine != fe.Field {
				continue
			}
			if k.File != "" && c.str(k.File) != "" {
				return &KeyError{Key: k.File, Err: fe.Err}
			}
			return &KeyError{Key: k.Name, Err: fe.Err}
		}
	}
	return err // a field no key sets: a bug here, shown as it is
}

// checkRequired reports the first required key that is not set.
func (c *Config) checkRequired() error {
	for _, k := range table {
		if k.Required && k.field(c).Len() == 0 {
			return errorf(k.Name, "required; e.g. %s", k.Example)
		}
	}
	return nil
}

// readSecrets reads each secret's file key, when set, into the secret,
// trimmed like a value from any other source.
func (c *Config) readSecrets() error {
	for _, k := range table {
		if k.File == "" || c.str(k.File) == "" {
			continue
		}
		if c.str(k.Name) != "" {
			return errorf(k.File, "set together with %s; use one of them", k.Name)
		}
		b, err := ReadFile(k.File, c.str(k.File), MaxSecretFileBytes)
		if err != nil {
			return err
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return errorf(k.File, "%s holds only whitespace", quote(c.str(k.File)))
		}
		k.field(c).SetString(s)
	}
	return nil
}

// CheckSecret refuses a secret that is set to whitespace alone, from any
// source: DecodeHook would take it for "not set" and fall back to the
// default, silently disabling the token. raw is the value as the source
// holds it.
func CheckSecret(k Key, raw any) error {
	if s, ok := raw.(string); ok && s != "" && strings.TrimSpace(s) == "" {
		return errorf(k.Name, "holds only whitespace")
	}
	return nil
}

// str is a string key's value.
func (c *Config) str(name string) string {
	k, _ := Lookup(name)
	return k.field(c).String()
}
