// events.go: the events a test pushes as Slack would send them (mentions,
// thread replies, broadcasts, file shares, edits), and their delivery to an
// Events API endpoint, signed, with Slack's retries.

package fakeslack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Mention pushes an app_mention of the bot in channel, and returns its ts.
func (s *Server) Mention(channel, user, text string) string {
	return s.userMessage("app_mention", channel, "", user, "<@"+s.BotUserID+"> "+text, 100, nil)
}

// MentionInThread pushes a mention posted inside an existing thread.
func (s *Server) MentionInThread(channel, threadTS, user, text string) string {
	return s.userMessage("app_mention", channel, threadTS, user, "<@"+s.BotUserID+"> "+text, 150, nil)
}

// ReplyMentioning pushes a thread reply that mentions the bot: Slack sends
// it twice, as a message and as a mention, with different event ids.
func (s *Server) ReplyMentioning(channel, threadTS, user, text string) {
	text = "<@" + s.BotUserID + "> " + text
	ts := s.userMessage("message", channel, threadTS, user, text, 250, nil)
	s.Push(map[string]any{"type": "app_mention", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "thread_ts": threadTS, "text": text})
}

// Reply pushes a message in a thread.
func (s *Server) Reply(channel, threadTS, user, text string) {
	s.userMessage("message", channel, threadTS, user, text, 200, nil)
}

// ReplyBroadcast pushes a thread reply also sent to the channel: a message
// with subtype thread_broadcast and the thread's root. It returns its ts.
func (s *Server) ReplyBroadcast(channel, threadTS, user, text string) string {
	s.mu.Lock()
	root := map[string]any{"type": "message", "ts": threadTS, "thread_ts": threadTS}
	if m := s.said[channel+"/"+threadTS]; m != nil {
		root["user"], root["text"] = m.user, m.text
	} else if m := s.messages[channel+"/"+threadTS]; m != nil {
		root["user"], root["bot_id"], root["text"] = s.BotUserID, s.BotID, m.Text
	}
	s.mu.Unlock()
	return s.userMessage("message", channel, threadTS, user, text, 300, map[string]any{"subtype": "thread_broadcast", "root": root})
}

// File is a file shared in a message.
type File struct {
	ID, Name, Mimetype string
	Size               int
}

// ReplyFiles pushes a thread reply sharing files (threadTS "": in the
// channel): a message with subtype file_share. It returns its ts.
func (s *Server) ReplyFiles(channel, threadTS, user, text string, files ...File) string {
	var fs []any
	for i, f := range files {
		if f.ID == "" {
			f.ID = fmt.Sprintf("F%d", i+1)
		}
		u := "https://files.slack.com/files-pri/" + s.TeamID + "-" + f.ID + "/" + f.Name
		fs = append(fs, map[string]any{"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype,
			"filetype": "binary", "size": f.Size, "user": user, "mode": "hosted", "is_external": false,
			"url_private": u, "url_private_download": u + "?download=1", "permalink": "https://fake.slack.com/files/" + user + "/" + f.ID})
	}
	return s.userMessage("message", channel, threadTS, user, text, 350,
		map[string]any{"subtype": "file_share", "files": fs, "upload": false, "display_as_bot": false})
}

// Edit pushes the message_changed event of a person editing their message
// (one pushed by Mention, Reply...) to text, and returns its envelope id
// ("" if the fake does not know the message).
func (s *Server) Edit(channel, ts, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.said[channel+"/"+ts]
	if m == nil {
		return ""
	}
	evTS := s.eventTS()
	prev := map[string]any{"type": "message", "user": m.user, "text": m.text, "ts": ts}
	now := map[string]any{"type": "message", "user": m.user, "text": text, "ts": ts, "edited": map[string]any{"user": m.user, "ts": evTS}}
	if m.thread != "" {
		prev["thread_ts"], now["thread_ts"] = m.thread, m.thread
	}
	m.text = text
	return s.pushLocked(map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel": channel,
		"channel_type": "channel", "ts": evTS, "event_ts": evTS, "message": now, "previous_message": prev})
}

// userMessage pushes a person's message of type typ and remembers it; the
// ts is the fake's old scheme, a count and a fixed fraction.
func (s *Server) userMessage(typ, channel, threadTS, user, text string, frac int, extra map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ts := fmt.Sprintf("%d.%06d", 1700000000+s.seq, frac)
	s.said[channel+"/"+ts] = &said{user: user, text: text, thread: threadTS}
	ev := map[string]any{"type": typ, "user": user, "channel": channel, "ts": ts, "event_ts": ts, "text": text}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	for k, v := range extra {
		ev[k] = v
	}
	s.pushLocked(ev)
	return ts
}

// hook is an Events API endpoint the fake posts events to.
type hook struct{ url, secret string }

// DeliverTo sends events from now on to an Events API endpoint at url
// instead of the socket, signed with secret as Slack signs them. A delivery
// not answered 2xx within AckDeadline (3 s if unset) on the fake's clock is
// sent again after Retries, with X-Slack-Retry-Num and X-Slack-Retry-Reason.
func (s *Server) DeliverTo(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.hook = &hook{url, secret}
}

// postEvent posts one attempt of p to the hook.
func (s *Server) postEvent(p *pushed, attempt int, reason string) {
	s.mu.Lock()
	h, deadline, body := s.sock.hook, s.cfg.AckDeadline, must(json.Marshal(p.payload))
	s.mu.Unlock()
	if deadline == 0 {
		deadline = AckDeadline
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var late atomic.Bool
	stop := s.Clock.AfterFunc(deadline, func() { late.Store(true); cancel() })
	// The signature's time is the real one: verifiers check it against theirs.
	ts := fmt.Sprint(time.Now().Unix())
	mac := hmac.New(sha256.New, []byte(h.secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	if attempt > 0 {
		req.Header.Set("X-Slack-Retry-Num", fmt.Sprint(attempt))
		req.Header.Set("X-Slack-Retry-Reason", reason)
	}
	resp, err := http.DefaultClient.Do(req)
	stop()
	good := false
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		good = resp.StatusCode/100 == 2
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := attempt < s.cfg.DropAcks
	if dropped { // the answer was lost on the way: Slack's wait for it times out
		good = false
		late.Store(true)
	}
	ev, _ := p.payload["event"].(map[string]any)
	typ, _ := ev["type"].(string)
	s.sock.deliveries = append(s.sock.deliveries, Delivery{EventID: p.id, Type: typ, Attempt: attempt, Reason: reason,
		At: s.Clock.Now(), Acked: good && !late.Load(), Late: late.Load() && !dropped, Dropped: dropped})
	s.notifyLocked()
	if good && !late.Load() {
		p.acked = true
		return
	}
	if s.closed || attempt >= len(s.cfg.Retries) {
		return
	}
	why := "http_error"
	if late.Load() {
		why = "http_timeout"
	}
	if d := s.cfg.Retries[attempt]; d > 0 {
		s.Clock.AfterFunc(d, func() { go s.postEvent(p, attempt+1, why) })
	} else {
		go s.postEvent(p, attempt+1, why)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
