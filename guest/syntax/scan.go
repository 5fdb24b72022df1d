// scan.go holds the scanner: source bytes to tokens, with automatic semicolons.

package syntax

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSource is the largest source accepted, in bytes.
const MaxSource = 1 << 20

type scanner struct {
	src  []byte
	off  int // offset of the next unread byte
	line int32
	col  int32 // column of src[off]

	// semi is set when a newline or EOF after the last token inserts a ";".
	semi bool
	err  *Error
}

// tokenValue is one scanned token.
type tokenValue struct {
	tok Token
	pos Pos
	raw string // identifier name or literal text
	str string // decoded string literal
	i   int64
	f   float64
	nl  bool // an automatic semicolon (newline or EOF)
	// minInt marks the literal 9223372036854775808, which is only valid
	// negated: -9223372036854775808 is the most negative int.
	minInt bool
}

func newScanner(src []byte) *scanner {
	return &scanner{src: src, line: 1, col: 1}
}

func (s *scanner) errorf(pos Pos, format string, args ...any) {
	if s.err == nil {
		s.err = &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
}

func (s *scanner) pos() Pos { return Pos{s.line, s.col} }

func (s *scanner) peekByte(k int) byte {
	if s.off+k < len(s.src) {
		return s.src[s.off+k]
	}
	return 0
}

func (s *scanner) advance() {
	if s.src[s.off] == '\n' {
		s.line++
		s.col = 1
	} else {
		s.col++
	}
	s.off++
}

// next scans the next token into tv.
func (s *scanner) next(tv *tokenValue) {
	*tv = tokenValue{}
	// Skip white space and comments; a newline ends a statement when the
	// previous token could end one.
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c == '\n' {
			if s.semi {
				tv.tok, tv.pos, tv.nl = SEMI, s.pos(), true
				s.semi = false
				s.advance()
				return
			}
			s.advance()
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' {
			s.advance()
			continue
		}
		if c == '/' && s.peekByte(1) == '/' {
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.advance()
			}
			continue
		}
		break
	}
	tv.pos = s.pos()
	if s.off >= len(s.src) {
		if s.semi {
			tv.tok, tv.nl = SEMI, true
			s.semi = false
			return
		}
		tv.tok = EOF
		return
	}
	c := s.src[s.off]
	s.semi = false
	switch {
	case isLetter(c):
		start := s.off
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.advance()
		}
		tv.raw = string(s.src[start:s.off])
		if k, ok := keywords[tv.raw]; ok {
			tv.tok = k
			switch k {
			case RETURN, BREAK, CONTINUE, TRUE, FALSE, NIL:
				s.semi = true
			}
			return
		}
		tv.tok = IDENT
		s.semi = true
		return
	case isDigit(c) || (c == '.' && isDigit(s.peekByte(1))):
		s.number(tv)
		s.semi = true
		return
	case c == '"':
		s.quoted(tv)
		s.semi = true
		return
	case c == '`':
		s.raw(tv)
		s.semi = true
		return
	}
	s.advance()
	two := func(next byte, yes, no Token) Token {
		if s.off < len(s.src) && s.src[s.off] == next {
			s.advance()
			return yes
		}
		return no
	}
	switch c {
	case '+':
		tv.tok = two('=', PLUSEQ, PLUS)
	case '-':
		tv.tok = two('=', MINUSEQ, MINUS)
	case '*':
		tv.tok = two('=', STAREQ, STAR)
	case '/':
		tv.tok = two('=', SLASHEQ, SLASH)
	case '%':
		tv.tok = two('=', PERCENTEQ, PERCENT)
	case '=':
		tv.tok = two('=', EQL, ASSIGN)
	case '!':
		tv.tok = two('=', NEQ, NOT)
	case '<':
		tv.tok = two('=', LE, LT)
	case '>':
		tv.tok = two('=', GE, GT)
	case '&':
		tv.tok = two('&', ANDAND, EOF)
	case '|':
		tv.tok = two('|', OROR, EOF)
	case '(':
		tv.tok = LPAREN
	case ')':
		tv.tok = RPAREN
		s.semi = true
	case '[':
		tv.tok = LBRACK
	case ']':
		tv.tok = RBRACK
		s.semi = true
	case '{':
		tv.tok = LBRACE
	case '}':
		tv.tok = RBRACE
		s.semi = true
	case ',':
		tv.tok = COMMA
	case ';':
		tv.tok = SEMI
	case ':':
		tv.tok = COLON
	case '.':
		tv.tok = DOT
	default:
		tv.tok = EOF
	}
	if tv.tok == EOF {
		r, _ := utf8.DecodeRune(s.src[s.off-1:])
		s.errorf(tv.pos, "unexpected character %q", r)
	}
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func (s *scanner) number(tv *tokenValue) {
	start := s.off
	isFloat := false
	if s.src[s.off] == '0' && (s.peekByte(1) == 'x' || s.peekByte(1) == 'X') {
		s.advance()
		s.advance()
		for s.off < len(s.src) && (isHex(s.src[s.off]) || s.src[s.off] == '_') {
			s.advance()
		}
	} else {
		for s.off < len(s.src) && (isDigit(s.src[s.off]) || s.src[s.off] == '_') {
			s.advance()
		}
		if s.off < len(s.src) && s.src[s.off] == '.' && isDigit(s.peekByte(1)) {
			isFloat = true
			s.advance()
			for s.off < len(s.src) && (isDigit(s.src[s.off]) || s.src[s.off] == '_') {
				s.advance()
			}
		}
		if c := s.peekByte(0); c == 'e' || c == 'E' {
			isFloat = true
			s.advance()
			if c := s.peekByte(0); c == '+' || c == '-' {
				s.advance()
			}
			for s.off < len(s.src) && isDigit(s.src[s.off]) {
				s.advance()
			}
		}
	}
	if s.off < len(s.src) && (isLetter(s.src[s.off]) || s.src[s.off] == '.') {
		s.errorf(tv.pos, "malformed number %s", string(s.src[start:s.off+1]))
		return
	}
	tv.raw = string(s.src[start:s.off])
	if strings.Contains(tv.raw, "__") || strings.HasSuffix(tv.raw, "_") || strings.Contains(tv.raw, "_.") || strings.Contains(tv.raw, "._") || strings.HasPrefix(strings.ToLower(tv.raw), "0x_") {
		s.errorf(tv.pos, "malformed number %s: _ must separate digits", tv.raw)
		return
	}
	if isFloat {
		f, err := strconv.ParseFloat(tv.raw, 64)
		if err != nil {
			s.errorf(tv.pos, "malformed float literal %s", tv.raw)
			return
		}
		tv.tok, tv.f = FLOAT, f
		return
	}
	// Decimal unless 0x: a leading zero does not mean octal.
	digits, base := strings.ReplaceAll(tv.raw, "_", ""), 10
	if len(digits) > 1 && (digits[1] == 'x' || digits[1] == 'X') {
		digits, base = digits[2:], 16
	}
	i, err := strconv.ParseInt(digits, base, 64)
	if err != nil {
		if u, _ := strconv.ParseUint(digits, base, 64); u == 1<<63 {
			// Only valid after a unary minus; the parser checks.
			tv.tok, tv.i, tv.minInt = INT, -1<<63, true
			return
		}
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			s.errorf(tv.pos, "integer literal %s overflows int64", tv.raw)
		} else {
			s.errorf(tv.pos, "malformed int literal %s", tv.raw)
		}
		return
	}
	tv.tok, tv.i = INT, i
}

