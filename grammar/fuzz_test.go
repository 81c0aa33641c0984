package grammar

import (
	"testing"
)

// The engine accepts every argv entry (the grammars are total
// over their lexers' output) and build participle's trees.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		"p:grp/ev", "r16:a.b", "-:x/", "vfs_read+0x10%return", "mod:sym-1", "/bin/sh:0x10(0x20)%return",
		"a=+0(+8(%di)):u32[4]", "+u-5(%di)x", "+8(+0(%di)", "@sym+8", `\"str"`, `\-5`, "$retval->a.b-c",
		"x:b4@2/32", "x:u8[2]x", "file->f_path.dentry", "sched.sched_switch",
	} {
		f.Add(s)
	}
	head := participleParser[Head](scanHead)
	kp := participleParser[KprobePlace](scanKprobePlace)
	fp := participleParser[FprobePlace](scanFprobePlace)
	up := participleParser[UprobePlace](scanUprobePlace)
	ep := participleParser[EprobePlace](scanEprobePlace)
	rm := participleParser[Removal](scanRemoval)
	ap := participleParser[Argument](scanArgument)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Split(s) {
			checkSame(t, "head", head, ParseHead, tok)
			checkSame(t, "removal", rm, ParseRemoval, tok)
			checkSame(t, "kprobe place", kp, ParseKprobePlace, tok)
			checkSame(t, "fprobe place", fp, ParseFprobePlace, tok)
			checkSame(t, "uprobe place", up, ParseUprobePlace, tok)
			checkSame(t, "eprobe place", ep, ParseEprobePlace, tok)
			checkSame(t, "argument", ap, ParseArgument, tok)
			if _, err := ParseArgument(tok); err != nil {
				t.Errorf("%q: %v", tok, err)
			}
		}
	})
}
