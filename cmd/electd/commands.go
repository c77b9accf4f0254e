package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/electd/electd/internal/cli"
	"github.com/electd/electd/internal/config"
)

// commands are electd's commands, as --help lists them; the daemon itself
// takes flags only.
var commands = []string{"status", "release", "wait-ready", "run", "hold-listener", "help", "version"}

// runBuiltin runs `electd help [COMMAND]` and `electd version`. It refuses
// a first argument that is neither a command nor a flag, naming the likely
// command. ok is false for what is not its own: the daemon's flags and
// electd run (internal/config), and the client commands (internal/cli).
func runBuiltin(args, environ []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "run" || cli.IsCommand(args) {
		return 0, false
	}
	switch args[0] {
	case "version":
		if len(args) > 1 {
			return fail(stderr, fmt.Errorf("version: %s: unexpected argument; electd version takes none", args[1])), true
		}
		printVersion(stdout)
		return 0, true
	case "help":
		return runHelp(args[1:], environ, stdout, stderr), true
	case "hold-listener":
		return runHold(args[1:], environ, stderr), true
	}
	return fail(stderr, unknownCommand(args[0])), true
}

// runHelp is `electd help [COMMAND]`: --help, or the command's.
func runHelp(args, environ []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printHelp(stdout)
		return 0
	case len(args) > 1:
		return fail(stderr, fmt.Errorf("help: %s: unexpected argument; electd help takes one command at most", args[1]))
	case cli.IsCommand(args):
		return runClient([]string{args[0], "--help"}, environ, stdout, stderr)
	case args[0] == "run" || args[0] == "hold-listener" || args[0] == "help" || args[0] == "version":
		printHelp(stdout) // they are documented there
		return 0
	}
	return fail(stderr, unknownCommand(args[0]))
}

// unknownCommand is the error for a command electd does not have.
func unknownCommand(name string) error {
	if c := config.Closest(name, commands...); c != "" {
		return fmt.Errorf("%s: unknown command; did you mean %s? (see --help)", name, c)
	}
	return fmt.Errorf("%s: unknown command; electd's commands are %s, and the daemon takes flags only (see --help)",
		name, strings.Join(commands[:len(commands)-1], ", ")+" and "+commands[len(commands)-1])
}
