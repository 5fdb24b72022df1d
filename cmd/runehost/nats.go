// nats.go holds `runehost nats`: a NATS JetStream node alone, without a
// host, for a cluster whose hosts connect with serve --nats.

package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/store/jetstream"
)

func natsCommand() *cli.Command {
	return &cli.Command{
		Name:  "nats",
		Usage: "run a NATS JetStream node for hosts to keep their store on (serve --nats)",
		Description: "Runs an embedded nats-server with JetStream, fsyncing every write, until\n" +
			"SIGTERM or SIGINT. With --cluster it is one node of a cluster: start three,\n" +
			"each with --routes to the other two, and the hosts' streams get three\n" +
			"replicas. See docs/cluster.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the node's JetStream files", Required: true},
			&cli.StringFlag{Name: "listen", Usage: "where the node takes clients", Value: "127.0.0.1:4222"},
			&cli.StringFlag{Name: "cluster", Usage: "the cluster the node joins"},
			&cli.StringFlag{Name: "cluster-listen", Usage: "with --cluster: where it takes routes", Value: "127.0.0.1:6222"},
			&cli.StringFlag{Name: "routes", Usage: "with --cluster: the other nodes' routes (nats://host:port, comma-separated)"},
			&cli.StringFlag{Name: "name", Usage: "the node's name, unique in the cluster", DefaultText: "the host name and the cluster port"},
			&cli.BoolFlag{Name: "log", Usage: "the server's log on stderr"},
		},
		Action: func(c *cli.Context) error {
			o := jetstream.NodeOptions{Dir: c.String("dir"), Listen: c.String("listen"), Name: c.String("name"), Logs: c.Bool("log")}
			if o.Cluster = c.String("cluster"); o.Cluster != "" {
				o.ClusterListen = c.String("cluster-listen")
				for _, r := range strings.Split(c.String("routes"), ",") {
					if r = strings.TrimSpace(r); r != "" {
						o.Routes = append(o.Routes, r)
					}
				}
				if o.Name == "" {
					h, _ := os.Hostname()
					o.Name = h + "-" + strings.ReplaceAll(o.ClusterListen, ":", "-")
				}
			}
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			n, err := jetstream.StartNode(o)
			if err != nil {
				return exitf(exitInternal, "nats: %v", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "nats: node %s takes clients at %s\n", o.Name, n.ClientURL())
			<-sigs
			n.Shutdown()
			return nil
		},
	}
}
