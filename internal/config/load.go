package config

import (
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/electd/electd/internal/kube"
)

// Loaded is a configuration as Load found and checked it, and what the
// command line asked for besides.
type Loaded struct {
	// Config is every key's value, defaults included.
	Config
	// Prepared is what was built and checked from them once.
	Prepared Prepared
	// Help and Version are --help and --version: Load reads nothing else.
	Help, Version bool
	// Validate is --validate: print the effective configuration and exit.
	Validate bool
	// Run is electd run (exec mode, docs/design/handover.md "Exec mode"), and
	// Command its command: what follows --.
	Run     bool
	Command []string
	// UnknownEnv are the ELECTD_* variables that name no key and are no
	// slip for one: they only warn, since Kubernetes injects ELECTD_PORT
	// for a Service named electd. A slip (ELECTD_ZOOKEEPER_SERVER) is an
	// error that names the variable it likely meant.
	UnknownEnv []string
}

// Load builds electd's configuration from its arguments, `[run] [--config
// FILE] [--KEY VALUE ...] [-- CMD ...]`, and its environment (os.Environ's
// form): the file given by --config < ELECTD_* variables < flags named after
// the keys (docs/design/http-contract.md, "Configuration"). It decodes every value the
// same way whatever its source (decodeHook), derives the defaults that
// depend on keys that were set (derive), and checks every key. Nothing
// connects. An error is a *KeyError, or Errors when there are several:
// each names its key, one line each.
func Load(args, environ []string) (*Loaded, error) {
	env := newEnvironment(environ)
	l := &Loaded{}
	args, l.Command, l.Run = splitRun(args)
	fs, opts, err := parseFlags(args, l.Run && l.Command == nil)
	if err != nil {
		return nil, err
	}
	if opts.help || opts.version {
		l.Help, l.Version = opts.help, opts.version
		return l, nil
	}
	l.Validate = opts.validate
	var errs errorList
	for _, name := range env.unknown() {
		if n := nearestEnv(name); n != "" {
			errs.add(errorf(name, "unknown environment variable%s", didYouMean(n+" ("+keyOfEnv(n)+")", "")))
			continue
		}
		l.UnknownEnv = append(l.UnknownEnv, name)
	}

	v, err := sources(fs, opts.config, env)
	if err != nil {
		return nil, err
	}
	errs.add(checkKeys(v)...)
	l.Config = env.computedDefaults()
	errs.add(decode(v, &l.Config, len(errs.errs) == 0)...)
	if k := &l.Kubernetes; k.Namespace == "" && (k.LeaderLabel != "" || k.LeaseName != "" || k.ParticipantGate) {
		k.Namespace = kube.DefaultNamespace(env.get, kube.DefaultNamespaceFile)
	}
	l.derive(func(key string) bool { return given(v, key) && !errs.has(key) }, l.Run)
	l.deriveProxyAdvertise(env.get("POD_IP"))
	l.Prepared = l.prepare(&errs, func(key string) bool { return given(v, key) }, env.get("POD_IP"))
	if l.Run {
		l.checkRun(l.Command, env.get("PATH"), &errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	l.Prepared.Follow = l.follow(environ)
	return l, nil
}

// environment is the process's environment, passed in rather than read
// here, so that tests and main say what it holds.
type environment map[string]string

func newEnvironment(environ []string) environment {
	e := environment{}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			e[name] = value
		}
	}
	return e
}

func (e environment) get(name string) string { return e[name] }

