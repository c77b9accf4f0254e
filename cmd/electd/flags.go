package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/electd/electd/internal/config"
)

// options are the flags that are not configuration keys.
type options struct {
	config   string
	validate bool
	version  bool
	help     bool
}

// parseFlags defines one string flag per key (same name as the key; typed
// parsing happens in load, the same way for every source: --zookeeper.tls
// takes a value, true or false, like ELECTD_ZOOKEEPER_TLS) and parses args.
func parseFlags(args []string) (*pflag.FlagSet, options, error) {
	var o options
	fs := pflag.NewFlagSet("electd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	for _, k := range config.Keys() {
		fs.String(k.Name, "", k.Help)
	}
	fs.StringVar(&o.config, "config", "", "optional YAML configuration file")
	fs.BoolVar(&o.validate, "validate", false, "check the configuration, print the effective values and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	if err := fs.Parse(args); err != nil {
		return nil, o, flagError(err)
	}
	if fs.NArg() > 0 {
		return nil, o, config.Errorf(fs.Arg(0), "unexpected argument; electd takes flags only (see --help)")
	}
	return fs, o, nil
}

var flagNameRE = regexp.MustCompile(`(-{1,2}[^ =:']+)`)

// flagError rewrites pflag's messages to "<flag>: <what is wrong>".
func flagError(err error) error {
	msg := err.Error()
	name := "flags"
	if m := flagNameRE.FindString(msg); m != "" {
		name = m
	}
	switch {
	case strings.HasPrefix(msg, "unknown"):
		return config.Errorf(name, "unknown flag (see --help)")
	case strings.HasPrefix(msg, "flag needs an argument"):
		return config.Errorf(name, "needs a value")
	}
	return config.Errorf(name, "%s", msg)
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Usage: electd [--config FILE] [--KEY VALUE ...]

electd joins one leader election on ZooKeeper and tells the application next
to it, over HTTP and Prometheus, whether it leads and who does.

Every key below can be set in the YAML file given by --config (nested as
"zookeeper: {servers: [...]}"), by the environment variable shown, or by the
flag of the same name; flags beat the environment, which beats the file.
Lists are comma-separated in the environment and in flags. Durations need a
unit: 10s, 500ms, 1m30s ("10" alone is an error). Booleans are true or
false. An empty value means the default; surrounding white space is
trimmed (secrets too: a file from a Kubernetes Secret may end in a newline).

Keys:
`)
	for _, k := range config.Keys() {
		fmt.Fprintf(w, "  --%s %s\n        %s\n        default: %s; env: %s\n", k.Name, k.Type, k.Help, k.DefaultText(), k.Env)
	}
	fmt.Fprint(w, `
Other flags:
  --config FILE
        optional YAML configuration file; unknown keys in it are errors
  --validate
        check the configuration without connecting, print the effective
        values (secrets masked) and exit 0, or 2 when it is bad
  --version
        print the version and commit and exit
  -h, --help
        print this help and exit

Commands (each with --help):
  electd status [--addr URL] [--watch]   the election as a table
  electd release [--to ID] [--addr URL]  ask the leader to step down

Exit status: 0 after a clean shutdown, 1 when running fails (e.g. http.addr
cannot be bound, or shutdown_timeout ran out), 2 for a bad configuration.
Unknown ELECTD_* environment variables only log a warning.
`)
}

// unknownEnv lists ELECTD_* variables that name no key. They only warn:
// Kubernetes injects ELECTD_PORT and friends for a Service named electd.
func unknownEnv(environ []string) []string {
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[k.Env] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ELECTD_") && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
