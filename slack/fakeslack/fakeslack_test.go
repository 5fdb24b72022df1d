// fakeslack_test.go: the strict fake against the real slack-go client and
// socketmode client: rate limits as 429 and as 200, block errors, the
// channel-checked update, set-up errors, pings, redelivery, disconnect and
// the echo of the bot's posts.

package fakeslack_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/fakeslack"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func strict(t *testing.T, cfg ...func(*fakeslack.Config)) (*fakeslack.Server, *clock.Fake, *slack.Client) {
	clk := clock.NewFake(t0)
	c := fakeslack.Strict()
	for _, f := range cfg {
		f(&c)
	}
	fake := fakeslack.NewWith(clk, c)
	t.Cleanup(fake.Close)
	return fake, clk, slack.New("xoxb-t", slack.OptionAPIURL(fake.URL()), slack.OptionAppLevelToken("xapp-t"))
}

func post(api *slack.Client, channel string, opts ...slack.MsgOption) (string, error) {
	if len(opts) == 0 {
		opts = []slack.MsgOption{slack.MsgOptionText("hi", false)}
	}
	_, ts, err := api.PostMessageContext(context.Background(), channel, opts...)
	return ts, err
}

func slackErr(t *testing.T, err error, want string) slack.SlackErrorResponse {
	t.Helper()
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != want {
		t.Fatalf("got %v (%T), want %s", err, err, want)
	}
	return se
}

