// main_test.go: with -redact.corpus FILE the tests only write a corpus for
// measuring `runehost redact` end to end (make bench-redact).

package redact_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

var (
	corpusOut  = flag.String("redact.corpus", "", "write a generated log corpus to this file and exit")
	corpusMB   = flag.Int("redact.corpus-mb", 50, "size of the written corpus, in MiB")
	corpusRate = flag.Float64("redact.corpus-rate", 0.01, "share of the written corpus's lines that carry a secret")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *corpusOut != "" {
		text, planted := genLog(defaultSeed, *corpusMB<<20, *corpusRate)
		if err := os.WriteFile(*corpusOut, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s: %d bytes, %d secrets\n", *corpusOut, len(text), len(planted))
		os.Exit(0)
	}
	os.Exit(m.Run())
}
