# Prints the CUDA functions named in `names` (space-separated) from a .cu file, each from
# its __global__/__device__ line to the brace that closes it, and every #define outside
# functions (with continuation lines). Used by fetch_originals.sh; our own code.
BEGIN { n = split(names, want, " "); depth = 0; on = 0 }
function wanted(line,   k) {
  for (k = 1; k <= n; k++) if (index(line, want[k] "(") > 0) return 1
  return 0
}
{
  line = $0
  sub(/\r$/, "", line)
  # `__global__ void` alone on a line, the name on the next one
  if (!on && pending != "") { if (wanted(line)) { print pending; on = 1; opened = 0 } pending = "" }
  if (!on && line ~ /^[ \t]*(template[^(]*)?(static[ \t]+)?(__global__|__device__)[ \t]*[A-Za-z_0-9 ]*$/) { pending = line; next }
  if (!on && line ~ /(__global__|__device__)/ && line !~ /^[ \t]*(\/\/|#)/ && line !~ /;[ \t]*$/ && wanted(line)) { on = 1; opened = 0 }
  if (!on && line ~ /^[ \t]*#[ \t]*define/) { print line; while (line ~ /\\$/) { getline line; print line }; next }
  if (on) {
    print line
    m = split(line, ch, "")
    for (k = 1; k <= m; k++) { if (ch[k] == "{") { depth++; opened = 1 } else if (ch[k] == "}") depth-- }
    if (opened && depth == 0) { on = 0; print "" }
  }
}
