// ast.go holds the syntax tree node types.

package syntax

// A Node is a syntax tree node.
type Node interface{ Span() Pos }

// An Expr is an expression node.
type Expr interface {
	Node
	expr()
}

// A Stmt is a statement node.
type Stmt interface {
	Node
	stmt()
}

// File is a parsed prog: the body of its entry function.
type File struct {
	Body *Block
	// Module is set by the resolver: the entry function's locals and the globals.
	Module any
}

// Function is a function literal, a declared function, or the entry function.
type Function struct {
	Pos    Pos
	Name   string // "" for a literal
	Params []*Ident
	Body   *Block
	Info   any // set by the resolver
}

// Block is a braced statement list with its own scope.
type Block struct {
	Lbrace Pos
	Stmts  []Stmt
}

// Expressions.
type (
	// Ident is a name; the resolver sets Binding.
	Ident struct {
		Pos     Pos
		Name    string
		Binding any
	}
	// Literal is an int, float or string literal, or true, false, nil.
	Literal struct {
		Pos   Pos
		Token Token // INT, FLOAT, STRING, TRUE, FALSE, NIL
		Int   int64
		Float float64
		Str   string
	}
	// ListExpr is [a, b, ...].
	ListExpr struct {
		Lbrack Pos
		Elems  []Expr
	}
	// MapExpr is {k: v, ...}; a bare identifier key is a string literal.
	MapExpr struct {
		Lbrace  Pos
		Entries []MapEntry
	}
	// FuncLit is fn (params) { body } as an expression.
	FuncLit struct{ Func *Function }
	// UnaryExpr is -x or !x.
	UnaryExpr struct {
		Pos Pos
		Op  Token
		X   Expr
	}
	// BinaryExpr is x op y, including && and ||.
	BinaryExpr struct {
		OpPos Pos
		Op    Token
		X, Y  Expr
	}
	// CallExpr is f(args).
	CallExpr struct {
		Lparen Pos
		Fn     Expr
		Args   []Expr
	}
	// IndexExpr is x[i].
	IndexExpr struct {
		Lbrack Pos
		X      Expr
		Index  Expr
	}
	// DotExpr is x.name, the same as x["name"]. When X names an import,
	// the resolver sets Member: X then stands for the module's top-level
	// name, and the DotExpr itself compiles to nothing.
	DotExpr struct {
		Dot    Pos
		X      Expr
		Name   string
		Member bool
	}
	// ActExpr is act "tag" args: suspend for a host act.
	ActExpr struct {
		Pos  Pos
		Tag  string
		Args Expr // nil: no arguments
	}
	// AwaitExpr is await selector: suspend for a recorded event.
	AwaitExpr struct {
		Pos      Pos
		Selector Expr
	}
)

// MapEntry is one key: value pair of a map literal.
type MapEntry struct {
	Key, Value Expr
}

// Statements.
type (
	// FnDecl is fn name(params) { body }.
	FnDecl struct {
		Name *Ident
		Func *Function
	}
	// VarDecl is let name = x or var name = x.
	VarDecl struct {
		Pos   Pos
		Let   bool
		Name  *Ident
		Value Expr
	}
	// AssignStmt is lhs = rhs or lhs op= rhs.
	AssignStmt struct {
		OpPos Pos
		Op    Token // ASSIGN, PLUSEQ, ...
		LHS   Expr  // *Ident, *IndexExpr or *DotExpr
		RHS   Expr
	}
	// ExprStmt is an expression evaluated for its effect.
	ExprStmt struct{ X Expr }
	// IfStmt is if cond { } [else ...].
	IfStmt struct {
		Pos  Pos
		Cond Expr
		Then *Block
		Else Stmt // nil, *Block or *IfStmt
	}
	// WhileStmt is while cond { }.
	WhileStmt struct {
		Pos  Pos
		Cond Expr
		Body *Block
	}
	// ForStmt is for x in seq { } or for k, v in seq { }.
	ForStmt struct {
		Pos  Pos
		Key  *Ident // the only variable when Val is nil
		Val  *Ident
		X    Expr
		Body *Block
	}
	// TryStmt is try { } catch name { }.
	TryStmt struct {
		Pos   Pos
		Body  *Block
		Name  *Ident
		Catch *Block
	}
	// ReturnStmt is return [x].
	ReturnStmt struct {
		Pos Pos
		X   Expr // nil: return nil
	}
	// BranchStmt is break or continue.
	BranchStmt struct {
		Pos   Pos
		Token Token
	}
	// ThrowStmt is throw x.
	ThrowStmt struct {
		Pos Pos
		X   Expr
	}
	// ImportStmt is import "PATH" as NAME, at the top level of a file.
	ImportStmt struct {
		Pos     Pos
		Path    string
		PathPos Pos
		Name    *Ident
	}
)

