# buffer_subbuf_size_kb: the sizes it takes (rounded up to a power of two
# of 4 KiB pages, at most 128 pages), the ones it refuses, the data size
# events/header_page shows, and the trace emptied by a change.
[ -e buffer_subbuf_size_kb ] || { echo "no buffer_subbuf_size_kb"; exit 0; }
w() { echo "$2" > "$1"; echo "w $1 [$2] rc=$? -> $(cat $1)"; }
cat buffer_subbuf_size_kb
echo hello > trace_marker
w buffer_subbuf_size_kb 4
echo "kept: $(grep -c hello trace)"
for v in 8 1 3 5 7 9 16 17 511 512 513 0 1024 abc -1 " 4" +8 8; do w buffer_subbuf_size_kb "$v"; done
grep data events/header_page
echo hello > trace_marker
w buffer_subbuf_size_kb 8
echo "kept: $(grep -c hello trace)"
w buffer_subbuf_size_kb 64
echo "emptied: $(grep -c hello trace)"
grep data events/header_page
mkdir instances/sb
cat instances/sb/buffer_subbuf_size_kb
grep data instances/sb/events/header_page
rmdir instances/sb
w buffer_subbuf_size_kb 4
grep data events/header_page
