// conventions_test.go: the command line behaves as urfave/cli programs do:
// unknown flags and commands are errors naming them (exit 2), help works
// for the app and every command, flags go before or after arguments.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIConventions(t *testing.T) {
	prog := writeProg(t, "return 1\n")
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{[]string{"ps", "--stat", "failed"}, exitUsage, "", "ps: unknown flag --stat"},
		{[]string{"check", "--jsonl", prog}, exitUsage, "", "check: unknown flag --jsonl"},
		{[]string{"check", prog, "--bogus"}, exitUsage, "", "check: unknown flag --bogus"},
		{[]string{"bogus"}, exitUsage, "", `unknown command "bogus"`},
		{[]string{"help", "bogus"}, exitUsage, "", `unknown command "bogus"`},
		{[]string{"help"}, exitOK, "COMMANDS:", ""},
		{[]string{"help", "run"}, exitOK, "runehost run [command options] FILE", ""},
		{[]string{"run", "--help"}, exitOK, "runehost run [command options] FILE", ""},
		{[]string{"--version"}, exitOK, "runehost version " + version, ""},
		// Flags before and after the argument.
		{[]string{"run", "--no-store", prog}, exitOK, "1", ""},
		{[]string{"run", prog, "--no-store"}, exitOK, "1", ""},
		{[]string{"tool", "bogus"}, exitUsage, "", `unknown command "bogus"`},
	} {
		code, out, errs := invoke(t, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("runehost %s: exit %d (want %d)\nstdout %.300q\nstderr %.300q", strings.Join(c.args, " "), code, c.code, out, errs)
		}
	}
}

// Every usage error is one line on stderr naming the help that shows the
// flags, exit 2, and nothing on stdout: flags of the wrong type, unknown
// flags of the app and of a nested command, and no command at all.
func TestUsageErrorsOneLine(t *testing.T) {
	prog := writeProg(t, "return 1\n")
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"run", "--limit", "abc", prog}, `runehost: run: invalid value "abc" for flag --limit: parse error (see runehost run --help)`},
		{[]string{"link", "r1", "--ttl", "400d"}, `runehost: link: invalid value "400d" for flag --ttl: parse error (see runehost link --help)`},
		{[]string{"--bogus"}, "runehost: unknown flag --bogus (see runehost help)"},
		{[]string{"run", "-x", prog}, "runehost: run: unknown flag -x (see runehost run --help)"},
		{[]string{"store", "backup", "--bogus=1", "f"}, "runehost: store backup: unknown flag --bogus (see runehost store backup --help)"},
		// A step count of 0 would run nothing: refused, not the default.
		{[]string{"run", "--limit", "0", prog}, "runehost: run: --limit 0: want a positive number of steps (default 10000000)"},
		{[]string{"run", "--slice", "0", "--no-store", prog}, "runehost: run: --slice 0: want a positive number of steps (default 1000)"},
		{[]string{"mcp", "--limit", "0"}, "runehost: mcp: --limit 0: want a positive number of steps (default 10000000)"},
		{[]string{"slack", "--limit", "0"}, "runehost: slack: --limit 0: want a positive number of steps (default 10000000)"},
	} {
		code, out, errs := invoke(t, c.args...)
		if code != exitUsage || out != "" || errs != c.err+"\n" {
			t.Errorf("runehost %s: exit %d\nstdout %.300q\nstderr %.300q\nwant %q", strings.Join(c.args, " "), code, out, errs, c.err)
		}
	}
	// No command: the app's help, on stderr.
	code, out, errs := invoke(t)
	if code != exitUsage || out != "" || !strings.Contains(errs, "COMMANDS:") {
		t.Errorf("runehost: exit %d\nstdout %.300q\nstderr %.300q", code, out, errs)
	}
}

