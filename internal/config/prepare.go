package config

import (
	"crypto/tls"
	"errors"
	"regexp"
	"strings"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/fielderr"
	"github.com/electd/electd/internal/follow"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/proxy"
)

// Prepared is what a checked Config gives the parts of electd.
type Prepared struct {
	Session  zksession.Config
	Election election.Config
	// HTTPCert is the certificate of http.tls_cert_file, reloaded when the
	// files change; nil serves plain HTTP.
	HTTPCert *KeyPair
	// Kube configures the leader label and Lease mirror, off unless
	// Kube.Enabled(), and the participant gate (Kube.ParticipantGate).
	Kube kube.Config
	// Proxy configures the forwarding proxy; off when Proxy.Listen is
	// empty. Election.Proxy is what it publishes for its peers; a port 0
	// there stands for the port Proxy.Listen (tcp: PeerListen) gets.
	Proxy proxy.Config
	// Follow configures what makes leadership follow the application: the
	// health checks, the candidacy, electd run's command.
	Follow follow.Config
}

// prepare finishes a decoded Config: it reads the secret files into their
// secrets, checks every key and returns what the engine and the HTTP server
// need. The engine's keys are checked by the engine's own Validate, whose
// field errors are mapped to keys through the engine tags; the Kubernetes
// mirror's by kube.Config.Validate, through the kube tags; the proxy's by
// proxy.Config.Validate, through the proxy tags (validateProxy); the
// others here. Every error goes to errs. Nothing connects. given reports
// whether a source set a key; podIP is $POD_IP.
func (c *Config) prepare(errs *errorList, given func(key string) bool, podIP string) Prepared {
	var p Prepared
	c.checkRequired(errs)
	c.readSecrets(errs)
	c.validate(errs)
	zkTLS, err := c.zooKeeperTLS()
	errs.add(err)
	p.Session, p.Election, p.Kube, p.Proxy = c.session(zkTLS), c.election(), c.kube(), c.proxy()
	p.Election.Observer = !c.Election.Candidate || c.App.HealthURL != ""
	p.Proxy.HealthURL = c.App.HealthURL // what the proxy checks when its application's answers time out
	errs.add(c.fieldErrors(p.Session.Validate())...)
	ec := c // election.path is checked with the chroot, unless that is wrong itself
	if errs.has("zookeeper.chroot") {
		cc := *c
		cc.ZooKeeper.Chroot = ""
		ec = &cc
	}
	errs.add(ec.fieldErrors(ec.election().Validate())...)
	errs.add(c.fieldErrors(p.Kube.Validate())...)
	c.validateProxy(errs, given, podIP)
	if h := c.HTTP; h.TLSCertFile != "" && h.TLSKeyFile != "" {
		p.HTTPCert, err = LoadKeyPair("http.tls_cert_file", h.TLSCertFile, "http.tls_key_file", h.TLSKeyFile)
		errs.add(err)
	}
	return p
}

// fieldErrors names the key behind each error a package's Validate
// returned (keyOf): every one of a joined error (errors.Join, or any error
// with Unwrap() []error, nested or not), or the one. nil gives none.
func (c *Config) fieldErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, c.fieldErrors(e)...)
		}
		return errs
	}
	return []error{c.keyOf(err)}
}

// ElectionPath is election.path with zookeeper.chroot applied.
func (c *Config) ElectionPath() string {
	return strings.TrimSuffix(c.ZooKeeper.Chroot, "/") + c.Election.Path
}

// session and election map the keys onto the engine's configuration; each
// field set here is named by its key's engine tag (TestEngineTags).
func (c *Config) session(t *tls.Config) zksession.Config {
	return zksession.Config{
		Servers:        c.ZooKeeper.Servers,
		SessionTimeout: c.ZooKeeper.SessionTimeout,
		Auth:           c.ZooKeeper.Auth,
		AuthPrevious:   c.ZooKeeper.AuthPrevious,
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
		Handoff:       election.HandoffPolicy(c.Election.Handoff),
		ClaimDelay:    c.Election.ClaimDelay,
		FencingOffset: c.Election.FencingOffset,
		Proxy:         c.Proxy.Advertise,
	}
}

