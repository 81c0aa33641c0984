# The permissions of the kernel's tracefs, for ktrace's goldens: `ls -lan`
# of every directory ktrace emulates (dates dropped), with a kprobe event,
# a return probe, an event in its own group and (where the kernel has
# fprobe events) an fprobe, first as mounted without options, then after
# the mount options uid=1000,gid=1000,mode=0750, with one more event
# defined after them. Runs in the guest's tracefs:
#   tools/vmsh 6.12 testdata/perms/capture.sh > testdata/perms/ls-6.12.txt
#   tools/vmsh 6.1 testdata/perms/capture.sh > testdata/perms/ls-6.1.txt
T=/sys/kernel/tracing
echo 'p:myev vfs_read' >> $T/kprobe_events
echo 'r:myret vfs_read' >> $T/kprobe_events
echo 'p:grp2/ev2 vfs_write' >> $T/kprobe_events
echo 'f:fev vfs_read' >> $T/dynamic_events 2>/dev/null
list() {
	for d in "" /events /events/kprobes /events/kprobes/myev /events/kprobes/myret \
		/events/grp2 /events/grp2/ev2 /events/fprobes /events/fprobes/fev $1; do
		[ -d $T$d ] || continue
		echo "== $T$d"
		ls -lan $T$d | sed -E 's/ +[A-Z][a-z]{2} +[0-9]+ +[0-9:]{4,5} / /'
	done
}
echo "### options: none"
list
mount -t tracefs -o remount,uid=1000,gid=1000,mode=0750 nodev $T || echo "remount failed: $?"
echo 'p:after vfs_read' >> $T/kprobe_events
echo "### options: uid=1000,gid=1000,mode=0750"
grep " $T " /proc/mounts
list /events/kprobes/after
