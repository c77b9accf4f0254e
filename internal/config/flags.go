package config

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
// parsing happens in decoding, the same way for every source:
// --zookeeper.tls takes a value, true or false, like ELECTD_ZOOKEEPER_TLS)
// and parses args, as goArgs reads them (a boolean key alone is true). run
// is electd run without "--": then the first argument that is no flag
// starts the command the user meant, and the error says where it goes.
func parseFlags(args []string, run bool) (*pflag.FlagSet, options, error) {
	var o options
	fs := pflag.NewFlagSet("electd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	for _, k := range table {
		fs.String(k.Name, "", k.Help)
	}
	fs.StringVar(&o.config, "config", "", "optional YAML configuration file")
	fs.BoolVar(&o.validate, "validate", false, "check the configuration, print the effective values and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	args, first := goArgs(fs, args, run)
	if run && first >= 0 {
		// Parse electd's flags up to the command, so that their errors
		// come first, and leave the command's own flags alone.
		if err := fs.Parse(args[:first]); err != nil {
			return nil, o, flagError(err)
		}
		return nil, o, errorf("run", "%s is not a flag of electd's; put the command after --: electd run [--KEY VALUE ...] -- %s",
			quote(args[first]), shortCommand(args[first:]))
	}
	if err := fs.Parse(args); err != nil {
		return nil, o, flagError(err)
	}
	if fs.NArg() > 0 {
		return nil, o, errorf(fs.Arg(0), "unexpected argument; electd takes flags only (see --help)")
	}
	return fs, o, nil
}

// goArgs rewrites args the way Go tools are used, for pflag to parse: a
// long flag with one dash (-version, as Go's flag package takes it) gets
// its second, and a boolean key alone (--zookeeper.tls followed by another
// flag, or last) gets =true, as pflag's and kubectl's booleans do. A
// boolean key followed by anything else takes it as its value, as before
// (--zookeeper.tls false; "yes" is then an error that names the key),
// except in electd run, where only true or false is its value, and the
// next word may be the command. first is the index of the first argument
// that is neither a flag nor a flag's value, or -1.
func goArgs(fs *pflag.FlagSet, args []string, run bool) (out []string, first int) {
	out, first = make([]string, 0, len(args)), -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" { // what follows is pflag's to refuse
			return append(out, args[i:]...), first
		}
		if len(a) < 2 || a[0] != '-' {
			if first < 0 {
				first = len(out)
			}
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "--") {
			if len(name) < 2 || f == nil {
				out = append(out, a) // -h, or pflag's error
				continue
			}
			a = "-" + a
		}
		switch {
		case f == nil || hasValue || f.NoOptDefVal != "":
			// Unknown (pflag's error), given its value, or a flag that
			// is boolean for pflag (--validate).
			out = append(out, a)
		case isBoolKey(name) && (i+1 == len(args) || isFlag(args[i+1]) || run && !isBoolWord(args[i+1])):
			out = append(out, a+"=true")
		default: // a flag and its value
			out = append(out, a)
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		}
	}
	return out, first
}

// isBoolKey reports whether name is a key of type bool.
func isBoolKey(name string) bool {
	k, ok := Lookup(name)
	return ok && k.Type == "bool"
}

// isFlag reports whether an argument is a flag, or the "--" before electd
// run's command.
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// isBoolWord reports a boolean's value, as decoding takes it.
func isBoolWord(a string) bool {
	_, err := toBool(a)
	return err == nil
}

// shortCommand is a command line as an error shows it: its words joined,
// cut at 64 bytes.
func shortCommand(words []string) string {
	s := strings.Join(words, " ")
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// optionFlags are the flags that are not keys, as nearest may suggest them.
var optionFlags = []string{"config", "validate", "version", "help"}

var flagNameRE = regexp.MustCompile(`(-{1,2}[^ =:']+)`)

// flagError rewrites pflag's messages to "<flag>: <what is wrong>".
func flagError(err error) error {
	msg := err.Error()
	name := "flags"
	if m := flagNameRE.FindString(msg); m != "" {
		name = m
	}
	switch {
	case strings.HasPrefix(msg, "unknown flag"),
		// -verison: pflag reads one dash as letters (-v -e ...).
		strings.HasPrefix(msg, "unknown shorthand flag") && len(name) > 2:
		return errorf(name, "unknown flag%s (see --help)", didYouMean(nearest(strings.TrimLeft(name, "-"), optionFlags...), "--"))
	case strings.HasPrefix(msg, "unknown"):
		return errorf(name, "unknown flag (see --help)")
	case strings.HasPrefix(msg, "flag needs an argument"):
		return errorf(name, "needs a value")
	}
	return errorf(name, "%s", msg)
}

// setFlag is a key's flag as viper sees it: set only when given a value
// that is not empty, so that --id "" falls back to the environment, the
// file and the default, like ELECTD_ID="" does.
type setFlag struct{ *pflag.Flag }

func (f setFlag) HasChanged() bool    { return f.Changed && f.Value.String() != "" }
func (f setFlag) Name() string        { return f.Flag.Name }
func (f setFlag) ValueString() string { return f.Value.String() }
func (f setFlag) ValueType() string   { return f.Value.Type() }

// WriteHelp writes the daemon's usage: every key with its type, help,
// default and variable, and the flags that are not keys.
func WriteHelp(w io.Writer) {
	fmt.Fprint(w, `Usage: electd [--config FILE] [--KEY VALUE ...]

electd joins one leader election on ZooKeeper and tells the application next
to it, over HTTP and Prometheus, whether it leads and who does.

Every key below can be set in the YAML file given by --config (nested as
"zookeeper: {servers: [...]}"), by the environment variable shown, or by the
flag of the same name; flags beat the environment, which beats the file.
Lists are comma-separated in the environment and in flags. Durations need a
unit: 10s, 500ms, 1m30s ("10" alone is an error). Booleans are true or
false; a boolean flag alone (--zookeeper.tls) means true. A flag may have
one dash (-version). An empty value means the default; surrounding white
space is trimmed (secrets too: a file from a Kubernetes Secret may end in a
newline).
A default that depends on another key follows what that key was set to, as
each key's text says.

Keys:
`)
	for _, k := range table {
		fmt.Fprintf(w, "  --%s %s\n        %s\n        default: %s; env: %s\n", k.Name, k.Type, k.Help, k.DefaultText(), k.Env)
	}
	fmt.Fprint(w, `
Other flags:
  --config FILE
        optional YAML configuration file; unknown keys in it are errors; a
        pipe works too (--config /dev/stdin, --config <(envsubst < tmpl))
  --validate
        check the configuration without connecting, print the effective
        values (secrets masked) and exit 0, or 2 when it is bad
  --version
        print the version and commit and exit
  -h, --help
        print this help and exit
`)
}
