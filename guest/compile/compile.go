// Package compile turns a resolved Rune syntax tree into bytecode.
package compile

import (
	"fmt"
	"math"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/resolve"
	"github.com/runehost/runehost/guest/syntax"
)

// Limits on what one program may contain.
const (
	MaxFuncs  = 1 << 16
	MaxConsts = MaxArg
	MaxCode   = MaxArg // instructions per function
)

// Compile parses, resolves and compiles a prog: a plain source, or an
// encoded source set (modules.Encode) of a main file and the modules it
// imports, compiled into one program whose hash covers every file.
func Compile(src []byte) (*Program, error) {
	var mod *resolve.Module
	if modules.IsSet(src) {
		m, err := compileSet(src)
		if err != nil {
			return nil, err
		}
		mod = m
	} else {
		f, err := syntax.Parse(src)
		if err != nil {
			return nil, err
		}
		if ims := modules.Imports(f); len(ims) > 0 {
			return nil, &syntax.Error{Pos: ims[0].Pos, Msg: fmt.Sprintf("module %q is not in the source set: a prog that imports is compiled with its modules (runehost gathers them)", ims[0].Path)}
		}
		if mod, err = resolve.File(f, Builtins); err != nil {
			return nil, err
		}
	}
	c := &compiler{
		prog:   &Program{Hash: HashSource(src), Source: src},
		consts: make(map[constKey]int),
		tags:   make(map[string]int),
		mod:    mod,
	}
	for _, g := range mod.Globals {
		c.prog.Globals = append(c.prog.Globals, g.Name)
		c.prog.GlobalPos = append(c.prog.GlobalPos, g.Pos)
	}
	if err := c.run(mod.Entry); err != nil {
		return nil, err
	}
	return c.prog, nil
}

// compileSet decodes, orders and resolves a source set.
func compileSet(src []byte) (*resolve.Module, error) {
	set, err := modules.Decode(src)
	if err != nil {
		return nil, &syntax.Error{Pos: syntax.Pos{Line: 1, Col: 1}, Msg: err.Error()}
	}
	names, files, err := modules.Order(set)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	has := func(n string) bool { _, ok := index[n]; return ok }
	units := make([]resolve.Unit, len(names))
	for i, n := range names {
		units[i] = resolve.Unit{Name: n, File: files[n], Imports: make(map[string]int)}
		for _, im := range modules.Imports(files[n]) {
			units[i].Imports[im.Path] = index[modules.Resolve(n, im.Path, has)]
		}
	}
	return resolve.Files(units, Builtins)
}

type bailout struct{}

type compiler struct {
	mod    *resolve.Module
	file   string // the module being compiled; "" for the main file
	prog   *Program
	consts map[constKey]int
	tags   map[string]int
	fn     *fcomp
	err    error
}

// loop is the compile state of an enclosing loop.
type loop struct {
	isFor     bool // an iterator sits on the stack
	tryDepth  int  // handlers live when the loop began
	breaks    []int
	continues []int
	cont      int // continue target when known (-1 until then)
}

// fcomp is the compile state of one function.
type fcomp struct {
	fn       *Funcode
	info     *resolve.Function
	depth    int // current operand stack depth
	tryDepth int
	loops    []*loop
	pos      syntax.Pos
}

func (c *compiler) errorf(pos syntax.Pos, format string, args ...any) {
	c.err = &syntax.Error{File: c.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	panic(bailout{})
}

func (c *compiler) run(entry *syntax.Function) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if _, ok := x.(bailout); !ok {
				panic(x)
			}
			err = c.err
		}
	}()
	c.function(entry)
	return nil
}

// function compiles f and returns its index in the program.
func (c *compiler) function(f *syntax.Function) int {
	if len(c.prog.Funcs) >= MaxFuncs {
		c.errorf(f.Pos, "too many functions (limit %d)", MaxFuncs)
	}
	info := f.Info.(*resolve.Function)
	fc := &Funcode{Index: len(c.prog.Funcs), Name: f.Name, File: c.file, Pos: f.Pos, NumParams: len(f.Params), NumFree: len(info.FreeVars)}
	if fc.Name == "" {
		fc.Name = "fn"
	}
	for _, b := range info.Locals {
		fc.Locals = append(fc.Locals, b.Name)
	}
	for _, b := range info.FreeVars {
		fc.FreeNames = append(fc.FreeNames, b.Name)
	}
	c.prog.Funcs = append(c.prog.Funcs, fc)
	saved := c.fn
	c.fn = &fcomp{fn: fc, info: info, pos: f.Pos}
	for i := range f.Params {
		if info.Locals[i].Scope == resolve.Cell {
			c.emit(WRAPCELL, i)
		}
	}
	if fc.Index == 0 {
		c.inits(f.Body.Stmts)
	}
	c.stmts(f.Body.Stmts)
	c.setPos(f.Body.Lbrace)
	c.emit(NIL, 0)
	c.emit(RETURN, 0)
	c.fn = saved
	return fc.Index
}

