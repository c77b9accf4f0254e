package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// options are the flags that are not configuration keys.
type options struct {
	config   string
	validate bool
	version  bool
	help     bool
}

// parseFlags defines one string flag per key (same name as the key; typed
// parsing happens in load, the same way for every source) and parses args.
func parseFlags(args []string) (*pflag.FlagSet, options, error) {
	var o options
	fs := pflag.NewFlagSet("electd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	for _, k := range keys {
		fs.String(k.name, "", k.help)
	}
	fs.StringVar(&o.config, "config", "", "optional YAML configuration file")
	fs.BoolVar(&o.validate, "validate", false, "check the configuration, print the effective values and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	if err := fs.Parse(args); err != nil {
		return nil, o, flagError(err)
	}
	if fs.NArg() > 0 {
		return nil, o, errorf(fs.Arg(0), "unexpected argument; electd takes flags only (see --help)")
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
		return errorf(name, "unknown flag (see --help)")
	case strings.HasPrefix(msg, "flag needs an argument"):
		return errorf(name, "needs a value")
	}
	return errorf(name, "%s", msg)
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Usage: electd [--config FILE] [--KEY VALUE ...]

electd joins one leader election on ZooKeeper and tells the application next
to it, over HTTP and Prometheus, whether it leads and who does.

Every key below can be set in the YAML file given by --config (nested as
"zookeeper: {servers: [...]}"), by the environment variable shown, or by the
flag of the same name; flags beat the environment, which beats the file.
Lists are comma-separated in the environment and in flags. Durations need a
unit: 10s, 500ms, 1m30s ("10" alone is an error).

Keys:
`)
	for _, k := range keys {
		def := k.def
		switch {
		case k.name == "id":
			def = "$POD_NAME, else the host name"
		case k.name == "zookeeper.servers" || k.name == "election.path":
			def = "none, required"
		case def == "":
			def = "empty"
		}
		fmt.Fprintf(w, "  --%s %s\n        %s\n        default: %s; env: %s\n", k.name, k.kind, k.help, def, envName(k.name))
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

Signals: on SIGTERM or SIGINT electd answers 503 on /healthz/leader at once,
waits shutdown_grace, deletes its node so a follower takes over at once,
stops serving, closes the ZooKeeper session and exits 0, all within
shutdown_timeout. A second signal exits at once with status 1.

Exit status: 0 after a clean shutdown, 1 when running fails (e.g. http.addr
cannot be bound, or shutdown_timeout ran out), 2 for a bad configuration.
Unknown ELECTD_* environment variables only log a warning.
`)
}
