// transport.go holds how Slack's events arrive: over Socket Mode or the
// Events API, each acked at once and handed to handle, which routes a
// mention to a run and a thread reply to the run it waits in.

package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// handle routes one Events API event; it reports whether it was new.
func (d *Dispatcher) handle(ctx context.Context, id string, ev slackevents.EventsAPIEvent) bool {
	if !d.first("event:" + id) {
		return false // Slack delivers again after a slow ack
	}
	switch inner := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		// One message mentioning the bot in a thread comes twice: as a
		// mention and as a message. It is taken once.
		if inner.BotID != "" || d.isBot(inner.User) || !d.first("msg:"+inner.Channel+"/"+inner.TimeStamp) {
			return true
		}
		if inner.ThreadTimeStamp != "" && d.known(inner.Channel, inner.ThreadTimeStamp) {
			d.spawn(func() { d.Reply(ctx, inner.Channel, inner.ThreadTimeStamp, inner.User, inner.Text) })
			return true
		}
		thread := inner.TimeStamp
		if inner.ThreadTimeStamp != "" {
			thread = inner.ThreadTimeStamp // a mention inside a thread: replies come under its parent
		}
		d.spawn(func() { d.Mention(ctx, inner.Channel, inner.User, inner.Text, thread) })
	case *slackevents.MessageEvent:
		// Only a reply in a run's thread is a message's business: a mention
		// elsewhere comes again as an app_mention, which starts its run.
		if inner.ThreadTimeStamp == "" || !userSubtypes[inner.SubType] || inner.BotID != "" || d.isBot(inner.User) ||
			!d.known(inner.Channel, inner.ThreadTimeStamp) || !d.first("msg:"+inner.Channel+"/"+inner.TimeStamp) {
			return true
		}
		var files []string
		if inner.Message != nil {
			for _, f := range inner.Message.Files {
				files = append(files, cmp.Or(f.Name, f.Title, f.ID))
			}
		}
		d.spawn(func() { d.reply(ctx, inner.Channel, inner.ThreadTimeStamp, inner.User, inner.Text, files) })
	}
	return true
}

// RunSocketMode receives events over Socket Mode until ctx ends. It
// checks the set-up first (Check) and returns its *SetupError; one met
// later (the app token revoked, say) ends it with a *SetupError too.
// Connection failures that may pass are retried with backoff and logged.
func (d *Dispatcher) RunSocketMode(ctx context.Context) error {
	if err := d.checkFirst(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	go d.checkLater(ctx)
	if err := d.Recover(ctx); err != nil {
		return err
	}
	go d.heartbeat(ctx)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := socketmode.New(d.api, d.cfg.SocketOptions...)
	fatal := make(chan error, 1)
	go func() {
		for {
			select {
			case <-cctx.Done():
				return
			case evt, ok := <-client.Events:
				if !ok {
					return
				}
				if err := d.socketEvent(cctx, client, evt); err != nil {
					select {
					case fatal <- err:
					default:
					}
					cancel()
				}
			}
		}
	}()
	err := client.RunContext(cctx)
	select {
	case err := <-fatal:
		d.logError(err.Error())
		return err
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	if se := (*SetupError)(nil); errors.As(classify("apps.connections.open", true, err), &se) {
		d.logError(se.Error())
		return se
	}
	return err
}

// socketEvent handles one event of the Socket Mode client: an Events API
// envelope is acknowledged at once and handled; the client's own events
// are logged, with the fix when there is one. It returns a *SetupError
// when the connection cannot work until a person fixes it (slack-go would
// retry it for ever).
func (d *Dispatcher) socketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) error {
	switch evt.Type {
	case socketmode.EventTypeConnected:
		n := 0
		if c, ok := evt.Data.(*socketmode.ConnectedEvent); ok {
			n = c.ConnectionCount
		}
		if n == 0 {
			d.info("slack: connected over Socket Mode")
		} else {
			d.info("slack: reconnected over Socket Mode", "reconnections", n)
		}
	case socketmode.EventTypeHello:
		if evt.Request != nil && evt.Request.NumConnections > 1 {
			d.warn("slack: this app has more than one Socket Mode connection: Slack splits its events between them, "+
				"so a reply may go to a process that does not know its thread. Run one runehost serve --slack per app token",
				"connections", evt.Request.NumConnections)
		}
	case socketmode.EventTypeConnectionError:
		ce, ok := evt.Data.(*slack.ConnectionErrorEvent)
		if !ok || ce.ErrorObj == nil {
			return nil
		}
		if se := (*SetupError)(nil); errors.As(classify("apps.connections.open", true, ce.ErrorObj), &se) {
			return se
		}
		if ctx.Err() == nil {
			d.warn("slack: the Socket Mode connection failed; retrying", "err", ce.ErrorObj, "attempt", ce.Attempt, "in", ce.Backoff.String())
		}
	case socketmode.EventTypeInvalidAuth:
		return &SetupError{Call: "apps.connections.open", Code: "invalid_auth", Fix: fixAppRefused}
	case socketmode.EventTypeDisconnect:
		reason := ""
		if evt.Request != nil {
			reason = evt.Request.Reason
		}
		d.info("slack: Slack is refreshing the Socket Mode connection; reconnecting", "reason", reason)
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		d.warn("slack: Socket Mode: "+string(evt.Type), "err", fmt.Sprint(evt.Data))
	case socketmode.EventTypeEventsAPI:
		if evt.Request == nil {
			return nil
		}
		client.Ack(*evt.Request) // at once: Slack retries a slow ack
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok {
			return nil
		}
		id := ""
		if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
			id = cb.EventID
		}
		d.handle(ctx, id, ev)
	}
	return nil
}

// EventsHandler serves the Events API: it checks each request's signature,
// answers a URL verification, acknowledges an event at once (Slack wants an
// answer within 3 s) and handles it after, dropping a delivery it has seen.
// It checks the set-up first (Check) and returns its *SetupError, and
// takes up the runs a previous process left (Recover).
func (d *Dispatcher) EventsHandler(ctx context.Context) (http.Handler, error) {
	if err := d.checkFirst(ctx); err != nil {
		return nil, err
	}
	go d.checkLater(ctx)
	if err := d.Recover(ctx); err != nil {
		return nil, err
	}
	go d.heartbeat(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		sv, err := slack.NewSecretsVerifier(r.Header, d.cfg.SigningSecret)
		if err == nil {
			sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			d.badSignature(r)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		if ev.Type == slackevents.URLVerification {
			var ch slackevents.ChallengeResponse
			if json.Unmarshal(body, &ch) != nil {
				http.Error(w, "bad challenge", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, ch.Challenge)
			d.info("slack: Slack verified the Events API request URL", "path", r.URL.Path)
			return
		}
		id := ""
		if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
			id = cb.EventID
		}
		w.WriteHeader(http.StatusOK)
		d.handle(ctx, id, ev)
	}), nil
}

// badSignature logs a request refused for its signature, once a minute at
// most (anyone may post to the URL).
func (d *Dispatcher) badSignature(r *http.Request) {
	d.mu.Lock()
	now := time.Now()
	quiet := now.Sub(d.badSig) < time.Minute
	if !quiet {
		d.badSig = now
	}
	d.mu.Unlock()
	if !quiet {
		d.warn("slack: an Events API request with a bad signature was refused: if it came from Slack, "+
			"SLACK_SIGNING_SECRET is not the app's Signing Secret (Basic Information → App Credentials)", "path", r.URL.Path)
	}
}
