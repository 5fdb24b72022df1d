// serve_nats.go holds the flags of runehost serve that keep the store in
// NATS JetStream: servers to join, or a node embedded in the host.

package main

import (
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store/jetstream"
)

func natsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "nats", Usage: "keep the records in JetStream on these NATS servers (nats://host:port, comma-separated) instead of Badger", EnvVars: []string{"RUNEHOST_NATS"}},
		&cli.BoolFlag{Name: "nats-embedded", Usage: "keep the records in JetStream on a NATS server run inside this host, its files in STORE/nats"},
		&cli.StringFlag{Name: "nats-listen", Usage: "with --nats-embedded: where the node takes NATS clients", Value: "127.0.0.1:4222"},
		&cli.StringFlag{Name: "cluster", Usage: "with --nats-embedded: the NATS cluster the node joins (see docs/cluster.md)"},
		&cli.StringFlag{Name: "cluster-listen", Usage: "with --cluster: where the node takes routes from the others", Value: "127.0.0.1:6222"},
		&cli.StringFlag{Name: "routes", Usage: "with --cluster: the other nodes' routes (nats://host:port, comma-separated)"},
		&cli.StringFlag{Name: "node-name", Usage: "with --cluster: this node's name, unique in the cluster", DefaultText: "the host name and the cluster port"},
		&cli.IntFlag{Name: "replicas", Usage: "the stream's replicas", DefaultText: "3 with --cluster, else 1", EnvVars: []string{"RUNEHOST_NATS_REPLICAS"}},
		&cli.StringFlag{Name: "stream", Usage: "the JetStream stream that holds the records", Value: jetstream.DefaultStream, EnvVars: []string{"RUNEHOST_NATS_STREAM"}},
	}
}

// natsOf is the JetStream configuration serve's flags ask for, or nil.
func natsOf(c *cli.Context) (*jetstream.Config, error) {
	embedded, urls := c.Bool("nats-embedded"), c.String("nats")
	switch {
	case embedded && urls != "":
		return nil, exitf(exitUsage, "serve: --nats and --nats-embedded exclude each other (the embedded node is the server)")
	case !embedded && urls == "":
		if c.String("cluster") != "" {
			return nil, exitf(exitUsage, "serve: --cluster is a setting of --nats-embedded")
		}
		return nil, nil
	case urls != "":
		js, err := parseNATS(urls)
		if err != nil {
			return nil, err
		}
		js.Stream, js.Replicas = c.String("stream"), c.Int("replicas")
		return js, nil
	}
	js := &jetstream.Config{Stream: c.String("stream"), Replicas: c.Int("replicas"), Wait: 2 * time.Minute, Shared: true, // other hosts may join through its node
		Node: jetstream.NodeOptions{Listen: c.String("nats-listen")}}
	if name := c.String("cluster"); name != "" {
		js.Node.Cluster, js.Node.ClusterListen, js.Node.Name = name, c.String("cluster-listen"), c.String("node-name")
		for _, r := range strings.Split(c.String("routes"), ",") {
			if r = strings.TrimSpace(r); r != "" {
				js.Node.Routes = append(js.Node.Routes, r)
			}
		}
		if len(js.Node.Routes) == 0 {
			return nil, exitf(exitUsage, "serve: --cluster wants --routes to the other nodes")
		}
		if js.Node.Name == "" {
			h, _ := os.Hostname()
			js.Node.Name = h + "-" + strings.ReplaceAll(js.Node.ClusterListen, ":", "-")
		}
		if js.Replicas == 0 {
			js.Replicas = 3
		}
	}
	return js, nil
}

// claimFromEnv sets how long a host's claims on a shared store last from
// RUNEHOST_CLAIM_FOR (a duration; host.ClaimFor, 10 s, when unset): the
// time another host waits to take a dead one's trees over.
func claimFromEnv() error {
	v := os.Getenv("RUNEHOST_CLAIM_FOR")
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 300*time.Millisecond {
		return exitf(exitUsage, "RUNEHOST_CLAIM_FOR=%q: want a duration of 300ms or more, such as 10s", v)
	}
	host.ClaimFor = d
	return nil
}