// Commands on invocations that do not exist or have ended say so.
func TestEndedAndMissing(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", t.TempDir())
	fails := writeProg(t, "return 1 / 0\n")
	waits := writeProg(t, `return await({"key": "go"})`+"\n")
	if code, _, errs := invoke(t, "run", fails); code != exitFailed {
		t.Fatalf("run: exit %d, %q", code, errs)
	}
	if code, _, errs := invoke(t, "run", "--replace", waits); code != exitWaiting {
		t.Fatalf("run: exit %d, %q", code, errs)
	}
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"resume", "r999"}, exitUsage, "r999: no such invocation"},
		{[]string{"cancel", "r999"}, exitUsage, "r999: no such invocation"},
		{[]string{"cancel", "r1"}, exitUsage, "r1 has ended (failed): nothing to cancel"},
		{[]string{"resume", "r1"}, exitUsage, "r1 has ended (failed): nothing to resume"},
		{[]string{"cancel", "r2"}, exitOK, ""},
		{[]string{"cancel", "r2"}, exitUsage, "r2 has ended: it was cancelled already"},
	} {
		if code, _, errs := invoke(t, c.args...); code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("runehost %s: exit %d (want %d), stderr %q", strings.Join(c.args, " "), code, c.code, errs)
		}
	}
}

// A command that reads a store refuses a directory with none, and leaves
// nothing behind.
func TestNoStoreThere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mistyped")
	for _, cmd := range [][]string{{"ps"}, {"inspect", "r1"}, {"events", "r1"}, {"grants"}, {"cancel", "r1"}} {
		code, _, errs := invoke(t, append(cmd, "--store", dir)...)
		if code != exitUsage || !strings.Contains(errs, "no store at "+dir) {
			t.Errorf("%s: exit %d, %q", cmd[0], code, errs)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s was made", dir)
	}
}

// --input @FILE and --input - reach inputs an argument list cannot carry;
// an input the machine would refuse is refused before anything is admitted.
func TestInputFromFileAndStdin(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	prog := writeProg(t, "return len(input.data)\n")
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"data": "`+strings.Repeat("x", 2<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := invoke(t, "run", prog, "--input", "@"+big); code != exitOK || out != "2097152\n" {
		t.Fatalf("@file: exit %d, stdout %q, stderr %.200q", code, out, errs)
	}
	app := newApp()
	var out, errb strings.Builder
	app.Writer, app.ErrWriter, app.Reader = &out, &errb, strings.NewReader(`{"data": "abc"}`)
	if err := app.Run([]string{"runehost", "run", "--no-store", "--input", "-", prog}); err != nil || out.String() != "3\n" {
		t.Fatalf("stdin: %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
	deep := strings.Repeat("[", 150) + strings.Repeat("]", 150)
	code, _, errs := invoke(t, "run", prog, "--input", deep)
	if code != exitUsage || !strings.Contains(errs, "nested 150 deep") {
		t.Fatalf("deep: exit %d, %q", code, errs)
	}
	if code, _, errs := invoke(t, "run", prog, "--input", "@"+big+".missing"); code != exitUsage || !strings.Contains(errs, "no such file") {
		t.Fatalf("missing file: exit %d, %q", code, errs)
	}
	if _, out, _ := invoke(t, "ps"); strings.Count(out, "\n") != 1 {
		t.Fatalf("a refused input admitted an invocation: %q", out)
	}
}

// A grant whose act does not exist is refused with the nearest name.
func TestGrantTypo(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	for _, c := range []struct {
		statement string
		code      int
		err       string
	}{
		{"fs.reed:.", exitUsage, "no act is called fs.reed (did you mean fs.read?)"},
		{"htp.get:example.com", exitUsage, "(did you mean http.get?)"},
		{"nothing.like.it", exitUsage, "no act is called nothing.like.it"},
		{"tool.env:HOME", exitOK, ""},
		{"http.get:example.com", exitOK, ""},
	} {
		if code, _, errs := invoke(t, "grant", "--prog", "p", c.statement); code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("grant %s: exit %d (want %d), %q", c.statement, code, c.code, errs)
		}
	}
}

