// progress.go holds the status line of a long run on a terminal: steps,
// slices, acts and time, redrawn a few times a second at the foot of what a
// command prints, and cleared before every other line so the two never mix.

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// progressEvery is how often the line is redrawn; progressAfter is how long
// a run goes before it shows (a short run prints nothing more).
const (
	progressEvery = 250 * time.Millisecond
	progressAfter = time.Second
)

// progress is an io.Writer over the terminal that keeps the status line.
type progress struct {
	w     io.Writer
	start time.Time

	mu                  sync.Mutex
	steps, slices, acts uint64
	served              bool // the slices run in the server: their steps are not seen here
	shown               bool // the line is on the terminal now
	stopped             bool
	stop                chan struct{}
	done                chan struct{}
}

func quietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress line on a terminal"}
}

// startProgress starts the line on the command's stderr if it is a terminal
// that can redraw a line and --quiet was not given; otherwise it returns nil.
func startProgress(c *cli.Context) *progress {
	if c.Bool("quiet") || !isTTY(c.App.ErrWriter) || os.Getenv("TERM") == "dumb" {
		return nil
	}
	p := &progress{w: c.App.ErrWriter, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			if now.Sub(p.start) >= progressAfter {
				p.draw(now)
			}
		}
	}
}

// Write clears the line, then writes b: the line comes back at the next
// redraw.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	return p.w.Write(b)
}

// clear takes the line off the terminal; p.mu is held.
func (p *progress) clear() {
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}

func (p *progress) draw(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	line := progressLine(p.steps, p.slices, p.acts, now.Sub(p.start))
	if p.served {
		line = fmt.Sprintf("… %d acts · %s, in the server", p.acts, now.Sub(p.start).Truncate(100*time.Millisecond))
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.shown = true
}

// progressLine is the status line's text.
func progressLine(steps, slices, acts uint64, elapsed time.Duration) string {
	return fmt.Sprintf("… %s steps · %d slices · %d acts · %s", grouped(steps), slices, acts, elapsed.Truncate(100*time.Millisecond))
}

// grouped writes n with thousands separated: 15,000,000.
func grouped(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// slice counts a slice of steps run.
func (p *progress) slice(steps uint64) {
	p.mu.Lock()
	p.steps += steps
	p.slices++
	p.mu.Unlock()
}

// act counts an act attempted.
func (p *progress) act() {
	p.mu.Lock()
	p.acts++
	p.mu.Unlock()
}

// Stop clears the line for good.
func (p *progress) Stop() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.clear()
	p.stopped = true
	p.mu.Unlock()
}
