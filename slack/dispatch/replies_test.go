// replies_test.go: a thread reply of every subtype a person posts
// (thread_broadcast, file_share) reaches the waiting run, the bot's own
// messages and edits never; a mention is read as the person typed it.

package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSlackRepliesOfEverySubtype(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "two.rune"), []byte(`let a = await {key: "first"}
let b = await {key: "second"}
return [a.text, b.text, b.files]`), 0o644)
	thread := fake.Mention("C1", "U1", "two")
	waitFor(t, "the wait", 3*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "[first]") })
	n := 0
	msg := func(fields map[string]any) {
		n++
		ts := fmt.Sprintf("1800000000.%06d", n)
		ev := map[string]any{"type": "message", "channel": "C1", "ts": ts, "event_ts": ts, "thread_ts": thread}
		for k, v := range fields {
			ev[k] = v
		}
		fake.Push(ev)
	}
	// The bot's own messages, edits and deletions are not replies.
	msg(map[string]any{"user": "UBOT", "text": "the bot's echo"})
	msg(map[string]any{"subtype": "bot_message", "bot_id": "B1", "text": "a bot"})
	msg(map[string]any{"user": "U3", "bot_id": "B2", "text": "a bot as a user"})
	msg(map[string]any{"subtype": "message_changed", "message": map[string]any{"user": "U2", "text": "edited", "ts": "1.1", "thread_ts": thread}})
	msg(map[string]any{"subtype": "message_deleted", "deleted_ts": "1.1"})
	time.Sleep(300 * time.Millisecond)
	d.Wait()
	if c := card(fake); !strings.Contains(c.Text, "[first]") {
		t.Fatalf("a message that is not a person's reply answered: %s", c.Text)
	}
	// "Also send to channel", then a file with no text.
	msg(map[string]any{"subtype": "thread_broadcast", "user": "U2", "text": "broadcast <http://example.com|example.com>",
		"root": map[string]any{"ts": thread, "text": "the mention"}})
	waitFor(t, "the second wait", 3*time.Second, func() bool { return strings.Contains(card(fake).Text, "[second]") })
	msg(map[string]any{"subtype": "file_share", "user": "U2", "text": "",
		"files": []map[string]any{{"id": "F1", "name": "report.pdf", "title": "Report"}}})
	waitFor(t, "the close", 3*time.Second, func() bool { return strings.Contains(card(fake).Text, "completed") })
	if b := card(fake).Blocks; !strings.Contains(b, `broadcast example.com`) || !strings.Contains(b, "report.pdf") {
		t.Fatalf("the answer: %s", b)
	}
}

func TestSlackTyped(t *testing.T) {
	for _, tc := range []struct{ in, bot, want string }{
		{"<@UBOT> agent mail <mailto:a@b.co|a@b.co>", "UBOT", "agent mail a@b.co"},
		{"<@UBOT> agent see <http://example.com|example.com>", "UBOT", "agent see example.com"},
		{"<@UBOT> agent <https://x.y/z>", "UBOT", "agent https://x.y/z"},
		{"<@UBOT> agent ask <@U123> in <#C1|general> <!here>", "UBOT", "agent ask <@U123> in <#C1|general> <!here>"},
		{"<@UBOT> agent a &lt;b&gt; &amp;amp; c", "UBOT", "agent a <b> &amp; c"},
		{"<@UBOT> agent <https://x.y/?a=1&amp;b=2|x.y &amp; more>", "UBOT", "agent x.y & more"},
		{"<@UX> agent <@U123>", "", "agent <@U123>"},
	} {
		if got := typed(tc.in, tc.bot); got != tc.want {
			t.Errorf("typed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, first, rest string }{
		{"agent\n{\"a\":1}", "agent", `{"a":1}`},
		{"agent\t x y", "agent", "x y"},
		{"agent", "agent", ""},
		{"  ", "", ""},
	} {
		if f, r := command(tc.in); f != tc.first || r != tc.rest {
			t.Errorf("command(%q) = %q, %q", tc.in, f, r)
		}
	}
}

// A mention's input is what the person typed: its links their labels, the
// prog's name ending at a newline.
func TestSlackMentionAsTyped(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "echo.rune"), []byte(`return input.to + " " + input.site`), 0o644)
	fake.Mention("C1", "U1", "echo\n{\"to\": \"<mailto:a@b.co|a@b.co>\", \"site\": \"<http://example.com|example.com>\"}")
	waitFor(t, "the close", 3*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "completed") })
	if b := card(fake).Blocks; !strings.Contains(b, "a@b.co example.com") || strings.Contains(b, "mailto") {
		t.Fatalf("the answer: %s", b)
	}
}

// A long first word is no prog: a plain reply, no card, little of it echoed.
func TestSlackLongFirstWord(t *testing.T) {
	fake, d, _ := setup(t)
	fake.Mention("C1", "U1", strings.Repeat("x", 3000)+" input")
	waitFor(t, "the reply", 3*time.Second, func() bool { return len(fake.Messages()) > 0 })
	d.Wait()
	ms := fake.Messages()
	if len(ms) != 1 || ms[0].Blocks != "" || len(ms[0].Text) > 300 || !strings.Contains(ms[0].Text, "no prog “"+strings.Repeat("x", EchoMax)+"…”") {
		t.Fatalf("%d messages: %+v", len(ms), ms)
	}
}