// A failure's Rune backtrace is printed in every run mode and kept with
// the failed invocation for inspect.
func TestBacktraceEveryMode(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	prog := writeProg(t, "fn inner(x) {\n  return 1 / x\n}\nfn outer(x) {\n  return inner(x)\n}\nreturn outer(0)\n")
	// The main file's frames name it, as an import's name theirs.
	trace := []string{"at inner at " + prog + ":2:12", "at outer at " + prog + ":5:15", "at main at " + prog + ":7:13"}
	for _, args := range [][]string{{"run", prog}, {"run", "--no-store", prog}, {"run", "--native", prog}} {
		code, _, errs := invoke(t, args...)
		if code != exitFailed {
			t.Fatalf("%v: exit %d, %q", args, code, errs)
		}
		for _, tr := range trace {
			if !strings.Contains(errs, tr) {
				t.Errorf("%v: %q missing from %q", args, tr, errs)
			}
		}
	}
	_, out, _ := invoke(t, "inspect", "r1")
	_, js, _ := invoke(t, "inspect", "--json", "r1")
	for _, want := range []string{"division by zero at 2:12", "at outer at 5:15"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect: %q missing from %q", want, out)
		}
	}
	if !strings.Contains(js, `"pos":"2:12"`) || !strings.Contains(js, `"trace":["inner at 2:12","outer at 5:15","main at 7:13"]`) {
		t.Errorf("inspect --json: no position or trace in %s", js)
	}
}

// An act or await under --no-store is denied by naming --no-store, not the
// build.
func TestNoStoreDenialNamesIt(t *testing.T) {
	for _, src := range []string{`return act "fs.read" {path: "x"}`, `return await {key: "go"}`} {
		code, _, errs := invoke(t, "run", "--no-store", writeProg(t, src+"\n"))
		if code != exitFailed || !strings.Contains(errs, "is not available with --no-store, which runs pure computation only: run it without --no-store") || strings.Contains(errs, "build") {
			t.Errorf("%s: exit %d, %s", src, code, errs)
		}
	}
}

// An input or a payload a prog could not take (a string over the machine's
// 8 MiB, a list over its 1,048,576 elements) is bad input: exit 2 before
// anything is admitted or delivered, not a host failure after the work.
func TestInputLimitsBeforeAdmission(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	dir := t.TempDir()
	big := filepath.Join(dir, "str.json")
	os.WriteFile(big, []byte(`"`+strings.Repeat("a", 8<<20+1)+`"`), 0o644)
	long := filepath.Join(dir, "list.json")
	os.WriteFile(long, []byte("["+strings.Repeat("0,", 1<<20)+"0]"), 0o644)
	prog := writeProg(t, "let ev = await {key: \"go\"}\nreturn ev\n")
	for _, c := range []struct{ file, err string }{
		{big, "runehost: run: --input: string of 8388609 bytes exceeds the limit of 8388608"},
		{long, "runehost: run: --input: list of 1048577 elements exceeds the limit of 1048576"},
	} {
		for _, extra := range [][]string{nil, {"--no-store"}} {
			code, out, errs := invoke(t, append([]string{"run", prog, "--input", "@" + c.file}, extra...)...)
			if code != exitUsage || out != "" || errs != c.err+"\n" {
				t.Errorf("run %v: exit %d, %q", extra, code, errs)
			}
		}
	}
	if code, _, errs := invoke(t, "ps"); code != exitUsage || !strings.Contains(errs, "no store") {
		t.Fatalf("something was admitted: ps exit %d, %s", code, errs)
	}
	if code, _, errs := invoke(t, "run", prog); code != exitWaiting {
		t.Fatalf("run: exit %d, %s", code, errs)
	}
	code, _, errs := invoke(t, "send", "r1", "go", "["+strings.Repeat("0,", 1<<20)+"0]")
	if code != exitUsage || !strings.Contains(errs, "list of 1048577 elements exceeds the limit of 1048576") {
		t.Fatalf("send: exit %d, %s", code, errs)
	}
}

// A store that is a file is named as such, for the user to fix: exit 2,
// not a host failure quoting a file inside it.
func TestStoreIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(f, []byte("hi\n"), 0o644)
	t.Setenv("RUNEHOST_STORE", f)
	want := "runehost: the store " + f + " is a file, not a directory: name another (--store DIR or RUNEHOST_STORE), or move the file\n"
	for _, args := range [][]string{{"ps"}, {"run", writeProg(t, "return 1\n")}, {"events", "r1"}, {"serve"}} {
		if code, out, errs := invoke(t, args...); code != exitUsage || out != "" || errs != want {
			t.Errorf("%v: exit %d, %q, %q", args, code, out, errs)
		}
	}
}
