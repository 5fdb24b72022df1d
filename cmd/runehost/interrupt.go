// interrupt.go holds what Ctrl-C does to a command that drives a run: the
// first stops it at its next slice boundary with its checkpoint stored (or,
// through a server, detaches), a second exits at once.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitInterrupted is the exit status of a run stopped by Ctrl-C (128+SIGINT).
const exitInterrupted = 130

// interrupts returns ctx ended by the first SIGINT (or SIGTERM), which it
// reports on w as what it does (stops, or detaches when served); resume is
// the command that goes on with inv. A second
// signal exits the process at once. An act in flight when the first comes
// finishes and is recorded; after a second, its outcome is unknown and the
// next command that opens the store says what resume will do with it: the
// act rules still let nothing be done twice.
func interrupts(ctx context.Context, w io.Writer, inv, resume string, served bool) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		if served {
			fmt.Fprintf(w, "\ninterrupt: detaching from %s (Ctrl-C again to exit at once)\n", inv)
		} else {
			fmt.Fprintf(w, "\ninterrupt: stopping %s at its next slice, with its checkpoint stored; an act in flight finishes first (Ctrl-C again to exit at once)\n", inv)
		}
		cancel()
		select {
		case <-sigs:
			fmt.Fprintf(w, "interrupt: exiting at once; %s goes on from its last stored checkpoint (%s)\n", inv, resume)
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