// chat.postMessage: a burst of 3 in a channel, then one a second; another
// channel is not held up; over the limit a 429 with Retry-After, or with the
// switch an HTTP 200 rate_limited, which slack-go does not see as a limit.
func TestPostRateLimit(t *testing.T) {
	fake, clk, api := strict(t)
	for i := 0; i < 3; i++ {
		if _, err := post(api, "C1"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := post(api, "C1")
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("the 4th post: %v", err)
	}
	if _, err := post(api, "C2"); err != nil {
		t.Fatalf("another channel: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := post(api, "C1"); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
	fake.RateLimitAs200(true)
	_, err = post(api, "C1")
	slackErr(t, err, "rate_limited")
	if errors.As(err, &rl) {
		t.Fatal("rate_limited as 200 came back as a RateLimitedError")
	}
	got := fake.Refusals()
	if got[fakeslack.Refusal{Method: "chat.postMessage", Status: 429, Error: "ratelimited"}] != 1 ||
		got[fakeslack.Refusal{Method: "chat.postMessage", Status: 200, Error: "rate_limited"}] != 1 {
		t.Fatalf("refusals %v", got)
	}
}

// chat.update: 50 in any minute for the app, per message counted in Refused.
func TestUpdateTier(t *testing.T) {
	fake, clk, api := strict(t)
	ts, _ := post(api, "C1")
	text, blocks := slack.MsgOptionText("x", false), slack.MsgOptionBlocks(slack.NewDividerBlock())
	for i := 0; i < fakeslack.Tier3; i++ {
		clk.Advance(100 * time.Millisecond)
		if _, _, _, err := api.UpdateMessage("C1", ts, text, blocks); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	_, _, _, err := api.UpdateMessage("C1", ts, text, blocks)
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter < 50*time.Second {
		t.Fatalf("the 51st update: %v", err)
	}
	if fake.Refused()[ts] != 1 || fake.MaxUpdatesPerMinute() != fakeslack.Tier3 {
		t.Fatalf("refused %v, max %d", fake.Refused(), fake.MaxUpdatesPerMinute())
	}
	clk.Advance(rl.RetryAfter)
	if _, _, _, err := api.UpdateMessage("C1", ts, text, blocks); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
}

// Slack refuses a call now and then although it is under its limit.
func TestRandomRateLimited(t *testing.T) {
	fake, clk, api := strict(t, func(c *fakeslack.Config) { c.RandomRateLimited, c.Seed = 0.3, 7 })
	refused := 0
	for i := 0; i < 40; i++ {
		clk.Advance(2 * time.Second)
		if _, err := post(api, "C1"); err != nil {
			slackErr(t, err, "rate_limited")
			refused++
		}
	}
	if refused == 0 || refused == 40 || fake.Refusals()[fakeslack.Refusal{Method: "chat.postMessage", Status: 200, Error: "rate_limited"}] != refused {
		t.Fatalf("%d of 40 refused", refused)
	}
}

func richText(els ...slack.RichTextElement) slack.MsgOption {
	return slack.MsgOptionBlocks(slack.NewRichTextBlock("card", els...))
}

func words(s string) *slack.RichTextSection {
	return slack.NewRichTextSection(slack.NewRichTextSectionTextElement(s, nil))
}

// Blocks as slack-go sends them, checked with Slack's errors.
func TestBlocks(t *testing.T) {
	_, clk, api := strict(t)
	text := slack.MsgOptionText("fallback", false)
	pre := func(s string) *slack.RichTextPreformatted {
		return &slack.RichTextPreformatted{Type: slack.RTEPreformatted, Elements: []slack.RichTextSectionElement{slack.NewRichTextSectionTextElement(s, nil)}}
	}
	good := richText(words("title"), slack.NewRichTextList(slack.RTEListBullet, 0, words("one"), words("two")), pre("output"),
		slack.NewRichTextSection(slack.NewRichTextSectionLinkElement("https://x.example/r/1", "run 1", nil)))
	if _, err := post(api, "C1", text, good); err != nil {
		t.Fatalf("a good card: %v", err)
	}
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	dup := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "a", false, false), nil, nil, slack.SectionBlockOptionBlockID("b")),
		slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "b", false, false), nil, nil, slack.SectionBlockOptionBlockID("b"))}
	for name, c := range map[string]struct {
		opts []slack.MsgOption
		want string
	}{
		"untyped preformatted": {[]slack.MsgOption{text, richText(&slack.RichTextPreformatted{Elements: []slack.RichTextSectionElement{slack.NewRichTextSectionTextElement("x", nil)}})}, "invalid_blocks"},
		"text in a list":       {[]slack.MsgOption{text, slack.MsgOptionBlocks(slack.NewRichTextBlock("", slack.NewRichTextList(slack.RTEListBullet, 0, pre("x"))))}, "invalid_blocks"},
		"empty text element":   {[]slack.MsgOption{text, richText(words(""))}, "invalid_blocks"},
		"empty rich_text":      {[]slack.MsgOption{text, richText()}, "invalid_blocks"},
		"51 blocks":            {[]slack.MsgOption{text, slack.MsgOptionBlocks(many...)}, "invalid_blocks"},
		"long block_id":        {[]slack.MsgOption{text, slack.MsgOptionBlocks(slack.NewRichTextBlock(strings.Repeat("b", 256), words("x")))}, "invalid_blocks"},
		"duplicate block_id":   {[]slack.MsgOption{text, slack.MsgOptionBlocks(dup...)}, "invalid_blocks"},
		"header without text":  {[]slack.MsgOption{text, slack.MsgOptionBlocks(slack.NewHeaderBlock(nil))}, "invalid_blocks"},
		"long preformatted":    {[]slack.MsgOption{text, richText(pre(strings.Repeat("x", fakeslack.MaxBlocksText+1)))}, "msg_blocks_too_long"},
		"long text":            {[]slack.MsgOption{slack.MsgOptionText(strings.Repeat("x", fakeslack.MaxMessageText+1), false)}, "msg_too_long"},
		"nothing":              {[]slack.MsgOption{slack.MsgOptionText("", false)}, "no_text"},
	} {
		clk.Advance(time.Minute)
		_, err := post(api, "C1", c.opts...)
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || se.Err != c.want {
			t.Errorf("%s: %v, want %s", name, err, c.want)
		} else if c.want == "invalid_blocks" && len(se.ResponseMetadata.Messages) == 0 {
			t.Errorf("%s: no [ERROR] lines", name)
		}
	}
}

