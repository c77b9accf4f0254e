package main

import (
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/kube"
)

// load builds the configuration from the optional file named by --config,
// the ELECTD_* environment and the flags already parsed into fs, in that
// order of precedence (viper merges them), decodes it with viper's
// UnmarshalExact and internal/config's decode hook, then checks it. Nothing
// connects. Every error is a *config.KeyError.
func load(fs *pflag.FlagSet, file string) (*Config, error) {
	v := viper.New()
	for _, k := range config.Keys() {
		if err := v.BindEnv(k.Name, k.Env); err != nil {
			return nil, config.Errorf(k.Name, "%v", err)
		}
		if err := v.BindFlagValue(k.Name, setFlag{fs.Lookup(k.Name)}); err != nil {
			return nil, config.Errorf(k.Name, "%v", err)
		}
	}
	if file != "" {
		if err := readFile(v, file); err != nil {
			return nil, err
		}
	}
	if err := checkKeys(v); err != nil {
		return nil, err
	}
	c := &Config{Config: config.Defaults()}
	c.ID = defaultID()
	c.Kubernetes.PodName = os.Getenv("POD_NAME")
	c.Kubernetes.APIServer = kube.InClusterServer(os.Getenv)
	if err := v.UnmarshalExact(&c.Config, config.DecoderOptions); err != nil {
		return nil, decodeError(err)
	}
	if k := &c.Kubernetes; k.Namespace == "" && (k.LeaderLabel != "" || k.LeaseName != "") {
		k.Namespace = kube.DefaultNamespace(os.Getenv, kube.DefaultNamespaceFile)
	}
	p, err := c.Prepare()
	if err != nil {
		return nil, err
	}
	c.prepared = p
	return c, nil
}

// setFlag is a key's flag as viper sees it: set only when given a value
// that is not empty, so that --id "" falls back to the environment, the
// file and the default, like ELECTD_ID="" does (viper ignores empty
// environment variables).
type setFlag struct{ *pflag.Flag }

func (f setFlag) HasChanged() bool    { return f.Changed && f.Value.String() != "" }
func (f setFlag) Name() string        { return f.Flag.Name }
func (f setFlag) ValueString() string { return f.Value.String() }
func (f setFlag) ValueType() string   { return f.Value.Type() }

// defaultID is $POD_NAME, else the host name, else "".
func defaultID() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h
}

// readFile hands the YAML file to viper: a regular file of at most
// config.MaxConfigFileBytes (--config /dev/zero or a FIFO fails at once),
// parsed once by config.ParseYAML, which bounds the document's shape
// before decoding it (viper's own ReadConfig would hand any shape to
// yaml.v3, whose duplicate-key check is quadratic).
func readFile(v *viper.Viper, file string) error {
	b, err := config.ReadFile("config", file, config.MaxConfigFileBytes)
	if err != nil {
		return err
	}
	m, err := config.ParseYAML(b)
	if err != nil {
		return err
	}
	return v.MergeConfigMap(m)
}

// checkKeys names, before decoding, what UnmarshalExact would only report
// per section: a key of the file that electd does not know, a section
// that is not a mapping, a key given a mapping; and a secret set to
// whitespace alone (decoding would take it for unset).
func checkKeys(v *viper.Viper) error {
	all := v.AllKeys()
	slices.Sort(all)
	for _, name := range all {
		if _, ok := config.Lookup(name); ok {
			continue
		}
		if err := checkPath(v, name); err != nil {
			return err
		}
	}
	for _, k := range config.Keys() {
		if k.Secret {
			if err := config.CheckSecret(k, v.Get(k.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPath explains why name, from the file, is not a key: walking down
// its segments, the first that is neither a section nor a key is unknown,
// and a key with segments below it was given a mapping.
func checkPath(v *viper.Viper, name string) error {
	segs := strings.Split(name, ".")
	for i := range segs {
		p := strings.Join(segs[:i+1], ".")
		if _, ok := config.Lookup(p); ok {
			return config.Errorf(p, "must be a single value, not a mapping")
		}
		if !config.IsSection(p) {
			return config.Errorf(config.ShowKey(p), "unknown key in the configuration file")
		}
	}
	if v.Get(name) == nil {
		return nil // "zookeeper:" with every key commented out
	}
	return config.Errorf(name, "must be a mapping of keys")
}

// decodeError turns mapstructure's error (errors.Join of a
// *mapstructure.DecodeError per bad value, named by its dotted key) into one
// *config.KeyError: the first bad value's, in the table's order.
func decodeError(err error) error {
	var de *mapstructure.DecodeError
	if errors.As(err, &de) && de.Name() != "" {
		return &config.KeyError{Key: de.Name(), Err: de.Unwrap()}
	}
	return config.Errorf("config", "%v", err)
}
