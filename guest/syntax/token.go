// Package syntax scans and parses Rune source into an abstract syntax tree.
package syntax

import "fmt"

// Token is a lexical token kind.
type Token uint8

// The token kinds.
const (
	EOF Token = iota
	IDENT
	INT
	FLOAT
	STRING
	SEMI // ";" or an automatic semicolon at a line end

	// operators and punctuation
	PLUS      // +
	MINUS     // -
	STAR      // *
	SLASH     // /
	PERCENT   // %
	EQL       // ==
	NEQ       // !=
	LT        // <
	LE        // <=
	GT        // >
	GE        // >=
	NOT       // !
	ANDAND    // &&
	OROR      // ||
	ASSIGN    // =
	PLUSEQ    // +=
	MINUSEQ   // -=
	STAREQ    // *=
	SLASHEQ   // /=
	PERCENTEQ // %=
	LPAREN    // (
	RPAREN    // )
	LBRACK    // [
	RBRACK    // ]
	LBRACE    // {
	RBRACE    // }
	COMMA     // ,
	COLON     // :
	DOT       // .

	// keywords
	keywordsStart
	FN
	LET
	VAR
	IF
	ELSE
	WHILE
	FOR
	IN
	RETURN
	BREAK
	CONTINUE
	TRY
	CATCH
	THROW
	ACT
	AWAIT
	TRUE
	FALSE
	NIL
	keywordsEnd
)

var tokenNames = [...]string{
	EOF: "end of file", IDENT: "identifier", INT: "int literal", FLOAT: "float literal",
	STRING: "string literal", SEMI: ";",
	PLUS: "+", MINUS: "-", STAR: "*", SLASH: "/", PERCENT: "%",
	EQL: "==", NEQ: "!=", LT: "<", LE: "<=", GT: ">", GE: ">=", NOT: "!",
	ANDAND: "&&", OROR: "||", ASSIGN: "=", PLUSEQ: "+=", MINUSEQ: "-=",
	STAREQ: "*=", SLASHEQ: "/=", PERCENTEQ: "%=",
	LPAREN: "(", RPAREN: ")", LBRACK: "[", RBRACK: "]", LBRACE: "{", RBRACE: "}",
	COMMA: ",", COLON: ":", DOT: ".",
	FN: "fn", LET: "let", VAR: "var", IF: "if", ELSE: "else", WHILE: "while",
	FOR: "for", IN: "in", RETURN: "return", BREAK: "break", CONTINUE: "continue",
	TRY: "try", CATCH: "catch", THROW: "throw", ACT: "act", AWAIT: "await",
	TRUE: "true", FALSE: "false", NIL: "nil",
}

func (t Token) String() string {
	if int(t) < len(tokenNames) && tokenNames[t] != "" {
		return tokenNames[t]
	}
	return fmt.Sprintf("token(%d)", t)
}

var keywords = func() map[string]Token {
	m := make(map[string]Token)
	for t := keywordsStart + 1; t < keywordsEnd; t++ {
		m[tokenNames[t]] = t
	}
	return m
}()

// Pos is a source position: 1-based line and column (in bytes).
type Pos struct {
	Line, Col int32
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Error is a syntax or resolution error at a position.
type Error struct {
	File string // the module's name; "" for the main file
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}
