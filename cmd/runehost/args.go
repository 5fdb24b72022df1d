// args.go lets flags follow a command's arguments, as in
// `runehost run prog.rune --input '{}'`, which urfave/cli/v2 does not parse,
// and refuses a flag the command does not have, wherever it is, or a step
// count of 0.

package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags that follow its arguments to before
// them. Everything after "--" stays as it is. A flag the command does not
// define is an error naming it (urfave/cli would take one after an
// argument for an argument: `ps r1 --stat failed` would list everything).
func interspersed(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	var cmd *cli.Command
	i := 1
	for ; i < len(args); i++ {
		if c := app.Command(args[i]); c != nil {
			cmd = c
			break
		}
		if !strings.HasPrefix(args[i], "-") {
			return args, nil
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 && (i+1 >= len(args) || cmd.Command(args[i+1]) == nil) {
		return args, nil // a group's own help, or a subcommand it does not have: urfave says so
	}
	names := []string{cmd.Name}
	for i+1 < len(args) && cmd.Command(args[i+1]) != nil { // tool run
		cmd, i = cmd.Command(args[i+1]), i+1
		names = append(names, cmd.Name)
	}
	takesValue := map[string]bool{"help": false, "h": false}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	head := append([]string(nil), args[:i+1]...)
	var flags, positional []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		value, known := takesValue[name]
		if !strings.HasPrefix(a, "-") || a == "-" || number(a) {
			positional = append(positional, a)
			continue
		}
		if !known {
			full := strings.Join(names, " ")
			return nil, exitf(exitUsage, "%s: unknown flag %s (see runehost %s --help)", full, flagName(name), full)
		}
		flags = append(flags, a)
		if value && !hasValue && j+1 < len(rest) {
			flags = append(flags, rest[j+1])
			j++
		}
	}
	if len(positional) > 0 && positional[0] != "--" {
		positional = append([]string{"--"}, positional...)
	}
	return append(append(head, flags...), positional...), nil
}

// number reports whether a is a number (-5, -0.5): an argument, not a flag.
func number(a string) bool {
	_, err := strconv.ParseFloat(a, 64)
	return err == nil
}

// flagName is a flag as it is written: -x, --name.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// positive refuses a step count of 0 given for any of the flags names of
// command cmd: it would mean nothing runs, and is not read as the default.
func positive(c *cli.Context, cmd string, names ...string) error {
	for _, name := range names {
		if !c.IsSet(name) || c.Uint64(name) != 0 {
			continue
		}
		def := ""
		for _, f := range c.Command.Flags {
			if u, ok := f.(*cli.Uint64Flag); ok && u.Name == name {
				def = fmt.Sprintf(" (default %d)", u.Value)
			}
		}
		return exitf(exitUsage, "%s: --%s 0: want a positive number of steps%s", cmd, name, def)
	}
	return nil
}
