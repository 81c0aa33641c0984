# The function_graph tracer's selection files, with no tracer running:
# what set_graph_function, set_graph_notrace and max_graph_depth take and
# show. Runs in a tracefs directory; every step prints its exit status.
w() { # FILE TEXT [append]
	if [ -n "$3" ]; then echo "$2" >> "$1"; else echo "$2" > "$1"; fi
	echo "w $1 [$2]${3:+ >>} rc=$?"
}
echo "== initial"
cat set_graph_function set_graph_notrace max_graph_depth
echo "== max_graph_depth"
for v in 3 +4 abc -1 0x10 " 5" 4294967295 4294967296 4294967299 18446744073709551615 18446744073709551616 ""; do
	w max_graph_depth "$v"; cat max_graph_depth
done
w max_graph_depth 0
echo "== set_graph_function"
w set_graph_function vfs_read; cat set_graph_function
w set_graph_function nosuch; cat set_graph_function
w set_graph_function 'vfs_*'; grep -c . set_graph_function
w set_graph_function '!vfs_read' a; grep -c . set_graph_function
w set_graph_function '!vfs_read' a; grep -c . set_graph_function
w set_graph_function '!nosuch' a; grep -c . set_graph_function
w set_graph_function 'ksys_read ksys_write'; cat set_graph_function
w set_graph_function 'ksys_read' a; cat set_graph_function
for x in 'vfs_read:mod:x' 'vfs_read:traceon' '*:mod:!' ':mod:' 'vfs_read:'; do
	w set_graph_function "$x" a
done
cat set_graph_function
w set_graph_function '1'; cat set_graph_function
w set_graph_function 'vfs_read nosuch vfs_write'; cat set_graph_function
w set_graph_function 'sched*' ; grep -c . set_graph_function
w set_graph_function 'vfs_read vfs_write ksys_read ksys_write do_sys_openat2 schedule kernel_clone do_exit'; cat set_graph_function
w set_graph_function '*_read' ; grep -c . set_graph_function
w set_graph_function '' ; cat set_graph_function
echo "== set_graph_notrace"
w set_graph_notrace vfs_read; cat set_graph_notrace
w set_graph_notrace 'rw_verify_area' a; cat set_graph_notrace
w set_graph_notrace nosuch; cat set_graph_notrace
w set_graph_notrace '*lock*'; grep -c . set_graph_notrace
w set_graph_notrace ''; cat set_graph_notrace
echo "-- the function tracer's lists are others"
w set_ftrace_filter vfs_write
cat set_graph_function set_graph_notrace set_ftrace_filter
w set_ftrace_filter ''
echo "-- not in instances"
mkdir instances/gf
ls instances/gf | grep 'graph'; echo "grep rc=$?"
rmdir instances/gf
