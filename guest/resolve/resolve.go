// Package resolve binds every name in a Rune syntax tree to a local, cell,
// free, global or built-in slot, and checks scoping rules.
//
// A prog is the body of its entry function. Names declared directly in the
// prog's top-level block are globals, visible from every function; names
// declared in any inner block are locals of their function. A local that an
// inner function refers to becomes a cell, shared by reference. Function
// declarations are hoisted to the start of their block, and their bodies are
// resolved at the end of it, so mutually recursive functions work.
package resolve

import (
	"fmt"

	"github.com/runehost/runehost/guest/syntax"
)

// Scope says where a binding lives.
type Scope uint8

// The scopes.
const (
	Local   Scope = iota // a slot in the function's frame
	Cell                 // a frame slot holding a shared cell (captured by an inner function)
	Free                 // a cell captured from an enclosing function
	Global               // a global slot
	Builtin              // a built-in function
)

var scopeNames = [...]string{"local", "cell", "free", "global", "builtin"}

func (s Scope) String() string { return scopeNames[s] }

// Binding is one declared name.
type Binding struct {
	Scope Scope
	Index int
	Name  string
	Pos   syntax.Pos // declaration; invalid for predeclared names
	Let   bool       // may not be reassigned
}

// Function is the resolver's annotation of a syntax.Function.
type Function struct {
	Locals   []*Binding // parameters first
	FreeVars []*Binding // bindings of enclosing functions, in capture order
	// Hoisted holds, per block, the function declarations to emit at its start.
}

// Module is the resolver's annotation of a syntax.File, or of a prog of
// many files (Files).
type Module struct {
	Entry   *syntax.Function
	Globals []*Binding // input and state first
	// Inits are the bodies of the imported modules, as functions, in the
	// order they run (before Entry's first statement); Names their files.
	Inits []*syntax.Function
	Names []string
}

// Unit is one file of a prog, for Files.
type Unit struct {
	Name string // the file's name in the source set
	File *syntax.File
	// Imports maps each import path of the file to the index, in the
	// units given to Files, of the module it resolves to: an earlier unit.
	Imports map[string]int
}

// exports are a module's top-level names.
type exports struct {
	name  string
	names map[string]*Binding
}

// Predeclared names, in global slot order.
var Predeclared = []string{"input", "state"}

// File resolves f. builtins lists the built-in function names, in table order.
func File(f *syntax.File, builtins []string) (*Module, error) {
	r := &resolver{builtins: make(map[string]int, len(builtins))}
	for i, name := range builtins {
		r.builtins[name] = i
	}
	mod := &Module{Entry: &syntax.Function{Pos: syntax.Pos{Line: 1, Col: 1}, Name: "main", Body: f.Body}}
	r.globals = make(map[string]*Binding)
	for _, name := range Predeclared {
		b := &Binding{Scope: Global, Index: len(mod.Globals), Name: name, Let: true}
		mod.Globals = append(mod.Globals, b)
		r.globals[name] = b
	}
	r.mod = mod
	if err := r.run(mod.Entry); err != nil {
		return nil, err
	}
	f.Module = mod
	return mod, nil
}

