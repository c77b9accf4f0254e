package config

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// exampleHeader opens config.example.yaml.
const exampleHeader = `# electd configuration: every key, with its default.
# Generated from internal/config (go generate ./internal/config); do not edit.
#
# Load it with ` + "`electd --config config.example.yaml`" + `; check it without
# connecting with ` + "`electd --config config.example.yaml --validate`" + `.
# Every key can also be set from the environment (ELECTD_ + the key path in
# upper case with "_", e.g. ELECTD_ZOOKEEPER_SERVERS, ELECTD_ELECTION_PATH) or
# by a flag named after the key (--zookeeper.servers). Flags beat the
# environment, which beats this file. Lists are comma-separated in the
# environment and in flags. Durations need a unit ("10s", "500ms", "0s").
# An empty value means the default. Unknown keys in this file are errors.
# The proxy's keys are commented out: each is refused while proxy.listen is
# empty (the proxy is off); uncomment those you set with it.

`

// Example is config.example.yaml: every key with its help as a comment and
// its default, or an example value for a required key. A key whose default
// is computed at start (id) is shown commented out.
func Example() []byte {
	var b bytes.Buffer
	b.WriteString(exampleHeader)
	examples := exampleConfig()
	writeYAML(&b, func(k Key) (string, string, bool) {
		comment := k.Help + "."
		switch {
		case k.Required:
			comment = "required: " + comment
		case k.Computed != "":
			comment += " Default: " + k.Computed + "."
		}
		return comment, format(k.field(&examples), k.Type), k.Computed != "" || k.needsProxy()
	})
	return b.Bytes()
}

// exampleConfig is the defaults with every key's example value.
func exampleConfig() Config {
	c := Defaults()
	for _, k := range table {
		if k.Example != "" {
			m := map[string]any{}
			setIn(m, k, k.Example)
			if err := Decode(m, &c); err != nil {
				panic(err) // a bad example tag: TestExample shows it
			}
		}
	}
	return c
}

// WriteEffective writes c as YAML in the table's order, secrets masked,
// and the proxy's keys commented out while the proxy is off (they are
// refused then). With the secrets filled back in, it is a configuration
// file that loads to c.
func WriteEffective(w io.Writer, c *Config) {
	fmt.Fprintln(w, "# electd effective configuration (secrets masked)")
	if c.ZooKeeper.Chroot != "" {
		fmt.Fprintf(w, "# election path with the chroot: %s\n", c.ElectionPath())
	}
	off := c.Proxy.Listen == ""
	writeYAML(w, func(k Key) (string, string, bool) {
		v := format(k.field(c), k.Type)
		switch {
		case !k.Secret || k.field(c).String() == "":
		case k.File != "" && c.str(k.File) != "":
			return "", `"" # read from ` + k.File, false
		default:
			v = `"***"`
		}
		return "", v, off && k.needsProxy()
	})
}

// writeYAML writes one line per key, sections nested, with a comment line
// above when there is one; a commented-out key is written as a comment.
func writeYAML(w io.Writer, line func(Key) (comment, value string, commentedOut bool)) {
	section := ""
	for i, k := range table {
		comment, value, out := line(k)
		indent := ""
		if sec := k.Section(); sec != "" {
			indent = "  "
			if sec != section {
				if i > 0 && comment != "" {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "%s:\n", sec)
			}
		} else if comment != "" && i > 0 {
			fmt.Fprintln(w)
		}
		section = k.Section()
		for _, l := range wrap(comment, 78-len(indent)) {
			fmt.Fprintf(w, "%s# %s\n", indent, l)
		}
		if out {
			indent += "# "
		}
		fmt.Fprintf(w, "%s%s: %s\n", indent, k.Leaf(), value)
	}
}

// format is a value as YAML: strings quoted, lists in flow style.
func format(v reflect.Value, typ string) string {
	switch typ {
	case "string":
		return strconv.Quote(v.String())
	case "list":
		q := make([]string, v.Len())
		for i := range q {
			q[i] = strconv.Quote(v.Index(i).String())
		}
		return "[" + strings.Join(q, ", ") + "]"
	case "duration":
		return time.Duration(v.Int()).String()
	case "int":
		return strconv.FormatInt(v.Int(), 10)
	case "bool":
		return strconv.FormatBool(v.Bool())
	}
	panic("config: no format for " + typ)
}

// wrap breaks s into lines of at most width bytes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// setIn sets k to v in a nested map of key values.
func setIn(m map[string]any, k Key, v any) {
	if s := k.Section(); s != "" {
		if _, ok := m[s]; !ok {
			m[s] = map[string]any{}
		}
		m = m[s].(map[string]any)
	}
	m[k.Leaf()] = v
}