func (s *scanner) quoted(tv *tokenValue) {
	start := s.off
	s.advance() // opening quote
	var b strings.Builder
	for {
		if s.off >= len(s.src) || s.src[s.off] == '\n' {
			s.errorf(tv.pos, "unterminated string literal")
			return
		}
		c := s.src[s.off]
		if c == '"' {
			s.advance()
			break
		}
		if c != '\\' {
			s.advance()
			b.WriteByte(c)
			continue
		}
		epos := s.pos()
		s.advance()
		if s.off >= len(s.src) {
			s.errorf(tv.pos, "unterminated string literal")
			return
		}
		e := s.src[s.off]
		s.advance()
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\', '"':
			b.WriteByte(e)
		case 'u':
			// \u{hex}
			if s.peekByte(0) != '{' {
				s.errorf(epos, `invalid escape: want \u{hex}`)
				return
			}
			s.advance()
			hs := s.off
			for s.off < len(s.src) && isHex(s.src[s.off]) && s.off-hs < 6 {
				s.advance()
			}
			hex := string(s.src[hs:s.off])
			if s.peekByte(0) != '}' || hex == "" {
				s.errorf(epos, `invalid escape: want \u{hex}`)
				return
			}
			s.advance()
			r, _ := strconv.ParseUint(hex, 16, 32)
			if r > utf8.MaxRune || (r >= 0xD800 && r < 0xE000) {
				s.errorf(epos, "invalid code point U+%s", hex)
				return
			}
			b.WriteRune(rune(r))
		default:
			s.errorf(epos, "unknown escape sequence \\%c", e)
			return
		}
	}
	tv.tok = STRING
	tv.raw = string(s.src[start:s.off])
	tv.str = b.String()
	if !utf8.ValidString(tv.str) {
		s.errorf(tv.pos, "string literal is not valid UTF-8")
	}
}

func (s *scanner) raw(tv *tokenValue) {
	s.advance() // opening backquote
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '`' {
		s.advance()
	}
	if s.off >= len(s.src) {
		s.errorf(tv.pos, "unterminated raw string literal")
		return
	}
	tv.str = strings.ReplaceAll(string(s.src[start:s.off]), "\r", "")
	s.advance()
	tv.tok = STRING
	tv.raw = "`" + tv.str + "`"
	if !utf8.ValidString(tv.str) {
		s.errorf(tv.pos, "string literal is not valid UTF-8")
	}
}