// inits emits, at the start of the entry function, a call of each imported
// module's body, in order: each module runs once, before the main file's
// first statement, after the modules it imports.
func (c *compiler) inits(stmts []syntax.Stmt) {
	if len(c.mod.Inits) == 0 {
		return
	}
	pos := c.fn.pos
	for _, s := range stmts {
		if im, ok := s.(*syntax.ImportStmt); ok {
			pos = im.Pos
			break
		}
	}
	for i, f := range c.mod.Inits {
		c.setPos(pos)
		c.file = c.mod.Names[i]
		c.closure(f)
		c.file = ""
		c.emit(CALL, 0)
		c.emit(POP, 0)
	}
}

// stackEffect gives each opcode's fixed change of stack depth; variable ones are computed in emit.
var stackEffect = [numOpcodes]int{
	POP: -1, DUP: 1, DUP2: 2, NIL: 1, TRUE: 1, FALSE: 1, CONST: 1, SMALLINT: 1,
	LOCAL: 1, SETLOCAL: -1, CELL: 1, SETCELL: -1, FREE: 1, SETFREE: -1,
	LOCALREF: 1, FREEREF: 1, GLOBAL: 1, SETGLOBAL: -1, BUILTIN: 1,
	ADD: -1, SUB: -1, MUL: -1, DIV: -1, MOD: -1, EQ: -1, NE: -1, LT: -1, LE: -1, GT: -1, GE: -1,
	JMPF: -1, JMPT: -1, INDEX: -1, SETINDEX: -3, SETATTR: -2, RETURN: -1,
	NEXT: 1, NEXT2: 2, THROW: -1,
}

func (c *compiler) setPos(pos syntax.Pos) { c.fn.pos = pos }

// emit appends an instruction and returns its pc.
func (c *compiler) emit(op Opcode, arg int) int {
	fc := c.fn
	if arg < 0 || arg > MaxArg {
		c.errorf(fc.pos, "program too large (operand %d)", arg)
	}
	if len(fc.fn.Code) >= MaxCode {
		c.errorf(fc.pos, "function too large")
	}
	fc.fn.Depths = append(fc.fn.Depths, int32(fc.depth))
	switch op {
	case LIST:
		fc.depth += 1 - arg
	case MAP:
		fc.depth += 1 - 2*arg
	case FUNC:
		fc.depth += 1 - c.prog.Funcs[arg].NumFree
	case CALL:
		fc.depth -= arg
	default:
		fc.depth += stackEffect[op]
	}
	if fc.depth > fc.fn.MaxStack {
		fc.fn.MaxStack = fc.depth
	}
	fc.fn.Code = append(fc.fn.Code, Encode(op, arg))
	fc.fn.Lines = append(fc.fn.Lines, fc.pos)
	return len(fc.fn.Code) - 1
}

// patch sets the jump target of the instruction at pc to the next pc.
func (c *compiler) patch(pc int) { c.patchTo(pc, len(c.fn.fn.Code)) }

func (c *compiler) patchTo(pc, target int) {
	op, _ := Decode(c.fn.fn.Code[pc])
	c.fn.fn.Code[pc] = Encode(op, target)
}

// constKey identifies a constant by its bits, so that 0.0 and -0.0 stay apart.
type constKey struct {
	kind ConstKind
	n    uint64
	s    string
}

func (c *compiler) constIndex(k Const) int {
	key := constKey{kind: k.Kind, n: uint64(k.Int), s: k.Str}
	if k.Kind == ConstFloat {
		key.n = math.Float64bits(k.Float)
	}
	if i, ok := c.consts[key]; ok {
		return i
	}
	if len(c.prog.Consts) >= MaxConsts {
		c.errorf(c.fn.pos, "too many constants")
	}
	i := len(c.prog.Consts)
	c.prog.Consts = append(c.prog.Consts, k)
	c.consts[key] = i
	return i
}

func (c *compiler) stringConst(s string) int { return c.constIndex(Const{Kind: ConstString, Str: s}) }

