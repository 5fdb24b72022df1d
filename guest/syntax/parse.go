// parse.go holds the recursive-descent parser, bounded in nesting depth.

package syntax

import "fmt"

// MaxNesting bounds how deeply expressions and blocks may nest, so that no
// later stage (all of which recurse over the tree) can exhaust the Go stack.
const MaxNesting = 100

// Parse parses a prog: the body of its entry function.
func Parse(src []byte) (f *File, err error) {
	if len(src) > MaxSource {
		return nil, &Error{Pos: Pos{1, 1}, Msg: fmt.Sprintf("source is %d bytes, more than the limit of %d", len(src), MaxSource)}
	}
	p := &parser{sc: newScanner(src)}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			f, err = nil, p.err
		}
	}()
	p.next()
	body := &Block{Lbrace: Pos{1, 1}}
	body.Stmts = p.stmts(EOF)
	return &File{Body: body}, nil
}

type bailout struct{}

type parser struct {
	sc    *scanner
	tok   tokenValue
	depth int
	// noBrace is set while parsing the head of if, while and for, where a
	// "{" after an act tag opens the body, not the act's arguments.
	noBrace bool
	err     *Error
}

func (p *parser) next() {
	p.sc.next(&p.tok)
	if p.sc.err != nil {
		p.err = p.sc.err
		panic(bailout{})
	}
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.err = &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	panic(bailout{})
}

func (p *parser) describe() string {
	switch p.tok.tok {
	case SEMI:
		if p.tok.nl {
			return "newline"
		}
	case IDENT:
		return "identifier " + p.tok.raw
	case INT, FLOAT, STRING:
		return "literal " + p.tok.raw
	}
	return p.tok.tok.String()
}

func (p *parser) expect(t Token) Pos {
	if p.tok.tok != t {
		p.errorf(p.tok.pos, "got %s, want %s", p.describe(), t)
	}
	pos := p.tok.pos
	p.next()
	return pos
}