// chat.update finds the message by channel and ts; deleted messages,
// archived channels and channels the bot left answer Slack's errors.
func TestChannelChecks(t *testing.T) {
	fake, clk, api := strict(t)
	ts, _ := post(api, "C1")
	upd := func(channel, ts string) error {
		clk.Advance(time.Second)
		_, _, _, err := api.UpdateMessage(channel, ts, slack.MsgOptionText("x", false), slack.MsgOptionBlocks(slack.NewDividerBlock()))
		return err
	}
	slackErr(t, upd("C2", ts), "message_not_found")
	slackErr(t, upd("C1", "1.000001"), "message_not_found")
	slackErr(t, upd("C1", fake.Mention("C1", "U1", "hi")), "cant_update_message")
	if err := upd("C1", ts); err != nil {
		t.Fatal(err)
	}
	fake.Kick("C1")
	_, err := post(api, "C1")
	slackErr(t, err, "not_in_channel")
	slackErr(t, upd("C1", ts), "channel_not_found")
	fake.Join("C1")
	fake.Delete("C1", ts)
	slackErr(t, upd("C1", ts), "message_not_found")
	fake.Archive("C1")
	clk.Advance(time.Minute)
	_, err = post(api, "C1")
	slackErr(t, err, "is_archived")
	if ms := fake.Messages(); len(ms) != 1 || !ms[0].Deleted || ms[0].Edits != 1 {
		t.Fatalf("%+v", ms)
	}
}

// auth.test and apps.connections.open fail as Slack's do.
func TestSetupErrors(t *testing.T) {
	fake, _, api := strict(t, func(c *fakeslack.Config) { c.BotToken = "xoxb-t" })
	if r, err := api.AuthTest(); err != nil || r.UserID != fake.BotUserID || r.BotID != fake.BotID {
		t.Fatalf("auth.test: %+v %v", r, err)
	}
	_, err := slack.New("", slack.OptionAPIURL(fake.URL())).AuthTest()
	slackErr(t, err, "not_authed")
	_, err = slack.New("xoxb-other", slack.OptionAPIURL(fake.URL())).AuthTest()
	slackErr(t, err, "invalid_auth")
	_, _, err = slack.New("xoxb-t", slack.OptionAPIURL(fake.URL()), slack.OptionAppLevelToken("xoxb-t")).StartSocketModeContext(context.Background())
	slackErr(t, err, "not_allowed_token_type")
	_, _, err = slack.New("xapp-t", slack.OptionAPIURL(fake.URL())).PostMessage("C1", slack.MsgOptionText("x", false))
	slackErr(t, err, "not_allowed_token_type")
	fake.SetAppScopes("authorizations:read")
	_, _, err = api.StartSocketModeContext(context.Background())
	if se := slackErr(t, err, "missing_scope"); se.Needed != "connections:write" || se.Provided != "authorizations:read" {
		t.Fatalf("needed %q provided %q", se.Needed, se.Provided)
	}
	fake.SetAppScopes("connections:write")
	if _, url, err := api.StartSocketModeContext(context.Background()); err != nil || !strings.HasPrefix(url, "ws://") {
		t.Fatalf("%q %v", url, err)
	}
	fake.FailAuth("token_revoked")
	_, err = api.AuthTest()
	slackErr(t, err, "token_revoked")
}

// client runs a socketmode client against fake; it acks each events_api
// request for which ack says so, and passes them on.
func client(t *testing.T, fake *fakeslack.Server, ack func(*socketmode.Request) bool, opts ...socketmode.Option) <-chan socketmode.Event {
	api := slack.New("xoxb-t", slack.OptionAPIURL(fake.URL()), slack.OptionAppLevelToken("xapp-t"))
	sm := socketmode.New(api, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	out := make(chan socketmode.Event, 64)
	go func() { defer close(done); sm.RunContext(ctx) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case evt := <-sm.Events:
				if evt.Type != socketmode.EventTypeEventsAPI {
					continue
				}
				if ack == nil || ack(evt.Request) {
					sm.Ack(*evt.Request)
				}
				out <- evt
			}
		}
	}()
	if !fake.WaitConnected(5 * time.Second) {
		t.Fatal("no connection")
	}
	return out
}

func next(t *testing.T, events <-chan socketmode.Event) (*socketmode.Request, *slackevents.MessageEvent) {
	t.Helper()
	select {
	case evt := <-events:
		ev := evt.Data.(slackevents.EventsAPIEvent)
		m, _ := ev.InnerEvent.Data.(*slackevents.MessageEvent)
		return evt.Request, m
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return nil, nil
	}
}