// unknown lists the ELECTD_* variables that name no key, sorted.
func (e environment) unknown() []string {
	var out []string
	for name := range e {
		if _, ok := lookupEnv(name); strings.HasPrefix(name, "ELECTD_") && !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// keys is the nested map of the ELECTD_* variables that name keys. An
// empty variable is not set, so the file's value or the default applies.
func (e environment) keys() map[string]any {
	m := map[string]any{}
	for _, k := range table {
		if val := e[k.Env]; val != "" {
			setIn(m, k, val)
		}
	}
	return m
}

// computedDefaults are the defaults with those computed from the
// environment: id ($POD_NAME, else the host name), kubernetes.pod_name and
// kubernetes.api_server.
func (e environment) computedDefaults() Config {
	c := Defaults()
	c.ID = e["POD_NAME"]
	if c.ID == "" {
		c.ID, _ = os.Hostname()
	}
	c.Kubernetes.PodName = e["POD_NAME"]
	c.Kubernetes.APIServer = kube.InClusterServer(e.get)
	return c
}

// sources hands the three sources to viper, which merges them: the file
// (readConfigFile: at most MaxConfigFileBytes, parsed once by parseYAML,
// which bounds the document's shape: viper's own reader would hand any
// shape to yaml.v3, whose duplicate-key check is quadratic), then the
// environment over it, then the flags already parsed into fs.
func sources(fs *pflag.FlagSet, file string, env environment) (*viper.Viper, error) {
	v := viper.New()
	for _, k := range table {
		if err := v.BindFlagValue(k.Name, setFlag{fs.Lookup(k.Name)}); err != nil {
			return nil, errorf(k.Name, "%v", err)
		}
	}
	if file != "" {
		b, err := readConfigFile(file)
		if err != nil {
			return nil, err
		}
		m, err := parseYAML(b)
		if err != nil {
			return nil, err
		}
		if err := v.MergeConfigMap(m); err != nil {
			return nil, errorf("config", "%v", err)
		}
	}
	if err := v.MergeConfigMap(env.keys()); err != nil {
		return nil, errorf("config", "%v", err)
	}
	return v, nil
}

// given reports whether a source set key to something other than blank
// (blank means "the default" in every source).
func given(v *viper.Viper, key string) bool {
	if !v.IsSet(key) {
		return false
	}
	switch val := v.Get(key).(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(val) != ""
	}
	return true
}

// checkKeys names, before decoding, what decoding would only report per
// section: a key of the file that electd does not know, a section that is
// not a mapping, a key given a mapping; and a secret set to whitespace
// alone (decoding would take it for unset).
func checkKeys(v *viper.Viper) []error {
	var errs []error
	all := v.AllKeys()
	slices.Sort(all)
	for _, name := range all {
		if _, ok := Lookup(name); ok {
			continue
		}
		errs = append(errs, checkPath(v, name))
	}
	for _, k := range table {
		if k.Secret {
			errs = append(errs, checkSecret(k, v.Get(k.Name)))
		}
	}
	return errs
}

// checkPath explains why name, from the file, is not a key: walking down
// its segments, the first that is neither a section nor a key is unknown,
// and a key with segments below it was given a mapping.
func checkPath(v *viper.Viper, name string) error {
	segs := strings.Split(name, ".")
	for i := range segs {
		p := strings.Join(segs[:i+1], ".")
		if _, ok := Lookup(p); ok {
			return errorf(p, "must be a single value, not a mapping")
		}
		if !isSection(p) {
			return errorf(showKey(p), "unknown key in the configuration file%s", didYouMean(nearest(p), ""))
		}
	}
	if v.Get(name) == nil {
		return nil // "zookeeper:" with every key commented out
	}
	return errorf(name, "must be a mapping of keys")
}

// decode decodes what v merged onto c with decodeHook and returns a
// *KeyError per bad value. exact refuses keys that are not Config's; it is
// off once checkKeys has named them, so that each is said once.
func decode(v *viper.Viper, c *Config, exact bool) []error {
	err := v.Unmarshal(c, func(dc *mapstructure.DecoderConfig) {
		decoderOptions(dc)
		dc.ErrorUnused = exact
	})
	var errs []error
	walkErrors(err, func(err error) {
		if de, ok := err.(*mapstructure.DecodeError); ok && de.Name() != "" {
			errs = append(errs, &KeyError{Key: de.Name(), Err: de.Unwrap()})
			return
		}
		errs = append(errs, errorf("config", "%v", err))
	})
	return errs
}

// walkErrors calls f with each error that err joins (mapstructure joins
// one *DecodeError per bad value, nested per section, under one wrapping
// message), or with err itself.
func walkErrors(err error, f func(error)) {
	switch e := err.(type) {
	case nil:
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			walkErrors(x, f)
		}
	case *mapstructure.DecodeError:
		if _, joined := e.Unwrap().(interface{ Unwrap() []error }); joined {
			walkErrors(e.Unwrap(), f)
			return
		}
		f(e)
	default:
		if inner := errors.Unwrap(err); inner != nil {
			walkErrors(inner, f)
			return
		}
		f(err)
	}
}