func (p *parser) enter(pos Pos) {
	p.depth++
	if p.depth > MaxNesting {
		p.errorf(pos, "nesting too deep (more than %d levels)", MaxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

// skipNewlines skips automatic semicolons, for lists spread over lines.
func (p *parser) skipNewlines() {
	for p.tok.tok == SEMI && p.tok.nl {
		p.next()
	}
}

func (p *parser) stmts(end Token) []Stmt {
	var list []Stmt
	for {
		for p.tok.tok == SEMI {
			p.next()
		}
		if p.tok.tok == end {
			return list
		}
		if p.tok.tok == EOF {
			p.errorf(p.tok.pos, "unexpected end of file, want %s", end)
		}
		st := p.stmt()
		list = append(list, st)
		if p.tok.tok != end && !endsWithBlock(st) {
			if p.tok.tok != SEMI {
				p.errorf(p.tok.pos, "got %s after statement, want newline or ;", p.describe())
			}
		}
	}
}

// endsWithBlock reports whether s ends with "}", after which the next
// statement may follow on the same line.
func endsWithBlock(s Stmt) bool {
	switch s.(type) {
	case *IfStmt, *WhileStmt, *ForStmt, *TryStmt, *FnDecl:
		return true
	}
	return false
}

func (p *parser) block() *Block {
	pos := p.tok.pos
	p.enter(pos)
	saved := p.noBrace
	p.noBrace = false
	p.expect(LBRACE)
	b := &Block{Lbrace: pos, Stmts: p.stmts(RBRACE)}
	p.expect(RBRACE)
	p.noBrace = saved
	p.leave()
	return b
}

func (p *parser) ident() *Ident {
	if p.tok.tok != IDENT {
		p.errorf(p.tok.pos, "got %s, want identifier", p.describe())
	}
	id := &Ident{Pos: p.tok.pos, Name: p.tok.raw}
	p.next()
	return id
}

func (p *parser) stmt() Stmt {
	pos := p.tok.pos
	switch p.tok.tok {
	case IDENT:
		// "import" is a name like any other unless a string follows it.
		if p.tok.raw == "import" && p.sc.peekStringAfterIdent() {
			return p.importStmt()
		}
	case FN:
		if p.sc.peekIdentAfterFn() {
			p.next()
			name := p.ident()
			fn := p.function(pos, name.Name)
			return &FnDecl{Name: name, Func: fn}
		}
	case LET, VAR:
		let := p.tok.tok == LET
		p.next()
		name := p.ident()
		p.expect(ASSIGN)
		return &VarDecl{Pos: pos, Let: let, Name: name, Value: p.expr()}
	case IF:
		return p.ifStmt()
	case WHILE:
		p.next()
		cond := p.headExpr()
		return &WhileStmt{Pos: pos, Cond: cond, Body: p.block()}
	case FOR:
		p.next()
		key := p.ident()
		var val *Ident
		if p.tok.tok == COMMA {
			p.next()
			val = p.ident()
		}
		p.expect(IN)
		x := p.headExpr()
		return &ForStmt{Pos: pos, Key: key, Val: val, X: x, Body: p.block()}
	case TRY:
		p.next()
		body := p.block()
		if p.tok.tok != CATCH {
			p.errorf(p.tok.pos, "got %s, want catch", p.describe())
		}
		p.next()
		name := p.ident()
		return &TryStmt{Pos: pos, Body: body, Name: name, Catch: p.block()}
	case RETURN:
		p.next()
		var x Expr
		if p.tok.tok != SEMI && p.tok.tok != RBRACE && p.tok.tok != EOF {
			x = p.expr()
		}
		return &ReturnStmt{Pos: pos, X: x}
	case BREAK, CONTINUE:
		t := p.tok.tok
		p.next()
		return &BranchStmt{Pos: pos, Token: t}
	case THROW:
		p.next()
		return &ThrowStmt{Pos: pos, X: p.expr()}
	case LBRACE:
		p.errorf(pos, "a block cannot stand alone; a map literal is not a statement")
	case ELSE:
		p.errorf(pos, "else must be on the same line as the } before it")
	}
	x := p.expr()
	switch p.tok.tok {
	case ASSIGN, PLUSEQ, MINUSEQ, STAREQ, SLASHEQ, PERCENTEQ:
		op, opPos := p.tok.tok, p.tok.pos
		switch x.(type) {
		case *Ident, *IndexExpr, *DotExpr:
		default:
			p.errorf(opPos, "cannot assign to this expression")
		}
		p.next()
		return &AssignStmt{OpPos: opPos, Op: op, LHS: x, RHS: p.expr()}
	}
	return &ExprStmt{X: x}
}

// importStmt parses import "PATH" as NAME, at the top level only.
func (p *parser) importStmt() *ImportStmt {
	pos := p.tok.pos
	if p.depth > 0 {
		p.errorf(pos, "import only at the top level of a file")
	}
	p.next()
	path, pathPos := p.tok.str, p.tok.pos
	if path == "" {
		p.errorf(pathPos, "empty import path")
	}
	p.next()
	if p.tok.tok != IDENT || p.tok.raw != "as" {
		p.errorf(p.tok.pos, "got %s, want as NAME after the import path", p.describe())
	}
	p.next()
	return &ImportStmt{Pos: pos, Path: path, PathPos: pathPos, Name: p.ident()}
}

// ifStmt parses an if statement; an else-if chain is flat in the source,
// so it is parsed in a loop and adds one nesting level however long it is.
func (p *parser) ifStmt() *IfStmt {
	pos := p.expect(IF)
	p.enter(pos)
	defer p.leave()
	first := &IfStmt{Pos: pos, Cond: p.headExpr(), Then: p.block()}
	for s := first; p.tok.tok == ELSE; {
		p.next()
		if p.tok.tok != IF {
			s.Else = p.block()
			break
		}
		next := &IfStmt{Pos: p.expect(IF)}
		next.Cond = p.headExpr()
		next.Then = p.block()
		s.Else, s = next, next
	}
	return first
}

// headExpr parses the condition or sequence of if, while or for.
func (p *parser) headExpr() Expr {
	saved := p.noBrace
	p.noBrace = true
	x := p.expr()
	p.noBrace = saved
	return x
}

func (p *parser) function(pos Pos, name string) *Function {
	p.expect(LPAREN)
	var params []*Ident
	p.skipNewlines()
	for p.tok.tok != RPAREN {
		params = append(params, p.ident())
		p.skipNewlines()
		if p.tok.tok != COMMA {
			break
		}
		p.next()
		p.skipNewlines()
	}
	p.expect(RPAREN)
	return &Function{Pos: pos, Name: name, Params: params, Body: p.block()}
}

// Operator precedence, lowest first.
func precedence(t Token) int {
	switch t {
	case OROR:
		return 1
	case ANDAND:
		return 2
	case EQL, NEQ, LT, LE, GT, GE:
		return 3
	case PLUS, MINUS:
		return 4
	case STAR, SLASH, PERCENT:
		return 5
	}
	return 0
}

func (p *parser) expr() Expr { return p.binary(1) }

func (p *parser) binary(prec int) Expr {
	x := p.unary()
	for {
		q := precedence(p.tok.tok)
		if q < prec {
			return x
		}
		op, pos := p.tok.tok, p.tok.pos
		p.next()
		p.enter(pos)
		y := p.binary(q + 1)
		p.leave()
		if q == 3 {
			// Comparisons do not chain: a < b < c is an error.
			if precedence(p.tok.tok) == 3 {
				p.errorf(p.tok.pos, "comparison operators do not chain; use &&")
			}
		}
		x = &BinaryExpr{OpPos: pos, Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	pos := p.tok.pos
	switch p.tok.tok {
	case MINUS, NOT:
		op := p.tok.tok
		p.next()
		if op == MINUS && p.tok.tok == INT && p.tok.minInt {
			lit := &Literal{Pos: pos, Token: INT, Int: p.tok.i}
			p.next()
			return lit
		}
		p.enter(pos)
		x := p.unary()
		p.leave()
		// Fold -literal so that the most negative int can be written.
		if lit, ok := x.(*Literal); ok && op == MINUS {
			switch lit.Token {
			case INT:
				if lit.Int == -1<<63 {
					break // -(-9223372036854775808) overflows at run time
				}
				lit.Int = -lit.Int
				lit.Pos = pos
				return lit
			case FLOAT:
				lit.Float = -lit.Float
				lit.Pos = pos
				return lit
			}
		}
		return &UnaryExpr{Pos: pos, Op: op, X: x}
	case ACT:
		p.next()
		if p.tok.tok != STRING {
			p.errorf(p.tok.pos, "got %s, want the act's tag as a string literal", p.describe())
		}
		a := &ActExpr{Pos: pos, Tag: p.tok.str}
		p.next()
		if p.tok.tok == LBRACE && p.noBrace {
			return a
		}
		switch p.tok.tok {
		case LBRACE, LPAREN, LBRACK, IDENT, STRING, INT, FLOAT, TRUE, FALSE, NIL, FN:
			p.enter(pos)
			a.Args = p.postfix()
			p.leave()
		}
		return a
	case AWAIT:
		p.next()
		p.enter(pos)
		sel := p.postfix()
		p.leave()
		return &AwaitExpr{Pos: pos, Selector: sel}
	}
	return p.postfix()
}

func (p *parser) postfix() Expr {
	x := p.operand()
	for {
		switch p.tok.tok {
		case LPAREN:
			pos := p.tok.pos
			p.enter(pos)
			x = &CallExpr{Lparen: pos, Fn: x, Args: p.exprList(LPAREN, RPAREN)}
			p.leave()
		case LBRACK:
			pos := p.tok.pos
			p.next()
			p.enter(pos)
			i := p.nested()
			p.leave()
			p.expect(RBRACK)
			x = &IndexExpr{Lbrack: pos, X: x, Index: i}
		case DOT:
			pos := p.tok.pos
			p.next()
			name := p.ident()
			x = &DotExpr{Dot: pos, X: x, Name: name.Name}
		default:
			return x
		}
	}
}

// nested parses an expression inside brackets, where braces are maps again.
func (p *parser) nested() Expr {
	saved := p.noBrace
	p.noBrace = false
	p.skipNewlines()
	x := p.expr()
	p.skipNewlines()
	p.noBrace = saved
	return x
}

func (p *parser) exprList(open, close Token) []Expr {
	p.expect(open)
	var list []Expr
	p.skipNewlines()
	for p.tok.tok != close {
		list = append(list, p.nested())
		if p.tok.tok != COMMA {
			break
		}
		p.next()
		p.skipNewlines()
	}
	p.skipNewlines()
	p.expect(close)
	return list
}

func (p *parser) operand() Expr {
	pos := p.tok.pos
	switch p.tok.tok {
	case IDENT:
		return p.ident()
	case INT:
		if p.tok.minInt {
			p.errorf(pos, "integer literal %s overflows int64", p.tok.raw)
		}
		x := &Literal{Pos: pos, Token: INT, Int: p.tok.i}
		p.next()
		return x
	case FLOAT:
		x := &Literal{Pos: pos, Token: FLOAT, Float: p.tok.f}
		p.next()
		return x
	case STRING:
		x := &Literal{Pos: pos, Token: STRING, Str: p.tok.str}
		p.next()
		return x
	case TRUE, FALSE, NIL:
		x := &Literal{Pos: pos, Token: p.tok.tok}
		p.next()
		return x
	case LPAREN:
		p.next()
		p.enter(pos)
		x := p.nested()
		p.leave()
		p.expect(RPAREN)
		return x
	case LBRACK:
		p.enter(pos)
		x := &ListExpr{Lbrack: pos, Elems: p.exprList(LBRACK, RBRACK)}
		p.leave()
		return x
	case LBRACE:
		p.enter(pos)
		x := p.mapLit()
		p.leave()
		return x
	case FN:
		p.next()
		p.enter(pos)
		fn := p.function(pos, "")
		p.leave()
		return &FuncLit{Func: fn}
	}
	p.errorf(pos, "got %s, want an expression", p.describe())
	return nil
}

func (p *parser) mapLit() *MapExpr {
	m := &MapExpr{Lbrace: p.expect(LBRACE)}
	saved := p.noBrace
	p.noBrace = false
	p.skipNewlines()
	for p.tok.tok != RBRACE {
		var key Expr
		if p.tok.tok == IDENT {
			// A bare name is a string key, as in JSON with the quotes dropped.
			key = &Literal{Pos: p.tok.pos, Token: STRING, Str: p.tok.raw}
			p.next()
		} else {
			key = p.expr()
		}
		p.expect(COLON)
		p.skipNewlines()
		val := p.expr()
		m.Entries = append(m.Entries, MapEntry{Key: key, Value: val})
		p.skipNewlines()
		if p.tok.tok != COMMA {
			break
		}
		p.next()
		p.skipNewlines()
	}
	p.expect(RBRACE)
	p.noBrace = saved
	return m
}

// peekStringAfterIdent reports whether the identifier just scanned is
// followed, on its line, by a string literal.
func (s *scanner) peekStringAfterIdent() bool {
	i := s.off
	for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	return i < len(s.src) && (s.src[i] == '"' || s.src[i] == '`')
}

// peekIdentAfterFn reports whether the "fn" just scanned is followed by a
// name (a declaration) rather than "(" (a literal).
func (s *scanner) peekIdentAfterFn() bool {
	i := s.off
	for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	return i < len(s.src) && isLetter(s.src[i])
}
