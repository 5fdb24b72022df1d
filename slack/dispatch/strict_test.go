// strict_test.go runs whole mentions against the strict fake Slack where a
// real workspace breaks cards: the card deleted mid-run, the channel
// archived, a checklist of 300 items.

package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack/socketmode"

	"github.com/runehost/runehost/slack/fakeslack"
)

// updatesTo counts the chat.update calls made on one message.
func updatesTo(fake *fakeslack.Server, ts string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Method == "chat.update" && strings.Contains(r.Body, ts) {
			n++
		}
	}
	return n
}

// waitingCard mentions agent and returns its thread and its card once the
// run waits for the approval.
func waitingCard(t *testing.T, fake *fakeslack.Server) (string, *fakeslack.Message) {
	t.Helper()
	thread := fake.Mention("C1", "U1", "agent please ship")
	waitFor(t, "the approval wait", 10*time.Second, func() bool {
		c := card(fake)
		return c != nil && strings.Contains(c.Text, "waiting for an event")
	})
	return thread, card(fake)
}

// A card deleted while its run waits: its edits stop at the first refusal,
// and the run's end is posted as a new message in the thread.
func TestDeletedCardEndsInThread(t *testing.T) {
	fake, d, _ := setup(t)
	thread, c := waitingCard(t, fake)
	fake.Delete(c.Channel, c.TS)
	fake.Reply("C1", thread, "U2", "yes")
	waitFor(t, "the end, in the thread", 15*time.Second, func() bool {
		for _, m := range fake.Messages() {
			if m.TS != c.TS && m.ThreadTS == thread && strings.Contains(m.Text, "completed") {
				return true
			}
		}
		return false
	})
	d.Wait()
	before := updatesTo(fake, c.TS)
	time.Sleep(3 * time.Second) // past a retry's backoff: nothing more is sent
	if after := updatesTo(fake, c.TS); after != before {
		t.Fatalf("%d more edits of a deleted card", after-before)
	}
	if n := d.Cards().PermanentFailures.Load(); n == 0 {
		t.Fatal("the deleted card was not counted a permanent failure")
	}
}

// An archived channel: the card is given up at once, not edited forever.
func TestArchivedChannelStopsEdits(t *testing.T) {
	fake, d, _ := setup(t)
	thread, c := waitingCard(t, fake)
	fake.Archive("C1")
	fake.Reply("C1", thread, "U2", "yes")
	waitFor(t, "a permanent failure", 15*time.Second, func() bool { return d.Cards().PermanentFailures.Load() > 0 })
	d.Wait()
	before := updatesTo(fake, c.TS)
	time.Sleep(3 * time.Second)
	if after := updatesTo(fake, c.TS); after != before {
		t.Fatalf("%d more edits in an archived channel", after-before)
	}
}

// A checklist of 300 items paints within Slack's limits: never refused for
// size, and the run's end lands. Its emit's data is cut at
// events.OutputCap (8,000 characters of JSON): the card shows the items
// before the cut, folded, and says the rest was too long.
func TestLongChecklistFits(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	d, _, _ := start(t, fake, dir)
	var items []string
	for i := 0; i < 300; i++ {
		items = append(items, fmt.Sprintf(`{text: "step %d of the long plan <&>", state: "%s"}`, i, map[bool]string{true: "done", false: "open"}[i < 150]))
	}
	os.WriteFile(filepath.Join(dir, "progs", "long.rune"), []byte("emit(\"checklist\", ["+strings.Join(items, ", ")+"])\nreturn \"done\""), 0o644)
	fake.Mention("C1", "U1", "long")
	waitFor(t, "the card's end", 15*time.Second, func() bool {
		c := card(fake)
		return c != nil && strings.Contains(c.Text, "completed")
	})
	d.Wait()
	for r, n := range fake.Refusals() {
		if r.Error == "msg_blocks_too_long" || r.Error == "invalid_blocks" || r.Error == "msg_too_long" {
			t.Errorf("refused %d times for size: %+v", n, r)
		}
	}
	if b := card(fake).Blocks; !strings.Contains(b, "earlier items done") || !strings.Contains(b, "too long to show") {
		t.Errorf("the checklist was not folded: %.300s", card(fake).Blocks)
	}
}

// An envelope whose ack is lost is delivered again with retry_attempt:
// the mention still makes one run and one card. (The acks are dropped: a
// deadline however short is met by an ack back before the fake's clock
// moves, and then nothing was delivered again.)
func TestRedeliveredMentionRunsOnce(t *testing.T) {
	cfg := fakeslack.Strict()
	cfg.AckDeadline = time.Millisecond
	cfg.Retries = []time.Duration{0, 50 * time.Millisecond}
	cfg.DropAcks = 2
	fake := fakeslack.NewWith(fastClock(t), cfg)
	t.Cleanup(fake.Close)
	d, _, _ := start(t, fake, t.TempDir())
	fake.Mention("C1", "U1", "agent please ship")
	waitFor(t, "the redeliveries", 10*time.Second, func() bool {
		n := 0
		for _, dl := range fake.Deliveries() {
			if dl.Attempt > 0 {
				n++
			}
		}
		return n >= 2
	})
	waitFor(t, "the card", 10*time.Second, func() bool { return card(fake) != nil })
	time.Sleep(200 * time.Millisecond)
	cards := 0
	for _, m := range fake.Messages() {
		if strings.Contains(m.Text, "agent") && m.ThreadTS != "" {
			cards++
		}
	}
	if cards != 1 {
		t.Fatalf("%d cards for one mention delivered %d times", cards, len(fake.Deliveries()))
	}
	invs, err := d.e.List()
	if err != nil || len(invs) != 1 {
		t.Fatalf("%d runs for one mention: %v", len(invs), err)
	}
}

// slack-go drops a Socket Mode connection that goes unpinged for its ping
// timeout (30 s; shortened here on the real clock, which its watchdog
// runs on): the dispatcher reconnects, and a mention after the drop still
// makes its card. With pings, one connection lasts.
func TestUnpingedConnectionReconnects(t *testing.T) {
	for _, every := range []time.Duration{50 * time.Millisecond, 0} {
		t.Run(fmt.Sprintf("pings every %v", every), func(t *testing.T) {
			cfg := fakeslack.Strict()
			cfg.PingInterval = every
			fake := fakeslack.NewWith(fastClock(t), cfg)
			t.Cleanup(fake.Close)
			dir := t.TempDir()
			startWith(t, fake, dir, func(c *Config) {
				c.SocketOptions = append(c.SocketOptions, socketmode.OptionPingInterval(300*time.Millisecond))
			})
			time.Sleep(1500 * time.Millisecond)
			if every > 0 && fake.Connections() != 1 {
				t.Fatalf("pinged, yet %d connections", fake.Connections())
			}
			if every == 0 {
				waitFor(t, "a reconnection", 10*time.Second, func() bool { return fake.Connections() >= 2 && fake.Connected() >= 1 })
			}
			fake.Mention("C1", "U1", "agent please ship")
			waitFor(t, "the card after the drop", 10*time.Second, func() bool { return card(fake) != nil })
		})
	}
}