// slack-go drops a connection that is not pinged for its ping interval (a
// timer on the real clock, 30 s by default): with the fake's pings it stays,
// without them it reconnects. Both intervals are scaled down here.
func TestPingsKeepTheConnection(t *testing.T) {
	for _, every := range []time.Duration{50 * time.Millisecond, 0} {
		fake := fakeslack.NewWith(clock.NewFake(t0), func() fakeslack.Config { c := fakeslack.Strict(); c.PingInterval = every; return c }())
		client(t, fake, nil, socketmode.OptionPingInterval(300*time.Millisecond))
		time.Sleep(time.Second)
		pings, pongs := fake.Pings()
		if every > 0 && (fake.Connections() != 1 || pongs == 0) {
			t.Errorf("pinged: %d connections, %d pings, %d pongs", fake.Connections(), pings, pongs)
		}
		if every == 0 && fake.Connections() < 2 {
			t.Errorf("never pinged, %d connections", fake.Connections())
		}
		fake.Close()
	}
}

// An envelope not acked within 3 s (of the fake's clock) comes again with
// retry_attempt 1 and retry_reason timeout; an ack after the deadline is late.
func TestRedelivery(t *testing.T) {
	fake, clk, _ := strict(t)
	var first atomic.Pointer[socketmode.Request]
	events := client(t, fake, func(r *socketmode.Request) bool {
		return !first.CompareAndSwap(nil, r) // the first is not acked
	})
	fake.Mention("C1", "U1", "hello")
	req, _ := next(t, events)
	id := req.EnvelopeID
	if d := fake.Deliveries(); len(d) != 1 || d[0].EnvelopeID != id || req.RetryAttempt != 0 {
		t.Fatalf("%+v", req)
	}
	clk.Advance(fakeslack.AckDeadline - time.Millisecond)
	if fake.Acked(id) || len(fake.Deliveries()) != 1 {
		t.Fatal("sent again before the deadline")
	}
	clk.Advance(time.Millisecond)
	again, _ := next(t, events)
	if again.RetryAttempt != 1 || again.RetryReason != "timeout" || again.EnvelopeID == id {
		t.Fatalf("retry %+v", again)
	}
	if !fake.WaitAcked(again.EnvelopeID, 5*time.Second) {
		t.Fatal("the retry was not acked")
	}
	clk.Advance(10 * time.Minute) // acked: no more attempts
	if d := fake.Deliveries(); len(d) != 2 || d[0].Acked || !d[1].Acked || d[1].Attempt != 1 {
		t.Fatalf("deliveries %+v", d)
	}
}

// DropAcks loses an event's first acks: each of those deliveries passes
// its deadline and the event comes again, however fast its ack was; the
// first ack past them counts.
func TestDroppedAcks(t *testing.T) {
	fake, clk, _ := strict(t, func(c *fakeslack.Config) { c.DropAcks = 2 })
	events := client(t, fake, nil)
	fake.Mention("C1", "U1", "hello")
	for attempt := 0; attempt < 3; attempt++ {
		req, _ := next(t, events)
		if req.RetryAttempt != attempt {
			t.Fatalf("attempt %d: %+v", attempt, req)
		}
		if attempt < 2 {
			waitDeliveries(t, fake, func(d []fakeslack.Delivery) bool { return d[attempt].Dropped })
			if fake.Acked(req.EnvelopeID) {
				t.Fatalf("a dropped ack was seen: %+v", fake.Deliveries())
			}
			clk.Advance(fakeslack.AckDeadline)
			clk.Advance(time.Minute) // the second retry's wait
		} else if !fake.WaitAcked(req.EnvelopeID, 5*time.Second) {
			t.Fatal("the third delivery's ack was lost")
		}
	}
	clk.Advance(10 * time.Minute)
	if d := fake.Deliveries(); len(d) != 3 || d[0].Acked || d[1].Acked || !d[2].Acked || d[2].Dropped || d[0].Late {
		t.Fatalf("deliveries %+v", d)
	}
}

// waitDeliveries waits until ok holds of the deliveries.
func waitDeliveries(t *testing.T, fake *fakeslack.Server, ok func([]fakeslack.Delivery) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if ok(fake.Deliveries()) {
			return
		}
	}
	t.Fatalf("deliveries %+v", fake.Deliveries())
}

// A late ack counts as late.
func TestLateAck(t *testing.T) {
	fake, clk, _ := strict(t, func(c *fakeslack.Config) { c.Retries = nil })
	release := make(chan struct{})
	events := client(t, fake, func(*socketmode.Request) bool { <-release; return true })
	id := fake.Push(map[string]any{"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1.000001", "text": "hi"})
	if !fake.WaitDeliveries(1, 5*time.Second) {
		t.Fatal("not delivered")
	}
	clk.Advance(fakeslack.AckDeadline + time.Second)
	close(release)
	next(t, events)
	if !fake.WaitAcked(id, 5*time.Second) || fake.LateAcks() != 1 {
		t.Fatalf("late acks %d", fake.LateAcks())
	}
}

