// tool.go holds `runehost tool run`: run an untrusted WASI tool in the
// sandbox, standing in for a WASI runtime in scripts.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm/tool"
)

// Exit statuses of `tool run` when the tool did not exit by itself.
const (
	exitToolTimeout = 124 // as timeout(1)
	exitToolFuel    = 125
	exitToolTrap    = 134 // trapped, or out of memory (as abort)
)

func toolCommand() *cli.Command {
	return &cli.Command{
		Name:  "tool",
		Usage: "run untrusted WASI tools in the sandbox",
		Subcommands: []*cli.Command{{
			Name:      "run",
			Usage:     "run a WASI command module with only what is granted",
			ArgsUsage: "TOOL.wasm [-- ARGS...]",
			Description: "Runs a wasm32-wasip1 command module in its own sandbox. It sees only the\n" +
				"directories granted (--grant fs.read:DIR[=GUEST] read-only, fs.write:DIR[=GUEST]\n" +
				"read-write; GUEST is where the tool sees it, DIR itself by default) and only\n" +
				"the environment variables granted (--grant tool.env:NAME; never the host's\n" +
				"own, RUNEHOST_* and SLACK_*, nor a variable holding one of their secrets).\n" +
				"Stdin passes through; stdout and stderr are written as the tool runs.\n" +
				"Paths, `..`, symlinks and hard links that lead out of a granted directory,\n" +
				"and pipes, sockets and devices, are refused. --timeout stops the tool\n" +
				"even while it computes.\n\n" +
				"The tool runs in a worker process of its own: an empty environment but\n" +
				"what is granted, no descriptor of runehost's, Landlock over its mounts and\n" +
				"no network, a seccomp filter (docs/sandbox.md). On a kernel without\n" +
				"Landlock it is refused unless --allow-tools-without-landlock.\n\n" +
				"Exit status: the tool's own; 124 when the wall clock ran out, 125 when its\n" +
				"fuel ran out, 134 when it trapped or ran out of memory, 2 for bad usage.",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "grant", Usage: "fs.read:DIR[=GUEST], fs.write:DIR[=GUEST] or tool.env:NAME (repeat)"},
				&cli.Uint64Flag{Name: "fuel", Value: tool.DefaultFuel, Usage: "fuel: function entries and loop iterations (at most 2^40)"},
				&cli.UintFlag{Name: "memory", Value: tool.DefaultMemoryPages / 16, Usage: "memory limit, MiB"},
				&cli.DurationFlag{Name: "timeout", Value: tool.DefaultTimeout, Usage: "wall-clock limit"},
				&cli.BoolFlag{Name: "json", Usage: "after the run, write its result as JSON to stderr"},
				cacheFlag(),
				allowWithoutLandlockFlag(),
			},
			Action: toolRun,
		}},
	}
}

func toolRun(c *cli.Context) error {
	if c.NArg() < 1 {
		return exitf(exitUsage, "tool run: want TOOL.wasm (usage: runehost tool run TOOL.wasm [--grant ...] -- ARGS)")
	}
	file := c.Args().First()
	module, err := os.ReadFile(file)
	if err != nil {
		return exitf(exitUsage, "tool run: %v", err)
	}
	var read, write []host.Grant
	var env []string
	checker := &fs.Adapter{Places: hostPlaces(c)}
	for _, g := range c.StringSlice("grant") {
		tag, target, _ := strings.Cut(g, ":")
		switch tag {
		case fs.Read, fs.Write:
			t, err := checker.CheckGrant(tag, target)
			if err != nil {
				return exitf(exitUsage, "tool run: --grant %s: %v", g, err)
			}
			gr := host.Grant{Statement: tag + ":" + t}
			if tag == fs.Read {
				read = append(read, gr)
			} else {
				write = append(write, gr)
			}
		case tools.EnvTag:
			if tool.HostOwn(target) {
				return exitf(exitUsage, "tool run: --grant %s: %s is the host's own configuration, never given to a tool", g, target)
			}
			if v, ok := os.LookupEnv(target); ok {
				if err := tool.CheckEnv(target + "=" + v); err != nil {
					return exitf(exitUsage, "tool run: --grant %s: %v", g, err)
				}
				env = append(env, target+"="+v)
			}
		default:
			return exitf(exitUsage, "tool run: --grant %s: want fs.read:DIR[=GUEST], fs.write:DIR[=GUEST] or tool.env:NAME", g)
		}
	}
	if f := c.Uint64("fuel"); f == 0 || f > tool.MaxFuel {
		return exitf(exitUsage, "tool run: --fuel %d: want 1 to %d", f, uint64(tool.MaxFuel))
	}
	r, err := tool.New(c.Context, tool.Options{CacheDir: c.String("cache-dir"), MemoryPages: uint32(c.Uint("memory") * 16),
		WithoutLandlock: c.Bool("allow-tools-without-landlock") || acts.ToolsWithoutLandlock()})
	if err != nil {
		return exitf(exitInternal, "tool run: %v", err)
	}
	defer r.Close(context.Background())
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	args := c.Args().Tail()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	res, err := r.Run(c.Context, module, tool.Config{
		Name: name, Args: args, Env: env, StdinFrom: os.Stdin,
		Mounts: tools.Mounts(read, write), Fuel: c.Uint64("fuel"), Timeout: c.Duration("timeout"),
		Stdout: c.App.Writer, Stderr: c.App.ErrWriter, OutputCap: 1,
	})
	if err != nil {
		return exitf(exitUsage, "tool run: %v", err)
	}
	if c.Bool("json") {
		b, _ := json.Marshal(map[string]any{"stop": res.Stop, "exit_code": res.ExitCode, "fuel_used": res.FuelUsed, "detail": res.Detail})
		fmt.Fprintln(c.App.ErrWriter, string(b))
	}
	switch res.Stop {
	case tool.Exited:
		if res.ExitCode != 0 {
			return &exitError{code: int(res.ExitCode), err: nil}
		}
		return nil
	case tool.TimedOut:
		return exitf(exitToolTimeout, "tool %s: %s", name, res.Detail)
	case tool.OutOfFuel:
		return exitf(exitToolFuel, "tool %s: %s", name, res.Detail)
	default:
		return exitf(exitToolTrap, "tool %s: %s: %s", name, res.Stop, res.Detail)
	}
}

// allowWithoutLandlockFlag runs tools on a kernel without Landlock: the
// operator's acceptance of that risk, also RUNEHOST_ALLOW_TOOLS_WITHOUT_LANDLOCK=1.
func allowWithoutLandlockFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-tools-without-landlock",
		Usage: "run tools even where the kernel has no Landlock: their workers are then not confined to their mounts nor kept off the network by it (the risk is yours)"}
}
