// events_test.go: the Events API endpoint checks signatures, answers the
// URL verification, acknowledges at once and drops a repeated delivery.

package dispatch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func signed(t *testing.T, url, secret, body string) *http.Response {
	ts := fmt.Sprint(time.Now().Unix())
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestEventsAPI(t *testing.T) {
	fake, d, _ := setup(t)
	d.cfg.SigningSecret = "shh"
	h, err := d.EventsHandler(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// A bad signature is refused.
	if resp := signed(t, srv.URL, "wrong", `{"type":"url_verification","challenge":"abc"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", resp.StatusCode)
	}
	resp := signed(t, srv.URL, "shh", `{"type":"url_verification","token":"x","challenge":"abc123"}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "abc123") {
		t.Fatalf("challenge: %d %q", resp.StatusCode, b)
	}
	mention := `{"type":"event_callback","token":"x","team_id":"T1","api_app_id":"A1","event_id":"Ev42","event_time":1,
"event":{"type":"app_mention","user":"U1","channel":"C1","ts":"1700000001.000100","event_ts":"1700000001.000100","text":"<@UBOT> agent"}}`
	before := len(fake.Messages())
	for i := 0; i < 3; i++ { // Slack delivers again when an ack is slow
		start := time.Now()
		if resp := signed(t, srv.URL, "shh", mention); resp.StatusCode != 200 || time.Since(start) > 3*time.Second {
			t.Fatalf("ack: %d after %s", resp.StatusCode, time.Since(start))
		}
	}
	d.Wait()
	if n := len(fake.Messages()) - before; n != 1 {
		t.Fatalf("%d cards for one event delivered three times", n)
	}
}