// Files resolves a prog of many files: units in initialisation order, every
// module after the modules it imports, the main file last. Each file has its
// own top-level names; a file reads a module's top-level name x, through
// import "PATH" as NAME, as NAME.x. All share one table of global slots.
// Errors name the module's file (syntax.Error.File), not the main file's.
func Files(units []Unit, builtins []string) (*Module, error) {
	mod := &Module{}
	for _, name := range Predeclared {
		mod.Globals = append(mod.Globals, &Binding{Scope: Global, Index: len(mod.Globals), Name: name, Let: true})
	}
	done := make([]*exports, len(units))
	for i, u := range units {
		main := i == len(units)-1
		r := &resolver{builtins: make(map[string]int, len(builtins)), globals: make(map[string]*Binding), mod: mod,
			imports: make(map[string]*exports), module: !main}
		if !main {
			r.file = u.Name
		}
		for j, name := range builtins {
			r.builtins[name] = j
		}
		for j := range Predeclared {
			r.globals[Predeclared[j]] = mod.Globals[j]
		}
		fn := &syntax.Function{Pos: syntax.Pos{Line: 1, Col: 1}, Name: "main", Body: u.File.Body}
		if !main {
			fn.Name = u.Name
		}
		err := r.guard(func() {
			for _, s := range u.File.Body.Stmts {
				im, ok := s.(*syntax.ImportStmt)
				if !ok {
					continue
				}
				k, ok := u.Imports[im.Path]
				if !ok || k >= i {
					r.errorf(im.Pos, "module %q is not resolved", im.Path)
				}
				name := im.Name.Name
				if _, dup := r.imports[name]; dup {
					r.errorf(im.Name.Pos, "%s redeclared: two imports are named %s", name, name)
				}
				if _, ok := r.globals[name]; ok {
					r.errorf(im.Name.Pos, "cannot redeclare predeclared name %s", name)
				}
				r.imports[name] = done[k]
			}
			r.function(fn)
		})
		if err != nil {
			return nil, err
		}
		ex := &exports{name: u.Name, names: make(map[string]*Binding)}
		for name, b := range r.globals {
			if b.Index >= len(Predeclared) {
				ex.names[name] = b
			}
		}
		done[i] = ex
		u.File.Module = mod
		if main {
			mod.Entry = fn
		} else {
			mod.Inits = append(mod.Inits, fn)
			mod.Names = append(mod.Names, u.Name)
		}
	}
	return mod, nil
}

type bailout struct{}

type resolver struct {
	builtins map[string]int
	globals  map[string]*Binding
	imports  map[string]*exports // import name -> the module's names
	module   bool                // resolving an imported module, not the main file
	file     string              // the module's name, for errors
	mod      *Module
	fn       *fnScope
	err      error
}

// fnScope is the resolution state of one function.
type fnScope struct {
	parent *fnScope
	syn    *syntax.Function
	info   *Function
	blocks []map[string]*Binding
	loops  int // enclosing loops within this function
	// free maps a binding of the enclosing function (a cell, or a free
	// variable of its own) to this function's free binding for it.
	free map[*Binding]*Binding
}

func (r *resolver) errorf(pos syntax.Pos, format string, args ...any) {
	r.err = &syntax.Error{File: r.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	panic(bailout{})
}

// guard runs do, turning an errorf into an error.
func (r *resolver) guard(do func()) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if _, ok := x.(bailout); !ok {
				panic(x)
			}
			err = r.err
		}
	}()
	do()
	return nil
}

func (r *resolver) run(entry *syntax.Function) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if _, ok := x.(bailout); !ok {
				panic(x)
			}
			err = r.err
		}
	}()
	r.function(entry)
	return nil
}

func (r *resolver) function(f *syntax.Function) {
	info := &Function{}
	f.Info = info
	r.fn = &fnScope{parent: r.fn, syn: f, info: info, free: make(map[*Binding]*Binding)}
	r.fn.blocks = append(r.fn.blocks, make(map[string]*Binding))
	for _, p := range f.Params {
		r.declare(p, false)
	}
	r.stmts(f.Body.Stmts) // the body shares the scope of the parameters
	r.fn = r.fn.parent
}

// isTop reports whether declarations now go to globals.
func (r *resolver) isTop() bool { return r.fn.parent == nil && len(r.fn.blocks) == 1 }

func (r *resolver) declare(id *syntax.Ident, let bool) *Binding {
	scope := r.fn.blocks[len(r.fn.blocks)-1]
	if prev, ok := scope[id.Name]; ok {
		if prev.Pos.IsValid() && (prev.Pos.Line > id.Pos.Line || prev.Pos.Line == id.Pos.Line && prev.Pos.Col > id.Pos.Col) {
			// A hoisted function was declared first; report the later line.
			r.errorf(prev.Pos, "%s redeclared in this block (previous declaration at %s)", id.Name, id.Pos)
		}
		if prev.Pos.IsValid() {
			r.errorf(id.Pos, "%s redeclared in this block (previous declaration at %s)", id.Name, prev.Pos)
		}
		r.errorf(id.Pos, "%s redeclared in this block", id.Name)
	}
	var b *Binding
	if r.isTop() {
		if _, ok := r.imports[id.Name]; ok {
			r.errorf(id.Pos, "%s redeclared: it names an import", id.Name)
		}
		if _, ok := r.globals[id.Name]; ok {
			r.errorf(id.Pos, "cannot redeclare predeclared name %s", id.Name)
		}
		b = &Binding{Scope: Global, Index: len(r.mod.Globals), Name: id.Name, Pos: id.Pos, Let: let}
		r.mod.Globals = append(r.mod.Globals, b)
		r.globals[id.Name] = b
	} else {
		b = &Binding{Scope: Local, Index: len(r.fn.info.Locals), Name: id.Name, Pos: id.Pos, Let: let}
		r.fn.info.Locals = append(r.fn.info.Locals, b)
	}
	scope[id.Name] = b
	id.Binding = b
	return b
}