// A disconnect makes slack-go open a new connection; events pushed after it
// go there.
func TestDisconnectReconnects(t *testing.T) {
	fake, _, _ := strict(t)
	events := client(t, fake, nil)
	fake.Disconnect("refresh_requested")
	if !fake.WaitConnections(2, 5*time.Second) {
		t.Fatal("no reconnection")
	}
	fake.Mention("C1", "U1", "after")
	next(t, events)
	if d := fake.Deliveries(); len(d) != 1 || d[0].Conn != 2 {
		t.Fatalf("%+v", d)
	}
	if n := len(fake.Requests()); fake.Requests()[n-1].Method != "apps.connections.open" {
		t.Fatal("no apps.connections.open for the new connection")
	}
}

// The bot's own posts and edits come back as events, as Slack sends them to
// an app subscribed to messages.
func TestEcho(t *testing.T) {
	fake, clk, api := strict(t)
	events := client(t, fake, nil)
	ts, err := post(api, "C1", slack.MsgOptionText("card", false), slack.MsgOptionTS("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}
	_, m := next(t, events)
	if m == nil || m.BotID != fake.BotID || m.User != fake.BotUserID || m.SubType != "" || m.TimeStamp != ts || m.ThreadTimeStamp != "1700000000.000100" || m.Text != "card" {
		t.Fatalf("echo %+v", m)
	}
	clk.Advance(time.Second)
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("edited", false), slack.MsgOptionBlocks(slack.NewDividerBlock())); err != nil {
		t.Fatal(err)
	}
	_, m = next(t, events)
	if m == nil || m.SubType != "message_changed" || m.Message.Text != "edited" || m.PreviousMessage.Text != "card" || m.Message.BotID != fake.BotID {
		t.Fatalf("edit echo %+v", m)
	}
}

// Thread replies with subtypes, and edits, as slackevents decodes them.
func TestReplySubtypes(t *testing.T) {
	fake, _, _ := strict(t)
	events := client(t, fake, nil)
	thread := fake.Mention("C1", "U1", "go")
	next(t, events)
	fake.ReplyBroadcast("C1", thread, "U2", "also to the channel")
	_, m := next(t, events)
	if m.SubType != "thread_broadcast" || m.ThreadTimeStamp != thread || m.Root == nil || m.Root.User != "U1" {
		t.Fatalf("broadcast %+v", m)
	}
	ts := fake.ReplyFiles("C1", thread, "U2", "logs", fakeslack.File{Name: "a.log", Mimetype: "text/plain", Size: 12})
	_, m = next(t, events)
	if m.SubType != "file_share" || len(m.Message.Files) != 1 || m.Message.Files[0].Name != "a.log" {
		t.Fatalf("files %+v", m)
	}
	fake.Edit("C1", ts, "logs, fixed")
	_, m = next(t, events)
	if m.SubType != "message_changed" || m.Message.Text != "logs, fixed" || m.PreviousMessage.Text != "logs" || m.Message.ThreadTimestamp != thread {
		t.Fatalf("edit %+v", m)
	}
}

// Over the Events API: signed posts, sent again after an error with
// Slack's retry headers.
func TestDeliverTo(t *testing.T) {
	fake, _, _ := strict(t, func(c *fakeslack.Config) { c.Retries = []time.Duration{0} })
	var calls atomic.Int32
	retry := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sv, err := slack.NewSecretsVerifier(r.Header, "shh")
		if err != nil {
			t.Error(err)
		}
		body, _ := io.ReadAll(r.Body)
		sv.Write(body)
		if err := sv.Ensure(); err != nil {
			t.Errorf("signature: %v", err)
		}
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		retry <- r.Header.Get("X-Slack-Retry-Num") + " " + r.Header.Get("X-Slack-Retry-Reason")
	}))
	defer srv.Close()
	fake.DeliverTo(srv.URL, "shh")
	fake.Mention("C1", "U1", "hi")
	select {
	case got := <-retry:
		if got != "1 http_error" {
			t.Fatalf("retry headers %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no retry")
	}
}