// blockPrologue creates fresh cells for captured names declared in a block
// (so each loop iteration captures its own), then hoists its functions.
func (c *compiler) blockPrologue(stmts []syntax.Stmt, pre ...*syntax.Ident) {
	for _, id := range pre {
		if id != nil {
			c.newCell(id)
		}
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *syntax.VarDecl:
			c.newCell(s.Name)
		case *syntax.FnDecl:
			c.newCell(s.Name)
		}
	}
	for _, s := range stmts {
		if d, ok := s.(*syntax.FnDecl); ok {
			c.setPos(d.Func.Pos)
			c.closure(d.Func)
			c.store(d.Name)
		}
	}
}

func (c *compiler) newCell(id *syntax.Ident) {
	if b := id.Binding.(*resolve.Binding); b.Scope == resolve.Cell {
		c.setPos(id.Pos)
		c.emit(NEWCELL, b.Index)
	}
}

func (c *compiler) stmts(list []syntax.Stmt) {
	c.blockPrologue(list)
	for _, s := range list {
		c.stmt(s)
	}
}

func (c *compiler) block(b *syntax.Block, pre ...*syntax.Ident) {
	c.blockPrologue(b.Stmts, pre...)
	for _, s := range b.Stmts {
		c.stmt(s)
	}
}

func (c *compiler) stmt(s syntax.Stmt) {
	c.setPos(s.Span())
	switch s := s.(type) {
	case *syntax.FnDecl:
		// hoisted by blockPrologue
	case *syntax.VarDecl:
		c.expr(s.Value)
		c.setPos(s.Name.Pos)
		c.store(s.Name)
	case *syntax.AssignStmt:
		c.assign(s)
	case *syntax.ExprStmt:
		c.expr(s.X)
		c.emit(POP, 0)
	case *syntax.IfStmt:
		var ends []int // jumps to the end of an else-if chain, compiled in a loop
		for s != nil {
			c.expr(s.Cond)
			c.setPos(s.Pos)
			jf := c.emit(JMPF, 0)
			c.block(s.Then)
			if s.Else == nil {
				c.patch(jf)
				break
			}
			ends = append(ends, c.emit(JMP, 0))
			c.patch(jf)
			next, _ := s.Else.(*syntax.IfStmt)
			if b, ok := s.Else.(*syntax.Block); ok {
				c.block(b)
			}
			s = next
		}
		for _, j := range ends {
			c.patch(j)
		}
	case *syntax.WhileStmt:
		top := len(c.fn.fn.Code)
		c.expr(s.Cond)
		c.setPos(s.Pos)
		jf := c.emit(JMPF, 0)
		l := &loop{tryDepth: c.fn.tryDepth, cont: top}
		c.fn.loops = append(c.fn.loops, l)
		c.block(s.Body)
		c.fn.loops = c.fn.loops[:len(c.fn.loops)-1]
		c.setPos(s.Pos)
		c.emit(JMP, top)
		c.patch(jf)
		for _, pc := range l.breaks {
			c.patch(pc)
		}
	case *syntax.ForStmt:
		c.expr(s.X)
		c.setPos(s.Pos)
		c.emit(ITER, 0)
		top := len(c.fn.fn.Code)
		var next int
		if s.Val == nil {
			next = c.emit(NEXT, 0)
		} else {
			next = c.emit(NEXT2, 0)
		}
		l := &loop{isFor: true, tryDepth: c.fn.tryDepth, cont: top}
		c.fn.loops = append(c.fn.loops, l)
		// Fresh cells for the loop variables, then store them, then the body.
		c.newCell(s.Key)
		if s.Val != nil {
			c.newCell(s.Val)
			c.store(s.Val)
		}
		c.store(s.Key)
		c.block(s.Body)
		c.fn.loops = c.fn.loops[:len(c.fn.loops)-1]
		c.setPos(s.Pos)
		c.emit(JMP, top)
		// NEXT pops the iterator when exhausted; account for it here.
		c.fn.depth--
		c.patch(next)
		for _, pc := range l.breaks {
			c.patch(pc)
		}
	case *syntax.TryStmt:
		try := c.emit(TRY, 0)
		c.fn.tryDepth++
		c.block(s.Body)
		c.fn.tryDepth--
		c.setPos(s.Pos)
		c.emit(ENDTRY, 0)
		j := c.emit(JMP, 0)
		c.patch(try)
		c.fn.depth++ // the error value pushed by the machine
		c.newCell(s.Name)
		c.store(s.Name)
		c.block(s.Catch)
		c.patch(j)
	case *syntax.ReturnStmt:
		if s.X != nil {
			c.expr(s.X)
		} else {
			c.emit(NIL, 0)
		}
		c.setPos(s.Pos)
		c.emit(RETURN, 0)
	case *syntax.BranchStmt:
		l := c.fn.loops[len(c.fn.loops)-1]
		for i := l.tryDepth; i < c.fn.tryDepth; i++ {
			c.emit(ENDTRY, 0)
		}
		if s.Token == syntax.BREAK {
			if l.isFor {
				c.emit(POP, 0) // the iterator
			}
			l.breaks = append(l.breaks, c.emit(JMP, 0))
			if l.isFor {
				c.fn.depth++ // the code after the break still has the iterator
			}
		} else {
			c.emit(JMP, l.cont)
		}
	case *syntax.ThrowStmt:
		c.expr(s.X)
		c.setPos(s.Pos)
		c.emit(THROW, 0)
	case *syntax.ImportStmt:
		// the module ran in the entry's prologue (inits)
	case *syntax.Block:
		c.block(s)
	default:
		panic(fmt.Sprintf("compile: unexpected statement %T", s))
	}
}

