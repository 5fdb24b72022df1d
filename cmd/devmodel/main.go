// Command devmodel stands in for a model server, offline: the project's
// scripted OpenAI-compatible chat completions server (acts/model/modeltest)
// on loopback, answering examples/agent.rune as docs/tutorial.md shows
// (modeltest.Tutorial), and from the start again for the next run. It is
// not a model. Run it with `make dev-model`; it prints the settings that
// point runehost at it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/runehost/runehost/acts/model/modeltest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "the loopback address to serve on")
	key := flag.String("key", "", "the API key it wants (RUNEHOST_MODEL_KEY); none when empty")
	flag.Parse()
	srv, err := modeltest.ScriptOn(*listen, *key, modeltest.Tutorial...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devmodel: %v (another address: -listen HOST:PORT)\n", err)
		os.Exit(2)
	}
	defer srv.Close()
	srv.Cycle = true
	fmt.Printf("devmodel: a scripted stand-in for a model on %s: not a model, it answers examples/agent.rune as docs/tutorial.md shows\n", srv.URL)
	fmt.Printf("export RUNEHOST_MODEL_URL=%s/v1 RUNEHOST_MODEL=devmodel\n", srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
