// Package clock is time for the status cards: the real one, and a fake one
// that tests and the load harness advance by hand.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs a function later.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f after d; stop cancels it if it has not run.
	AfterFunc(d time.Duration, f func()) (stop func())
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}

// Fake is a clock that moves only when told. Functions due run, in time
// order, on the goroutine that advances it.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	seq    int
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
	seq     int
}

// NewFake returns a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now is the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{at: c.now.Add(d), f: f, seq: c.seq}
	c.timers = append(c.timers, t)
	return func() {
		c.mu.Lock()
		t.stopped = true
		c.mu.Unlock()
	}
}

// Advance moves the clock forward by d, running what falls due.
func (c *Fake) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (backwards too, for tests of that), running what
// falls due on the way.
func (c *Fake) Set(t time.Time) {
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool {
			if c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].seq < c.timers[j].seq
			}
			return c.timers[i].at.Before(c.timers[j].at)
		})
		var next *timer
		for len(c.timers) > 0 && c.timers[0].stopped {
			c.timers = c.timers[1:]
		}
		if len(c.timers) > 0 && !c.timers[0].at.After(t) {
			next = c.timers[0]
			c.timers = c.timers[1:]
			if next.at.After(c.now) {
				c.now = next.at
			}
		}
		if next == nil {
			c.now = t
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending counts the timers not yet run or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}