var assignOps = map[syntax.Token]Opcode{
	syntax.PLUSEQ: ADD, syntax.MINUSEQ: SUB, syntax.STAREQ: MUL, syntax.SLASHEQ: DIV, syntax.PERCENTEQ: MOD,
}

func (c *compiler) assign(s *syntax.AssignStmt) {
	op := assignOps[s.Op]
	switch lhs := s.LHS.(type) {
	case *syntax.Ident:
		if s.Op != syntax.ASSIGN {
			c.load(lhs)
			c.expr(s.RHS)
			c.setPos(s.OpPos)
			c.emit(op, 0)
		} else {
			c.expr(s.RHS)
		}
		c.setPos(lhs.Pos)
		c.store(lhs)
	case *syntax.IndexExpr:
		c.expr(lhs.X)
		c.expr(lhs.Index)
		if s.Op != syntax.ASSIGN {
			c.emit(DUP2, 0)
			c.setPos(lhs.Lbrack)
			c.emit(INDEX, 0)
			c.expr(s.RHS)
			c.setPos(s.OpPos)
			c.emit(op, 0)
		} else {
			c.expr(s.RHS)
		}
		c.setPos(lhs.Lbrack)
		c.emit(SETINDEX, 0)
	case *syntax.DotExpr:
		c.expr(lhs.X)
		k := c.stringConst(lhs.Name)
		if s.Op != syntax.ASSIGN {
			c.emit(DUP, 0)
			c.setPos(lhs.Dot)
			c.emit(ATTR, k)
			c.expr(s.RHS)
			c.setPos(s.OpPos)
			c.emit(op, 0)
		} else {
			c.expr(s.RHS)
		}
		c.setPos(lhs.Dot)
		c.emit(SETATTR, k)
	}
}

func (c *compiler) load(id *syntax.Ident) {
	b := id.Binding.(*resolve.Binding)
	c.setPos(id.Pos)
	switch b.Scope {
	case resolve.Local:
		c.emit(LOCAL, b.Index)
	case resolve.Cell:
		c.emit(CELL, b.Index)
	case resolve.Free:
		c.emit(FREE, b.Index)
	case resolve.Global:
		c.emit(GLOBAL, b.Index)
	case resolve.Builtin:
		c.emit(BUILTIN, b.Index)
	}
}

func (c *compiler) store(id *syntax.Ident) {
	b := id.Binding.(*resolve.Binding)
	switch b.Scope {
	case resolve.Local:
		c.emit(SETLOCAL, b.Index)
	case resolve.Cell:
		c.emit(SETCELL, b.Index)
	case resolve.Free:
		c.emit(SETFREE, b.Index)
	case resolve.Global:
		c.emit(SETGLOBAL, b.Index)
	default:
		c.errorf(id.Pos, "cannot assign to %s", id.Name)
	}
}

// closure emits the creation of a closure over f's free variables.
func (c *compiler) closure(f *syntax.Function) {
	info := f.Info.(*resolve.Function)
	for _, fv := range info.FreeVars {
		// fv is a cell of the current function, or one of its free variables.
		if fv.Scope == resolve.Free {
			c.emit(FREEREF, fv.Index)
		} else {
			c.emit(LOCALREF, fv.Index)
		}
	}
	pos := c.fn.pos
	idx := c.function(f)
	c.setPos(pos)
	c.emit(FUNC, idx)
}

var binaryOps = map[syntax.Token]Opcode{
	syntax.PLUS: ADD, syntax.MINUS: SUB, syntax.STAR: MUL, syntax.SLASH: DIV, syntax.PERCENT: MOD,
	syntax.EQL: EQ, syntax.NEQ: NE, syntax.LT: LT, syntax.LE: LE, syntax.GT: GT, syntax.GE: GE,
}

