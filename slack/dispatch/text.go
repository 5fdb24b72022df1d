// text.go reads what a person typed out of Slack's encoding of a message:
// links become the label they saw, entities their characters, and a
// command splits at the first whitespace, a newline included.

package dispatch

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// linkRE is Slack's markup of a link: <url> or <url|label>, url having a
// scheme (http, https, mailto, tel...). Mentions (<@U…>), channels (<#C…>)
// and specials (<!here>) have none, and stay.
var linkRE = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.-]*:[^|>]*)(?:\|([^>]*))?>`)

// leadingMentionRE is a mention at the start of a text.
var leadingMentionRE = regexp.MustCompile(`^\s*<@[A-Z0-9]+(?:\|[^>]*)?>`)

// entities are the three characters Slack encodes in a message's text.
var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// typed undoes Slack's encoding of a message's text, giving back what the
// person typed: the bot's own mention goes (bot "" : a leading mention);
// a link becomes its label when it has one (Slack turns a typed a@b.co into
// <mailto:a@b.co|a@b.co> and example.com into <http://example.com|example.com>),
// else its URL; &lt; &gt; &amp; become their characters. Other mentions
// stay as they are.
func typed(text, bot string) string {
	if bot != "" {
		text = strings.ReplaceAll(text, "<@"+bot+">", "")
	} else {
		text = leadingMentionRE.ReplaceAllString(text, "")
	}
	text = linkRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := linkRE.FindStringSubmatch(m)
		if sub[2] != "" {
			return sub[2]
		}
		return sub[1]
	})
	return strings.TrimSpace(entities.Replace(text))
}

// command splits a text into its first word and the rest, at the first
// whitespace of any kind: `agent\n{"a":1}` is agent and {"a":1}.
func command(text string) (first, rest string) {
	text = strings.TrimSpace(text)
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return text, ""
	}
	return text[:i], strings.TrimSpace(text[i:])
}

// progNameRE is a prog name as a mention may give it.
var progNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// EchoMax bounds what a reply echoes of a word that is not a prog name.
const EchoMax = 40

// echo is a word quoted for a reply, cut to EchoMax characters.
func echo(word string) string {
	if utf8.RuneCountInString(word) > EchoMax {
		r := []rune(word)
		word = string(r[:EchoMax]) + "…"
	}
	return "“" + word + "”"
}

// usage is the reply to a mention that names no prog.
const usage = "mention me with a prog and its input: @runehost NAME [JSON or text]"
