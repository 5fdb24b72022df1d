// docs_test.go checks the Rune the docs show: every ```rune block in the
// README and docs/ compiles under runehost check.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDocsRuneBlocksCheck(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```rune" {
				continue
			}
			start := i + 1
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			}
			n++
			prog := writeProg(t, strings.Join(lines[start:i], "\n")+"\n")
			if code, _, errs := invoke(t, "check", prog); code != exitOK {
				t.Errorf("%s:%d: the block does not check: %s", filepath.Base(f), start, errs)
			}
		}
	}
	if n == 0 {
		t.Fatal("no ```rune block in the docs")
	}
}
