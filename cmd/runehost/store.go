// store.go holds `runehost store`, whose subcommands check, back up and
// restore a store, and the store options every command opens it with.

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

func storeCommand() *cli.Command {
	return &cli.Command{
		Name:  "store",
		Usage: "check, back up and restore a store",
		Description: "verify reads every file and record of a store and says whether it is sound;\n" +
			"backup writes a consistent snapshot of it to a file while it is open;\n" +
			"restore makes a new store from such a file. See docs/store.md.",
		Subcommands: []*cli.Command{storeVerifyCommand(), storeBackupCommand(), storeRestoreCommand(), storeExportCommand(), storeImportCommand()},
	}
}

// storeOptions are the options the store in dir is opened with: the disk
// reserve from RUNEHOST_STORE_RESERVE (bytes, or with a unit: 512MiB, 1GiB),
// and, with RUNEHOST_NATS set, the records in JetStream (natsOptions).
func storeOptions(dir string) (storeConfig, error) {
	opts := storeConfig{Options: store.Options{Dir: dir}}
	js, err := natsOptions()
	if err != nil {
		return opts, err
	}
	opts.nats = js
	if v := os.Getenv("RUNEHOST_STORE_RESERVE"); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return opts, exitf(exitUsage, "RUNEHOST_STORE_RESERVE=%q: %v", v, err)
		}
		opts.Reserve = n
	}
	return opts, nil
}

// storeConfig is how a command opens its store: Badger, or JetStream
// when nats is set.
type storeConfig struct {
	store.Options
	nats *jetstream.Config
}

// open opens the store.
func (c storeConfig) open() (*store.Store, error) {
	if c.nats != nil {
		return jetstream.Open(c.Options, *c.nats)
	}
	return store.Open(c.Options)
}

// parseBytes reads a size: a number of bytes, or one with a unit (KiB,
// MiB, GiB; K, M, G and KB, MB, GB are read as the same).
func parseBytes(s string) (uint64, error) {
	units := []struct {
		suffix string
		n      uint64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	t := strings.ToUpper(strings.TrimSpace(s))
	mul := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n > (1<<62)/mul {
		return 0, fmt.Errorf("want a size such as 268435456, 256MiB or 1GiB")
	}
	return n * mul, nil
}

// storeDir is the --store directory, or the default one.
func storeDir(c *cli.Context) (string, error) {
	d := c.String("store")
	if d == "" {
		var err error
		if d, err = store.DefaultDir(); err != nil {
			return "", exitf(exitUsage, "%v", err)
		}
	}
	// A store is a directory: a file there is the user's to move or rename,
	// said in their terms (not as a file inside it that cannot be opened).
	if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
		return "", exitf(exitUsage, "the store %s is a file, not a directory: name another (--store DIR or RUNEHOST_STORE), or move the file", d)
	}
	return d, nil
}

// natsOptions are the JetStream servers the records are kept on, from
// RUNEHOST_NATS (nats://host:port, comma-separated), with the stream
// RUNEHOST_NATS_STREAM (RUNEHOST) of RUNEHOST_NATS_REPLICAS replicas (1);
// nil when RUNEHOST_NATS is unset: Badger in the store directory.
func natsOptions() (*jetstream.Config, error) {
	v := os.Getenv("RUNEHOST_NATS")
	if v == "" {
		return nil, nil
	}
	js, err := parseNATS(v)
	if err != nil {
		return nil, err
	}
	js.Stream = os.Getenv("RUNEHOST_NATS_STREAM")
	if r := os.Getenv("RUNEHOST_NATS_REPLICAS"); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 || n > 5 {
			return nil, exitf(exitUsage, "RUNEHOST_NATS_REPLICAS=%q: want 1 to 5", r)
		}
		js.Replicas = n
	}
	return js, nil
}

// parseNATS reads a list of NATS servers.
func parseNATS(v string) (*jetstream.Config, error) {
	js := &jetstream.Config{Shared: true} // with the other hosts on those servers: each claims the trees it drives
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			return nil, exitf(exitUsage, "NATS servers %q: want nats://host:port[,nats://host:port...]", v)
		}
		js.URLs = append(js.URLs, strings.TrimSpace(u))
	}
	return js, nil
}
