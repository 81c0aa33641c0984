#!/bin/bash
# mkscript.sh CASES > script.sh: builds a busybox script for tools/vmsh that
# runs each case line of CASES ("D " prefix: write to dynamic_events) on a
# clean tracefs and prints the errno, error_log, readback and format lines.
# (The basic/more/extra/size/btfctx transcripts were made before the
# tracepoints group was added to the format dump.)
cases=$1
cat <<'HDR'
run() {
  f=$1; line=$2
  echo > dynamic_events
  echo > error_log
  echo "=== $line"
  echo "$line" >> $f 2>/tmp/err; rc=$?
  read -r e < /tmp/err; echo "rc=$rc ${e#sh: write error: }"; e=
  while IFS= read -r l; do echo "E: $l"; done < error_log
  while IFS= read -r l; do echo "R: $l"; done < dynamic_events
  for d in events/kprobes/* events/fprobes/* events/tracepoints/*; do
    [ -f $d/format ] || continue
    while IFS= read -r l; do case "$l" in *field:*|print*) echo "F: $l";; esac; done < $d/format
  done
}
while IFS= read -r c; do
  case "$c" in "D "*) run dynamic_events "${c#D }";; "#"*|"") ;; *) run kprobe_events "$c";; esac
done <<'CASES'
HDR
cat "$cases"
echo CASES
