// example_test.go: a strict fake on a virtual clock, as a new test uses it.

package fakeslack_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/fakeslack"
)

func ExampleNewStrict() {
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	fake := fakeslack.NewStrict(clk)
	defer fake.Close()
	api := slack.New("xoxb-test", slack.OptionAPIURL(fake.URL()))
	var err error
	for i := 0; i < 4 && err == nil; i++ { // a burst of 3 a channel, then 1 a second
		_, _, err = api.PostMessage("C1", slack.MsgOptionText("hi", false))
	}
	var rl *slack.RateLimitedError
	fmt.Println(errors.As(err, &rl), rl.RetryAfter)
	clk.Advance(rl.RetryAfter)
	_, ts, _ := api.PostMessage("C1", slack.MsgOptionText("hi", false))
	_, _, _, err = api.UpdateMessage("C2", ts, slack.MsgOptionText("edit", false), slack.MsgOptionBlocks(slack.NewDividerBlock()))
	fmt.Println(err)
	// Output:
	// true 1s
	// message_not_found
}