// block resolves b in a new scope; pre declares names first (loop and catch variables).
func (r *resolver) block(b *syntax.Block, pre ...*syntax.Ident) {
	r.fn.blocks = append(r.fn.blocks, make(map[string]*Binding))
	for _, id := range pre {
		if id != nil {
			r.declare(id, false)
		}
	}
	r.stmts(b.Stmts)
	r.fn.blocks = r.fn.blocks[:len(r.fn.blocks)-1]
}

func (r *resolver) stmts(list []syntax.Stmt) {
	// Hoist function declarations: names first, bodies at the end.
	var decls []*syntax.FnDecl
	for _, s := range list {
		if d, ok := s.(*syntax.FnDecl); ok {
			r.declare(d.Name, true)
			decls = append(decls, d)
		}
	}
	for _, s := range list {
		r.stmt(s)
	}
	for _, d := range decls {
		r.funcBody(d.Func)
	}
}

func (r *resolver) funcBody(f *syntax.Function) {
	saved := r.fn.loops
	r.function(f)
	r.fn.loops = saved
}

func (r *resolver) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.FnDecl:
		// declared and resolved by stmts
	case *syntax.VarDecl:
		r.expr(s.Value)
		r.declare(s.Name, s.Let)
	case *syntax.AssignStmt:
		if id, ok := s.LHS.(*syntax.Ident); ok {
			b := r.use(id)
			if b.Let {
				if b.Scope == Builtin {
					r.errorf(id.Pos, "cannot assign to built-in %s", id.Name)
				}
				r.errorf(id.Pos, "cannot assign to %s: it is declared with let", id.Name)
			}
			if orig := r.original(b); orig != nil && orig.Let {
				r.errorf(id.Pos, "cannot assign to %s: it is declared with let", id.Name)
			}
		} else {
			r.expr(s.LHS)
			if d, ok := s.LHS.(*syntax.DotExpr); ok && d.Member {
				r.errorf(s.OpPos, "cannot assign to %s.%s: a module's names are read-only", syntax.Leftmost(d).(*syntax.Ident).Name, d.Name)
			}
		}
		r.expr(s.RHS)
	case *syntax.ExprStmt:
		r.expr(s.X)
	case *syntax.IfStmt:
		for s != nil { // an else-if chain, in a loop: it may be long
			r.expr(s.Cond)
			r.block(s.Then)
			next, _ := s.Else.(*syntax.IfStmt)
			if b, ok := s.Else.(*syntax.Block); ok {
				r.block(b)
			}
			s = next
		}
	case *syntax.WhileStmt:
		r.expr(s.Cond)
		r.fn.loops++
		r.block(s.Body)
		r.fn.loops--
	case *syntax.ForStmt:
		r.expr(s.X)
		if s.Val != nil && s.Val.Name == s.Key.Name {
			r.errorf(s.Val.Pos, "%s declared twice in for", s.Val.Name)
		}
		r.fn.loops++
		r.block(s.Body, s.Key, s.Val)
		r.fn.loops--
	case *syntax.TryStmt:
		r.block(s.Body)
		r.block(s.Catch, s.Name)
	case *syntax.ImportStmt:
		// bound before the file's statements (Files)
		if r.imports == nil {
			r.errorf(s.Pos, "import in a prog compiled alone: compile its source set")
		}
	case *syntax.ReturnStmt:
		if r.module && r.fn.parent == nil {
			r.errorf(s.Pos, "return at the top level of a module")
		}
		if s.X != nil {
			r.expr(s.X)
		}
	case *syntax.BranchStmt:
		if r.fn.loops == 0 {
			r.errorf(s.Pos, "%s outside a loop", s.Token)
		}
	case *syntax.ThrowStmt:
		r.expr(s.X)
	case *syntax.Block:
		r.block(s)
	default:
		panic(fmt.Sprintf("resolve: unexpected statement %T", s))
	}
}