// expr compiles e. A left-associative chain (a + b + c, f()(), x.a.b) is
// compiled in a loop up its left spine: its leftmost operand first, then
// each link's own part, so that a chain of any length takes a bounded stack.
func (c *compiler) expr(e syntax.Expr) {
	var buf [8]syntax.Expr
	spine, leaf := syntax.Spine(e, buf[:0])
	c.operand(leaf)
	for i := len(spine) - 1; i >= 0; i-- {
		c.link(spine[i])
	}
}

// operand compiles an expression that is not a chain link.
func (c *compiler) operand(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.Ident:
		c.load(e)
	case *syntax.Literal:
		c.setPos(e.Pos)
		switch e.Token {
		case syntax.INT:
			if e.Int >= 0 && e.Int <= MaxArg {
				c.emit(SMALLINT, int(e.Int))
			} else {
				c.emit(CONST, c.constIndex(Const{Kind: ConstInt, Int: e.Int}))
			}
		case syntax.FLOAT:
			c.emit(CONST, c.constIndex(Const{Kind: ConstFloat, Float: e.Float}))
		case syntax.STRING:
			c.emit(CONST, c.stringConst(e.Str))
		case syntax.TRUE:
			c.emit(TRUE, 0)
		case syntax.FALSE:
			c.emit(FALSE, 0)
		case syntax.NIL:
			c.emit(NIL, 0)
		}
	case *syntax.ListExpr:
		for _, x := range e.Elems {
			c.expr(x)
		}
		c.setPos(e.Lbrack)
		c.emit(LIST, len(e.Elems))
	case *syntax.MapExpr:
		for _, ent := range e.Entries {
			c.expr(ent.Key)
			c.expr(ent.Value)
		}
		c.setPos(e.Lbrace)
		c.emit(MAP, len(e.Entries))
	case *syntax.FuncLit:
		c.setPos(e.Func.Pos)
		c.closure(e.Func)
	case *syntax.UnaryExpr:
		c.expr(e.X)
		c.setPos(e.Pos)
		if e.Op == syntax.MINUS {
			c.emit(NEG, 0)
		} else {
			c.emit(NOT, 0)
		}
	case *syntax.ActExpr:
		if e.Args != nil {
			c.expr(e.Args)
		} else {
			c.emit(MAP, 0)
		}
		c.setPos(e.Pos)
		c.emit(ACT, c.tagIndex(e.Tag))
	case *syntax.AwaitExpr:
		c.expr(e.Selector)
		c.setPos(e.Pos)
		c.emit(AWAIT, 0)
	default:
		panic(fmt.Sprintf("compile: unexpected expression %T", e))
	}
}

// link compiles a chain link whose left operand is already on the stack.
func (c *compiler) link(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		switch e.Op {
		case syntax.ANDAND, syntax.OROR:
			// x && y: x if x is falsy, else y; x || y: x if x is truthy, else y.
			c.setPos(e.OpPos)
			c.emit(DUP, 0)
			var j int
			if e.Op == syntax.ANDAND {
				j = c.emit(JMPF, 0)
			} else {
				j = c.emit(JMPT, 0)
			}
			c.emit(POP, 0)
			c.expr(e.Y)
			c.patch(j)
			return
		}
		c.expr(e.Y)
		c.setPos(e.OpPos)
		c.emit(binaryOps[e.Op], 0)
	case *syntax.CallExpr:
		for _, x := range e.Args {
			c.expr(x)
		}
		c.setPos(e.Lparen)
		c.emit(CALL, len(e.Args))
	case *syntax.IndexExpr:
		c.expr(e.Index)
		c.setPos(e.Lbrack)
		c.emit(INDEX, 0)
	case *syntax.DotExpr:
		if e.Member {
			return // the import's name was compiled as the module's global
		}
		c.setPos(e.Dot)
		c.emit(ATTR, c.stringConst(e.Name))
	}
}

func (c *compiler) tagIndex(tag string) int {
	if i, ok := c.tags[tag]; ok {
		return i
	}
	if tag == "" {
		c.errorf(c.fn.pos, "empty act tag")
	}
	if len(tag) > checkpoint.MaxKind {
		c.errorf(c.fn.pos, "act tag of %d bytes is longer than the limit of %d", len(tag), checkpoint.MaxKind)
	}
	i := len(c.prog.ActTags)
	c.prog.ActTags = append(c.prog.ActTags, tag)
	c.tags[tag] = i
	return i
}
