// Command loadcards is `make load-cards`: many live cards against the
// rate-limited fake Slack. Its last line reads
// "load-cards: N cards, R refused terminal frames, M max edits/min".
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/runehost/runehost/internal/loadcards"
)

func main() {
	n := flag.Int("cards", 50, "concurrent cards")
	limit := flag.Int("limit", 50, "chat.update calls a minute the fake allows")
	seed := flag.Int64("seed", 1, "seed of the runs' timing")
	gap := flag.Duration("gap", loadcards.OpenGap, "between two cards' posts (0: all at once)")
	flag.Parse()
	loadcards.OpenGap = *gap
	res, err := loadcards.Compare(*n, *limit, *seed)
	if err != nil {
		fmt.Println("load-cards:", err)
		os.Exit(1)
	}
	for _, v := range res.Violations {
		fmt.Println("load-cards: violation:", v)
	}
	fmt.Printf("load-cards: %d edits, %d cards closed, seed %d\n", len(res.Edits), res.Closed, *seed)
	fmt.Printf("load-cards: run end to terminal frame p50 %v, p99 %v; max %d calls a minute in one channel; %d posts queued (delay p50 %v, max %v), %d retried, %d permanent failures, %d fallback posts\n",
		loadcards.Percentile(res.EndToFinal, 50), loadcards.Percentile(res.EndToFinal, 99), res.MaxChannelPerMinute, res.PostsQueued,
		loadcards.Percentile(res.PostDelays, 50), loadcards.Percentile(res.PostDelays, 100), res.PostRetries, res.PermanentFailures, res.FallbackPosts)
	fmt.Printf("load-cards: %d cards, %d refused terminal frames, %d max edits/min\n", res.Cards, res.RefusedTerminal, res.MaxPerMinute)
	if len(res.Violations) > 0 {
		os.Exit(1)
	}
}
