// setup.go checks the Slack set-up before events are taken (the bot token
// with auth.test and its scopes, the app token with one
// apps.connections.open) and says what to fix: a set-up that cannot work
// until a person fixes it is a *SetupError, anything else is retried.

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// SetupError is a Slack set-up that cannot work until a person fixes it:
// a token of the wrong type, refused or revoked, or lacking a scope.
type SetupError struct {
	Call string // the Web API method that refused: auth.test, apps.connections.open
	Code string // Slack's error code (not_allowed_token_type, missing_scope, invalid_auth...)
	Fix  string // what to do, in words
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("slack: %s (%s: %s)", e.Fix, e.Call, e.Code)
}

// The fixes, one for each way a token can be wrong.
const (
	fixAppToken = "SLACK_APP_TOKEN must be an app-level token (xapp-…) with the connections:write scope: " +
		"create one under Basic Information → App-Level Tokens"
	fixAppRefused = "SLACK_APP_TOKEN is not accepted by Slack: create a new app-level token (xapp-…) with the " +
		"connections:write scope under Basic Information → App-Level Tokens"
	fixBotToken = "SLACK_BOT_TOKEN must be the app's bot token (xoxb-…): copy the Bot User OAuth Token " +
		"under OAuth & Permissions (install the app to the workspace first)"
	fixBotRefused = "SLACK_BOT_TOKEN is not accepted by Slack: copy the Bot User OAuth Token (xoxb-…) again " +
		"under OAuth & Permissions, reinstalling the app if it was removed"
)

// botScopes are the bot token's scopes the dispatcher needs; missing, the
// ones marked required make the set-up fail, the others are warned of.
var botScopes = []struct {
	scope    string
	required bool
	why      string
}{
	{"chat:write", true, "cards and replies cannot be posted"},
	{"app_mentions:read", true, "mentions of the app never arrive, so nothing starts a run"},
	{"channels:history", false, "replies in the threads of public channels will not reach their runs"},
	{"groups:history", false, "replies in the threads of private channels will not reach their runs"},
}

// Check checks the Slack set-up: the bot token (auth.test, and its scopes
// when Slack lists them) and, with an app token, that it opens Socket Mode
// connections (one apps.connections.open; the URL it gives is not used). It
// returns a *SetupError for a set-up that cannot work, having logged it.
// Slack out of reach, or busy, is retried a few times, logged, and then
// not held against the set-up: the dispatcher goes on and keeps trying.
// Once passed, Check does nothing.
func (d *Dispatcher) Check(ctx context.Context) error { return d.check(ctx, CheckAttempts) }

// checkFirst is Check, unless it has run already without finding a
// *SetupError (RunSocketMode and EventsHandler after a Check of their
// caller).
func (d *Dispatcher) checkFirst(ctx context.Context) error {
	d.checkMu.Lock()
	tried := d.tried
	d.checkMu.Unlock()
	if tried {
		return nil
	}
	return d.Check(ctx)
}