// original returns the binding a free binding refers to.
func (r *resolver) original(b *Binding) *Binding {
	if b.Scope != Free {
		return nil
	}
	return r.fn.info.FreeVars[b.Index]
}

// expr resolves e; a left-associative chain is walked in a loop up its left
// spine, in the order the compiler evaluates it, so that a chain of any
// length takes a bounded stack.
func (r *resolver) expr(e syntax.Expr) {
	var buf [8]syntax.Expr
	spine, leaf := syntax.Spine(e, buf[:0])
	if !r.member(spine, leaf) {
		r.operand(leaf)
	}
	for i := len(spine) - 1; i >= 0; i-- {
		switch e := spine[i].(type) {
		case *syntax.BinaryExpr:
			r.expr(e.Y)
		case *syntax.CallExpr:
			for _, x := range e.Args {
				r.expr(x)
			}
		case *syntax.IndexExpr:
			r.expr(e.Index)
		}
	}
}

// operand resolves an expression that is not a chain link.
func (r *resolver) operand(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.Ident:
		r.use(e)
	case *syntax.Literal:
	case *syntax.ListExpr:
		for _, x := range e.Elems {
			r.expr(x)
		}
	case *syntax.MapExpr:
		for _, ent := range e.Entries {
			r.expr(ent.Key)
			r.expr(ent.Value)
		}
	case *syntax.FuncLit:
		r.funcBody(e.Func)
	case *syntax.UnaryExpr:
		r.expr(e.X)
	case *syntax.ActExpr:
		if e.Args != nil {
			r.expr(e.Args)
		}
	case *syntax.AwaitExpr:
		r.expr(e.Selector)
	default:
		panic(fmt.Sprintf("resolve: unexpected expression %T", e))
	}
}

// member resolves NAME.x, where NAME is an import and no local hides it,
// to the module's top-level x, and reports whether it did.
func (r *resolver) member(spine []syntax.Expr, leaf syntax.Expr) bool {
	id, ok := leaf.(*syntax.Ident)
	if !ok || len(spine) == 0 {
		return false
	}
	ex, ok := r.imports[id.Name]
	if !ok || r.lookup(r.fn, id.Name) != nil {
		return false
	}
	d, ok := spine[len(spine)-1].(*syntax.DotExpr)
	if !ok {
		return false // use reports it
	}
	b, ok := ex.names[d.Name]
	if !ok {
		r.errorf(d.Dot, "%s.%s undefined: %s has no top-level %s", id.Name, d.Name, ex.name, d.Name)
	}
	id.Binding, d.Member = b, true
	return true
}

// use resolves a reference to id and records its binding.
func (r *resolver) use(id *syntax.Ident) *Binding {
	b := r.lookup(r.fn, id.Name)
	if b == nil {
		if _, ok := r.imports[id.Name]; ok {
			r.errorf(id.Pos, "%s is a module, not a value: use %s.NAME", id.Name, id.Name)
		}
		if g, ok := r.globals[id.Name]; ok {
			b = g
		} else if i, ok := r.builtins[id.Name]; ok {
			b = &Binding{Scope: Builtin, Index: i, Name: id.Name, Let: true}
		} else {
			r.errorf(id.Pos, "undefined: %s", id.Name)
		}
	}
	id.Binding = b
	return b
}

// lookup finds name in fn or its enclosing functions, capturing it as a
// free variable of every function in between. Globals are not searched.
func (r *resolver) lookup(fn *fnScope, name string) *Binding {
	if fn == nil {
		return nil
	}
	for i := len(fn.blocks) - 1; i >= 0; i-- {
		if b, ok := fn.blocks[i][name]; ok {
			if b.Scope == Global {
				return nil // found via r.globals
			}
			return b
		}
	}
	outer := r.lookup(fn.parent, name)
	if outer == nil {
		return nil
	}
	if outer.Scope == Local {
		outer.Scope = Cell
	}
	if b, ok := fn.free[outer]; ok {
		return b
	}
	b := &Binding{Scope: Free, Index: len(fn.info.FreeVars), Name: name, Pos: outer.Pos, Let: outer.Let}
	fn.info.FreeVars = append(fn.info.FreeVars, outer)
	fn.free[outer] = b
	return b
}
