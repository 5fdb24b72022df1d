// events.go holds `runehost events`: an invocation's run log.

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/client"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "print an invocation's run log",
		ArgsUsage: "INVOCATION",
		Description: "Prints the events of an invocation, from --from SEQ (1 is the first). With\n" +
			"--follow it keeps printing new ones until the invocation ends. The store\n" +
			"has one user at a time: while another runehost holds it, --follow waits and\n" +
			"catches up when it is released. While runehost serve owns the store, the\n" +
			"events come from it, and --follow streams them as they happen.",
		Flags: append([]cli.Flag{
			storeFlag(),
			&cli.Uint64Flag{Name: "from", Value: 1, Usage: "the first seq to print"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing until the invocation ends"},
			&cli.DurationFlag{Name: "poll", Value: 300 * time.Millisecond, Usage: "how often --follow looks"},
			&cli.BoolFlag{Name: "all", Usage: "also print spans, observations and memory queries"},
		}, jsonFlags(true)...),
		Action: func(c *cli.Context) (err error) {
			if c.NArg() != 1 {
				return exitf(exitUsage, "events: want one INVOCATION")
			}
			form, err := formatOf(c)
			if err != nil {
				return err
			}
			// With --follow, --json's array closes when the run ends or
			// Ctrl-C stops following: --jsonl is the form to pipe live.
			if c.Bool("follow") {
				ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
				defer stop()
				c.Context = ctx
			}
			list := &rows{w: c.App.Writer, form: form}
			defer func() {
				if err == nil {
					list.end()
				}
			}()
			inv, next := c.Args().First(), max(c.Uint64("from"), 1)
			said := ""
			for {
				if cl, ok, err := findServer(c); err != nil {
					return err
				} else if ok {
					return eventsServed(c, cl, list, inv, next)
				}
				evs, st, err := readEvents(c, inv, next)
				var le *store.LockedError
				switch {
				case c.Bool("follow") && errors.As(err, &le):
				case err != nil:
					return err
				default:
					for _, ev := range evs {
						printEvent(c, list, ev)
						next = ev.Seq + 1
					}
					if !c.Bool("follow") || st.status.Terminal() {
						return nil
					}
					// It opened: no runehost holds the store, so nothing
					// drives the run here. Say so once for each state.
					if note := undriven(c, inv, st); note != said {
						fmt.Fprintln(c.App.ErrWriter, note)
						said = note
					}
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(c.Duration("poll")):
				}
			}
		},
	}
}

// eventsServed prints inv's events from seq from as the store's server
// gives them, following them until inv ends with --follow.
func eventsServed(c *cli.Context, cl *client.Client, list *rows, inv string, from uint64) error {
	show := func(ev events.Event) { printEvent(c, list, ev) }
	if !c.Bool("follow") {
		evs, err := cl.Events(c.Context, inv, from, 0)
		if err != nil {
			return failed("events", err, exitUsage)
		}
		for _, ev := range evs {
			show(ev)
		}
		return nil
	}
	_, err := cl.Follow(c.Context, inv, client.FollowOptions{From: from, Busy: busyNote(c.App.ErrWriter)}, show)
	if err != nil && c.Context.Err() == nil {
		return failed("events", err, exitUsage)
	}
	return nil
}

// stood is where a run stood when its events were read.
type stood struct {
	status host.Status
	sleeps int64 // unix ms: its tree sleeps at timers until then
}

// undriven says that nothing drives inv here, and how to drive it on.
func undriven(c *cli.Context, inv string, st stood) string {
	how := fmt.Sprintf("%s, or runehost serve, drives it on", hintArgs(c, "resume", inv))
	if st.sleeps != 0 {
		return fmt.Sprintf("events: %s sleeps until %s, and nothing drives it here (no runehost holds the store): %s; following meanwhile", inv, time.UnixMilli(st.sleeps).Format("15:04:05 MST"), how)
	}
	return fmt.Sprintf("events: %s is %s, and nothing drives it here (no runehost holds the store): %s; following meanwhile", inv, st.status, how)
}

// readEvents opens the store just long enough to read the new events.
func readEvents(c *cli.Context, inv string, from uint64) ([]events.Event, stood, error) {
	opts, err := storeOptions(c.String("store"))
	if err != nil {
		return nil, stood{}, err
	}
	if err := storeExists(c); err != nil {
		return nil, stood{}, err
	}
	s, err := opts.open()
	if err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return nil, stood{}, le
		}
		return nil, stood{}, openErr(err)
	}
	defer s.Close()
	e := host.NewEngine(s, nil, 0, nowMillis) // reads only: no generation, no recovery
	evs, err := e.Events(inv, from, 0)
	if err != nil {
		return nil, stood{}, exitf(exitUsage, "events: %v", err)
	}
	st, err := e.State(inv)
	if err != nil {
		return nil, stood{}, exitf(exitUsage, "events: %v", err)
	}
	out := stood{status: st.Status}
	if c.Bool("follow") && (st.Status == host.Waiting || st.Status == host.Joining) {
		if out.sleeps, err = e.Sleeps(inv); err != nil {
			return nil, stood{}, exitf(exitInternal, "events: %v", err)
		}
	}
	return evs, out, nil
}

// printEvent writes one event in the form the command line asks for.
func printEvent(c *cli.Context, list *rows, ev events.Event) {
	if list.form != asText {
		list.add(ev)
		return
	}
	if c.Bool("all") || !events.Quiet(&ev) {
		fmt.Fprintln(list.w, events.Line(&ev, isTerminal(list.w)))
	}
}