func (d *Dispatcher) check(ctx context.Context, attempts int) error {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	if d.checked {
		return nil
	}
	wait := checkWait
	for attempt := 1; ; attempt++ {
		err := d.checkOnce(ctx)
		if err == nil {
			d.checked, d.tried = true, true
			return nil
		}
		if se := (*SetupError)(nil); errors.As(err, &se) {
			d.logError(se.Error())
			return se
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= attempts {
			d.warn("slack: could not check the set-up; going on, retrying in the background", "err", err)
			d.tried = true
			return nil
		}
		d.warn("slack: checking the set-up failed; retrying", "err", err, "in", wait.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// CheckAttempts is how many times Check tries when Slack is out of reach.
const CheckAttempts = 3

// checkWait is the first wait between two tries of the check; it doubles.
var checkWait = time.Second

// checkTimeout bounds one call of the check.
const checkTimeout = 15 * time.Second

func (d *Dispatcher) checkOnce(ctx context.Context) error {
	if !strings.HasPrefix(d.cfg.BotToken, "xoxb-") {
		return &SetupError{Call: "auth.test", Code: "not_a_bot_token", Fix: fixBotToken}
	}
	if d.cfg.AppToken != "" && !strings.HasPrefix(d.cfg.AppToken, "xapp-") {
		return &SetupError{Call: "apps.connections.open", Code: "not_an_app_token", Fix: fixAppToken}
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	resp, err := d.api.AuthTestContext(cctx)
	if err != nil {
		return classify("auth.test", false, err)
	}
	d.mu.Lock()
	d.botUser, d.botName = resp.UserID, resp.User
	d.mu.Unlock()
	d.info("slack: the bot is signed in", "bot", "@"+resp.User, "user_id", resp.UserID, "team", resp.Team)
	if err := d.checkScopes(resp.Header); err != nil {
		return err
	}
	if d.cfg.AppToken == "" {
		return nil
	}
	if _, _, err := d.api.StartSocketModeContext(cctx); err != nil {
		return classify("apps.connections.open", true, err)
	}
	d.info("slack: the app token opens Socket Mode connections")
	return nil
}

// checkScopes checks the bot token's scopes, which Slack lists in the
// X-OAuth-Scopes header of every answer (a fake may not: then nothing is
// checked).
func (d *Dispatcher) checkScopes(h http.Header) error {
	list := h.Get("X-OAuth-Scopes")
	if list == "" {
		return nil
	}
	have := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		have[strings.TrimSpace(s)] = true
	}
	for _, s := range botScopes {
		if have[s.scope] {
			continue
		}
		fix := fmt.Sprintf("the bot token lacks the scope %s (%s): add it under OAuth & Permissions → Bot Token Scopes and reinstall the app", s.scope, s.why)
		if s.required {
			return &SetupError{Call: "auth.test", Code: "missing_scope", Fix: fix}
		}
		d.warn("slack: " + fix)
	}
	return nil
}

// temporaryCodes are Slack's error codes that go away by themselves.
var temporaryCodes = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true, "team_added_to_org": true,
}

// classify turns a set-up call's error into a *SetupError when a person
// must fix something, and returns it unchanged when it may pass by itself.
func classify(call string, app bool, err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch code := se.Err; {
		case temporaryCodes[code]:
			return err
		case code == "not_allowed_token_type":
			if app {
				return &SetupError{Call: call, Code: code, Fix: fixAppToken}
			}
			return &SetupError{Call: call, Code: code, Fix: fixBotToken}
		case code == "missing_scope":
			needed := se.Needed
			if needed == "" && app {
				needed = "connections:write"
			}
			if app {
				return &SetupError{Call: call, Code: code, Fix: fmt.Sprintf("SLACK_APP_TOKEN lacks the scope %s (it has %q): "+
					"create an app-level token with connections:write under Basic Information → App-Level Tokens", needed, se.Provided)}
			}
			return &SetupError{Call: call, Code: code, Fix: fmt.Sprintf("the bot token lacks the scope %s (it has %q): "+
				"add it under OAuth & Permissions → Bot Token Scopes and reinstall the app", needed, se.Provided)}
		case code == "invalid_auth" || code == "not_authed" || code == "token_revoked" || code == "token_expired" ||
			code == "account_inactive" || code == "app_uninstalled" || code == "team_disabled":
			if app {
				return &SetupError{Call: call, Code: code, Fix: fixAppRefused}
			}
			return &SetupError{Call: call, Code: code, Fix: fixBotRefused}
		default:
			return &SetupError{Call: call, Code: code, Fix: "Slack refused the call: see docs/slack.md, Setting up"}
		}
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		switch sc.Code {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return &SetupError{Call: call, Code: fmt.Sprintf("http_%d", sc.Code),
				Fix: fmt.Sprintf("Slack answered %s: is the token right (and SLACK_API_URL unset)?", http.StatusText(sc.Code))}
		}
	}
	return err // rate limited, Slack's 5xx, the network: it may pass
}

// postFix says what a refused chat.postMessage means and what to do.
func (d *Dispatcher) postFix(channel string, err error) string {
	var se slack.SlackErrorResponse
	var rl *slack.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return "Slack is rate limiting the app: mention it again in a minute"
	case !errors.As(err, &se):
		return "Slack could not be reached"
	}
	switch se.Err {
	case "not_in_channel", "channel_not_found":
		return fmt.Sprintf("invite the bot to the channel %s (/invite @%s)", channel, d.botHandle())
	case "missing_scope":
		return fmt.Sprintf("the bot token lacks the scope %s: add it under OAuth & Permissions → Bot Token Scopes and reinstall the app", se.Needed)
	case "is_archived", "channel_is_archived":
		return "the channel is archived"
	case "ratelimited", "rate_limited":
		return "Slack is rate limiting the app: mention it again in a minute"
	case "invalid_auth", "not_authed", "token_revoked", "account_inactive":
		return fixBotRefused
	}
	return "Slack refused it"
}

func (d *Dispatcher) botHandle() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.botName != "" {
		return d.botName
	}
	return "YOUR-APP"
}
