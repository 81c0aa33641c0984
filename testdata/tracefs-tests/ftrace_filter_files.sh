#!/bin/sh
# description: set_ftrace_filter and set_ftrace_notrace select functions by name, glob (foo*, *foo, *foo*, [..], ?) and 1-based index, ! removes, > replaces and >> adds, a word matching nothing fails the write (the words before it stay); the readbacks list functions in available_filter_functions order, say when none is selected, and show cached :mod: entries; set_ftrace_pid reads "no pid" when empty
# flags: instance
fail() { echo "FAIL: $*" >&2; echo > set_ftrace_filter; echo > set_ftrace_notrace; echo > set_ftrace_pid; exit 1; }
[ -f set_ftrace_filter ] || exit 0
all='#### all functions enabled ####'
# An instance has the filter files; the function list is the top level's.
aff=available_filter_functions
[ -f $aff ] || aff=../../available_filter_functions
none='#### no functions disabled ####'
[ "$(cat set_ftrace_filter)" = "$all" ] || fail "initial filter: $(cat set_ftrace_filter)"
[ "$(cat set_ftrace_notrace)" = "$none" ] || fail "initial notrace: $(cat set_ftrace_notrace)"
[ "$(cat set_ftrace_pid)" = "no pid" ] || fail "initial set_ftrace_pid: $(cat set_ftrace_pid)"
echo vfs_readlink vfs_read vfs_readv > set_ftrace_filter || fail "three names"
# Listed as available_filter_functions lists them (address order).
want=$(grep -x -e vfs_read -e vfs_readv -e vfs_readlink $aff 2>/dev/null | tr '\n' ' ')
[ -n "$want" ] || want=$(cat set_ftrace_filter | tr '\n' ' ')
[ "$(cat set_ftrace_filter | tr '\n' ' ')" = "$want" ] || fail "order: $(cat set_ftrace_filter | tr '\n' ' ') want $want"
[ $(wc -l < set_ftrace_filter) = 3 ] || fail "three names: $(cat set_ftrace_filter)"
echo kernel_clone >> set_ftrace_filter || fail "append"
[ $(wc -l < set_ftrace_filter) = 4 ] || fail "after append: $(cat set_ftrace_filter)"
echo kernel_clone >> set_ftrace_filter || fail "append again"
[ $(wc -l < set_ftrace_filter) = 4 ] || fail "a function is listed once: $(cat set_ftrace_filter)"
echo '!vfs_read' >> set_ftrace_filter || fail "!vfs_read"
grep -qx vfs_read set_ftrace_filter && fail "vfs_read not removed"
echo 'vfs_rea*' > set_ftrace_filter || fail "prefix glob"
[ "$(grep -c . set_ftrace_filter)" = "$(grep -c '^vfs_rea' $aff)" ] || fail "vfs_rea*: $(cat set_ftrace_filter)"
echo 'ksys_rea?' > set_ftrace_filter || fail "?"
[ "$(cat set_ftrace_filter)" = ksys_read ] || fail "ksys_rea?: $(cat set_ftrace_filter)"
echo '*_sys_getpid' > set_ftrace_filter || fail "suffix glob"
[ "$(cat set_ftrace_filter)" = __do_sys_getpid ] || fail "*_sys_getpid: $(cat set_ftrace_filter)"
echo 1 > set_ftrace_filter || fail "index 1"
[ "$(cat set_ftrace_filter)" = "$(head -1 $aff)" ] || fail "index 1: $(cat set_ftrace_filter)"
if echo 0 > set_ftrace_filter 2>/dev/null; then fail "index 0 accepted"; fi
if echo no_such_function_xyz > set_ftrace_filter 2>/dev/null; then fail "unknown function accepted"; fi
[ "$(cat set_ftrace_filter)" = "$all" ] || fail "after a failed > write: $(cat set_ftrace_filter)"
if echo kernel_clone no_such_function_xyz vfs_read > set_ftrace_filter 2>/dev/null; then fail "a write with an unknown word accepted"; fi
[ "$(cat set_ftrace_filter)" = kernel_clone ] || fail "the word before the bad one: $(cat set_ftrace_filter)"
echo > set_ftrace_filter
[ "$(cat set_ftrace_filter)" = "$all" ] || fail "cleared: $(cat set_ftrace_filter)"
# A module that is not loaded: cached, listed as written, newest first.
echo ':mod:no_such_mod' > set_ftrace_filter || fail ":mod:"
echo '*:mod:no_such_mod' >> set_ftrace_filter || fail "*:mod:"
[ "$(cat set_ftrace_filter | tr '\n' ' ')" = "*:mod:no_such_mod :mod:no_such_mod " ] || fail "mods: $(cat set_ftrace_filter | tr '\n' ' ')"
if echo '!foo:mod:no_such_mod' >> set_ftrace_filter 2>/dev/null; then fail "removing an uncached mod entry accepted"; fi
echo '!*:mod:no_such_mod' >> set_ftrace_filter || fail "!*:mod:"
[ "$(cat set_ftrace_filter)" = "$all" ] || fail "mods removed: $(cat set_ftrace_filter)"
echo 'vfs_read' > set_ftrace_notrace || fail "notrace"
[ "$(cat set_ftrace_notrace)" = vfs_read ] || fail "notrace: $(cat set_ftrace_notrace)"
echo > set_ftrace_notrace
[ "$(cat set_ftrace_notrace)" = "$none" ] || fail "notrace cleared: $(cat set_ftrace_notrace)"
echo 12 3 > set_ftrace_pid || fail "pids"
[ "$(cat set_ftrace_pid | tr '\n' ' ')" = "3 12 " ] || fail "pids: $(cat set_ftrace_pid | tr '\n' ' ')"
if echo 5 abc >> set_ftrace_pid 2>/dev/null; then fail "a bad pid accepted"; fi
[ "$(cat set_ftrace_pid | tr '\n' ' ')" = "3 12 " ] || fail "after a bad pid: $(cat set_ftrace_pid | tr '\n' ' ')"
echo > set_ftrace_pid
[ "$(cat set_ftrace_pid)" = "no pid" ] || fail "pids cleared: $(cat set_ftrace_pid)"
exit 0
