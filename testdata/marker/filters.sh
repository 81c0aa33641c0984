# trace_marker writes longer than one entry holds: the kernel takes what
# fits (a short write) and a shell's full_write writes the rest, which
# becomes the next entry. Prints each write's entries' lengths.
for n in 1000 1024 1025 2000 4054 4055 4078 5000; do
  echo > trace
  s=$(printf "%${n}s" "" | tr ' ' X)
  echo -n "$s" > trace_marker
  echo "n=$n entries: $(grep tracing_mark_write trace | sed 's/.*tracing_mark_write: //' | awk '{printf "%d ", length($0)}')"
done