func (x *Ident) Span() Pos      { return x.Pos }
func (x *Literal) Span() Pos    { return x.Pos }
func (x *ListExpr) Span() Pos   { return x.Lbrack }
func (x *MapExpr) Span() Pos    { return x.Lbrace }
func (x *FuncLit) Span() Pos    { return x.Func.Pos }
func (x *UnaryExpr) Span() Pos  { return x.Pos }
func (x *BinaryExpr) Span() Pos { return Leftmost(x).Span() }
func (x *CallExpr) Span() Pos   { return Leftmost(x).Span() }
func (x *IndexExpr) Span() Pos  { return Leftmost(x).Span() }
func (x *DotExpr) Span() Pos    { return Leftmost(x).Span() }

// Left is the left operand of a left-associative chain link (x op y,
// f(args), x[i], x.name), or nil for any other expression. A chain may be as
// long as the source allows, so every walk of the tree follows it in a loop
// (Spine), never by recursion: the sandbox's stack is small.
func Left(e Expr) Expr {
	switch e := e.(type) {
	case *BinaryExpr:
		return e.X
	case *CallExpr:
		return e.Fn
	case *IndexExpr:
		return e.X
	case *DotExpr:
		return e.X
	}
	return nil
}

// Leftmost is the expression at the bottom of e's left spine.
func Leftmost(e Expr) Expr {
	for l := Left(e); l != nil; l = Left(e) {
		e = l
	}
	return e
}

// Spine appends to buf the links of e's left spine, from e down, and
// returns them with the expression at the bottom (Leftmost(e)).
func Spine(e Expr, buf []Expr) ([]Expr, Expr) {
	for l := Left(e); l != nil; l = Left(e) {
		buf = append(buf, e)
		e = l
	}
	return buf, e
}
func (x *ActExpr) Span() Pos   { return x.Pos }
func (x *AwaitExpr) Span() Pos { return x.Pos }

func (*Ident) expr()      {}
func (*Literal) expr()    {}
func (*ListExpr) expr()   {}
func (*MapExpr) expr()    {}
func (*FuncLit) expr()    {}
func (*UnaryExpr) expr()  {}
func (*BinaryExpr) expr() {}
func (*CallExpr) expr()   {}
func (*IndexExpr) expr()  {}
func (*DotExpr) expr()    {}
func (*ActExpr) expr()    {}
func (*AwaitExpr) expr()  {}

func (s *FnDecl) Span() Pos     { return s.Func.Pos }
func (s *VarDecl) Span() Pos    { return s.Pos }
func (s *AssignStmt) Span() Pos { return s.LHS.Span() }
func (s *ExprStmt) Span() Pos   { return s.X.Span() }
func (s *IfStmt) Span() Pos     { return s.Pos }
func (s *WhileStmt) Span() Pos  { return s.Pos }
func (s *ForStmt) Span() Pos    { return s.Pos }
func (s *TryStmt) Span() Pos    { return s.Pos }
func (s *ReturnStmt) Span() Pos { return s.Pos }
func (s *BranchStmt) Span() Pos { return s.Pos }
func (s *ThrowStmt) Span() Pos  { return s.Pos }
func (s *ImportStmt) Span() Pos { return s.Pos }
func (b *Block) Span() Pos      { return b.Lbrace }

func (*FnDecl) stmt()     {}
func (*VarDecl) stmt()    {}
func (*AssignStmt) stmt() {}
func (*ExprStmt) stmt()   {}
func (*IfStmt) stmt()     {}
func (*WhileStmt) stmt()  {}
func (*ForStmt) stmt()    {}
func (*TryStmt) stmt()    {}
func (*ReturnStmt) stmt() {}
func (*BranchStmt) stmt() {}
func (*ThrowStmt) stmt()  {}
func (*ImportStmt) stmt() {}
func (*Block) stmt()      {}
