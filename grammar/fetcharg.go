package grammar

import "github.com/alecthomas/participle/v2/lexer"

// The syntax of fetch arguments (FETCHARGS in kprobetrace.rst):
//
//	NAME=FETCHARG : Set NAME as the argument name of FETCHARG.
//	FETCHARG:TYPE : Set TYPE as the type of FETCHARG.
//	%REG          : Fetch register REG
//	@ADDR         : Fetch memory at ADDR (ADDR should be in kernel)
//	@SYM[+|-offs] : Fetch memory at SYM +|- offs (SYM should be a data symbol)
//	$stackN       : Fetch Nth entry of stack (N >= 0)
//	$stack        : Fetch stack address.
//	$argN         : Fetch the Nth function argument. (N >= 1)
//	$retval       : Fetch return value.
//	$comm         : Fetch current task comm.
//	+|-[u]OFFS(FETCHARG) : Fetch memory at FETCHARG +|- OFFS address.
//	\IMM          : Store an immediate value to the argument.
//	\"STR"        : Store an immediate string to the argument.
//	NAME[->FIELD|.FIELD]... : a BTF function parameter and its members.
//	TYPE          : u8/16/32/64, s8/16/32/64, x8/16/32/64, char, string,
//	                ustring, symbol, symstr, b<bit-width>@<bit-offset>/<container-size>,
//	                and TYPE[N] for arrays.
//
// Which $-variable a name is ($stack, $stack3, $arg2, $retval...) is the
// kernel's prefix test on the text after '$', done by the checks in the
// kernel's order; the grammar keeps the text.

// Argument is one fetch argument: [NAME=]FETCHARG[:TYPE].
type Argument struct {
	Name  *ArgName  `parser:"@@?"`
	Fetch *FetchArg `parser:"@@?"`
	Type  *ArgType  `parser:"@@?"`
}

// ArgName is the NAME= of an argument (the text up to the first '=').
type ArgName struct {
	Name lexer.Token `parser:"@Name?"`
	Eq   lexer.Token `parser:"@'=':Punct"`
}

// ArgType is the :TYPE of an argument (from the first ':').
type ArgType struct {
	Colon lexer.Token `parser:"@':':Punct"`
	Type  *Type       `parser:"@@?"`
}

// FetchArg is one of the fetch-argument forms, chosen by its first byte.
type FetchArg struct {
	Pos    lexer.Position
	Reg    *Reg    `parser:"  @@"`
	Var    *Var    `parser:"| @@"`
	Mem    *Mem    `parser:"| @@"`
	Deref  *Deref  `parser:"| @@"`
	ImmStr *ImmStr `parser:"| @@"`
	Imm    *Imm    `parser:"| @@"`
	BTF    *Chain  `parser:"| @@"`
	Bad    *BadArg `parser:"| @@"`
}

// BadArg is text no form starts with.
type BadArg struct {
	Text lexer.Token `parser:"@Text"`
}

// Reg is %REG.
type Reg struct {
	Name lexer.Token `parser:"'%':Punct @Reg?"`
}

// Var is $VAR: $retval (with a member chain on kernels with BTF
// arguments), $stack, $stackN, $argN, $arg*, $comm.
type Var struct {
	Name *Chain `parser:"'$':Punct @@?"`
}

// Chain is NAME(->FIELD | .FIELD)*: a name and its member chain, split at
// each '.', '->' and stray '-' (split_next_field).
type Chain struct {
	Name  lexer.Token `parser:"@Field"`
	Links []*Link     `parser:"@@*"`
}

// Link is one separator of a chain and the member after it.
type Link struct {
	Sep   lexer.Token `parser:"@('->':Punct | '.':Punct | '-':Punct)"`
	Field lexer.Token `parser:"@Field?"`
}

// Mem is @ADDR, @SYM[+|-OFFS], or @+OFFS (a file offset: uprobes only).
type Mem struct {
	Addr   lexer.Token `parser:"'@':Punct ( @Addr"`
	File   *FileOffs   `parser:"          | @@"`
	Symbol lexer.Token `parser:"          | @Symbol"`
	Offset lexer.Token `parser:"            @Offset? | @Offset )?"`
}

// FileOffs is the +OFFS of @+OFFS.
type FileOffs struct {
	Offs lexer.Token `parser:"'+':Punct @Text?"`
}

// Deref is +|-[u]OFFS(FETCHARG): memory at OFFS from the address
// FETCHARG yields, from user memory with 'u'. The inner argument ends at
// the last ')'; text after it is ignored. Without a ')', the text after
// the '(' is not parsed (Unclosed).
type Deref struct {
	Sign     lexer.Token `parser:"@('+':Punct | '-':Punct)"`
	User     lexer.Token `parser:"@User?"`
	Offs     lexer.Token `parser:"@DerefOffs?"`
	Open     lexer.Token `parser:"( @'(':Punct"`
	Inner    *FetchArg   `parser:"  ( @@?"`
	Close    lexer.Token `parser:"    @')':Punct"`
	Trail    lexer.Token `parser:"    @Text?"`
	Unclosed lexer.Token `parser:"  | @Unclosed ) )?"`
}

// ImmStr is \"STR": an immediate string, closed by a final '"'.
type ImmStr struct {
	Text lexer.Token `parser:"Backslash Quote @Str?"`
}

// Imm is \IMM: an immediate number.
type Imm struct {
	Value lexer.Token `parser:"Backslash @Imm?"`
}

// Type is the TYPE after ':': a fetch type name or a bitfield, and an
// array count.
type Type struct {
	Bitfield *Bitfield   `parser:"( @@"`
	Name     lexer.Token `parser:"| @Type )?"`
	Array    *Array      `parser:"@@?"`
}

// Bitfield is b<WIDTH>@<OFFS>/<CONTAINER>.
type Bitfield struct {
	Width     lexer.Token `parser:"Bits @Width?"`
	At        lexer.Token `parser:"( @'@':Punct"`
	Offs      lexer.Token `parser:"  @Bitoffs? )?"`
	Slash     lexer.Token `parser:"( @'/':Punct"`
	Container lexer.Token `parser:"  @Container? )?"`
}

// Array is [N] after a type name; text after the ']' is an error.
type Array struct {
	Pos   lexer.Position
	Count lexer.Token `parser:"'[':Punct @Count?"`
	Close lexer.Token `parser:"( @']':Punct"`
	Trail lexer.Token `parser:"  @Text? )?"`
}