func (c *Config) kube() kube.Config {
	k := c.Kubernetes
	return kube.Config{
		LeaderLabel: k.LeaderLabel, LeaseName: k.LeaseName, Identity: c.ID,
		PodName: k.PodName, Namespace: k.Namespace, Server: k.APIServer,
		TokenFile: k.TokenFile, CAFile: k.CAFile, RecheckInterval: k.RecheckInterval,
		ParticipantGate: k.ParticipantGate,
	}
}

// keyOf names the key behind a field error (*fielderr.Error) of the
// engine (through the engine tags), of the Kubernetes mirror (the kube
// tags) or of the proxy (the proxy tags): the key whose tag is the field,
// or the file its secret was read from.
func (c *Config) keyOf(err error) error {
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		return err // an error of no field: shown as it is
	}
	tagOf := map[string]func(Key) string{
		"election": func(k Key) string { return k.Engine },
		"kube":     func(k Key) string { return k.Kube },
		"proxy":    func(k Key) string { return k.Proxy },
	}[fe.Pkg]
	if tagOf == nil {
		return err // a package no key fills: a bug here, shown as it is
	}
	field, cause := fe.Field, inKeys(fe.Err, tagOf)
	for _, k := range table {
		tag := tagOf(k)
		if tag == "" || tag != field {
			continue
		}
		if k.File != "" && c.str(k.File) != "" {
			return &KeyError{Key: k.File, Err: cause}
		}
		return &KeyError{Key: k.Name, Err: cause}
	}
	return err // a field no key sets: a bug here, shown as it is
}

// goName is a Go identifier in a message; quoted is a value quoted in it.
var (
	goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// inKeys rewrites, in a package's message, the names of the package's
// fields that keys set (HoldTime in "is not less than HoldTime") as those
// keys (proxy.hold_time), outside the values it quotes: a message names
// keys, never Go. err stays what it wraps.
func inKeys(err error, tagOf func(Key) string) error {
	msg := err.Error()
	keyOfTag := map[string]string{}
	for _, k := range table {
		if tag := tagOf(k); tag != "" {
			keyOfTag[tag] = k.Name
		}
	}
	var b strings.Builder
	last := 0
	rename := func(s string) string {
		return goName.ReplaceAllStringFunc(s, func(w string) string {
			if key, ok := keyOfTag[w]; ok {
				return key
			}
			return w
		})
	}
	for _, q := range quoted.FindAllStringIndex(msg, -1) {
		b.WriteString(rename(msg[last:q[0]]))
		b.WriteString(msg[q[0]:q[1]])
		last = q[1]
	}
	b.WriteString(rename(msg[last:]))
	if b.String() == msg {
		return err
	}
	return renamed{msg: b.String(), err: err}
}

// renamed is an error whose message inKeys rewrote.
type renamed struct {
	msg string
	err error
}

func (r renamed) Error() string { return r.msg }
func (r renamed) Unwrap() error { return r.err }

// checkRequired reports each required key that is not set, with the flag
// and the variable that set it (the key's name is the file's).
func (c *Config) checkRequired(errs *errorList) {
	for _, k := range table {
		if k.Required && k.field(c).Len() == 0 {
			errs.add(errorf(k.Name, "required; set --%s or %s, e.g. %s", k.Name, k.Env, k.Example))
		}
	}
}

// readSecrets reads each secret's file key, when set, into the secret,
// trimmed like a value from any other source.
func (c *Config) readSecrets(errs *errorList) {
	for _, k := range table {
		if k.File == "" || c.str(k.File) == "" {
			continue
		}
		if k.needsProxy() && c.Proxy.Listen == "" {
			continue // refused as a key that does nothing (validateProxy)
		}
		if c.str(k.Name) != "" {
			errs.add(errorf(k.File, "set together with %s; use one of them", k.Name))
			continue
		}
		b, err := readFile(k.File, c.str(k.File), MaxSecretFileBytes)
		if err != nil {
			errs.add(err)
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			errs.add(errorf(k.File, "%s holds only whitespace", quote(c.str(k.File))))
			continue
		}
		k.field(c).SetString(s)
	}
}

// checkSecret refuses a secret that is set to whitespace alone, from any
// source: decodeHook would take it for "not set" and fall back to the
// default, silently disabling the token. raw is the value as the source
// holds it.
func checkSecret(k Key, raw any) error {
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
