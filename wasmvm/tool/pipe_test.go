// pipe_test.go runs tools as servers are run: stdin an OS pipe the host
// keeps writing to, stdout an io.Pipe it reads as it goes; the deadline
// ends both, so neither a tool waiting on stdin nor one blocked on a reader
// that went away outlives its run.

package tool

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/testtools"
)

// A tool reads what the host writes as it writes it, and answers at once.
func TestStdinFileStreams(t *testing.T) {
	r := runner(t, 0)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	module := testtools.Build(t, "cat")
	done := make(chan *Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), module, Config{StdinFile: inR, StdinWriter: inW, Stdout: outW, StreamOnly: true})
		outW.Close()
		done <- res
	}()
	lines := bufio.NewReader(outR)
	for _, s := range []string{"one\n", "two\n"} {
		inW.WriteString(s)
		if got, err := lines.ReadString('\n'); got != s || err != nil {
			t.Fatalf("echoed %q, %v; want %q", got, err, s)
		}
	}
	inW.Close()
	res := <-done
	if res == nil || !res.OK() || len(res.Stdout) != 0 {
		t.Fatalf("%+v (stdout kept %q)", res, res.Stdout)
	}
}

// The deadline closes the host's end of stdin: a tool waiting on it ends.
func TestStdinFileDeadline(t *testing.T) {
	r := runner(t, 0)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	module := testtools.Build(t, "cat")
	done := make(chan *Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), module, Config{StdinFile: inR, StdinWriter: inW, Timeout: 300 * time.Millisecond})
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil || res.Stop != TimedOut {
			t.Fatalf("%+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still waiting on stdin 20s after its deadline")
	}
	if _, err := inW.Write([]byte("x")); err == nil {
		t.Errorf("the write end is still open")
	}
}

// A tool writing to an io.Pipe nobody reads is not blocked past its run.
func TestStdoutPipeUnread(t *testing.T) {
	r := runner(t, 0)
	_, outW := io.Pipe()
	start := time.Now()
	done := make(chan *Result, 1)
	module := testtools.Build(t, "flood")
	go func() {
		res, _ := r.Run(context.Background(), module, Config{Stdout: outW, Timeout: 300 * time.Millisecond})
		done <- res
	}()
	select {
	case res := <-done:
		// Stopped by its clock, not killed on the backstop: a write
		// blocked past its time fails (EPIPE).
		if res == nil || res.Stop != TimedOut || strings.Contains(res.Detail, "killed") {
			t.Errorf("%+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still blocked after %s", time.Since(start))
	}
}
