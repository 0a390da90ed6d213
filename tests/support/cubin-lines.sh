#!/usr/bin/env bash
# cubin-lines.sh CUBIN - the source lines of a cubin's instructions as
# binutils' readelf decodes them, the truth check_an_gpudwarf compares the
# analysis (libdw, an_gpudwarf.c) with. One line per address range that a
# line-table row covers:
#   FUNCTION START END FILE LINE     (START..END-1: offsets in FUNCTION)
# readelf prints each sequence's rows in program order, addresses relative
# to the function (cubins keep every .text.<kernel> at address 0); the k-th
# sequence is the function of the k-th relocation of .debug_line, by offset
# (its DW_LNE_set_address). A row followed by one at the same address
# covers nothing and is left out.
set -eu
cubin=$1
syms=$(readelf -rW "$cubin" 2>/dev/null | awk '
  /^Relocation section / { on = ($3 == "'"'"'.rela.debug_line'"'"'") ; next }
  on && $1 ~ /^[0-9a-f]+$/ { # offset info type... value name + addend
    for (i = 3; i < NF; i++) if ($(i + 1) == "+") print $1, $i
  }' |
  sort | awk '{ print $2 }')
[ -n "$syms" ] || { echo "cubin-lines.sh: $cubin: no .rela.debug_line" >&2; exit 1; }
readelf -W --debug-dump=decodedline "$cubin" 2>/dev/null | awk -v syms="$syms" '
  function hex(s,   v, i) { # mawk has no strtonum
    v = 0; s = tolower(s); sub(/^0x/, "", s)
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
  }
  BEGIN { nf = split(syms, fn, "\n"); k = 1; have = 0 }
  NF >= 3 && ($2 ~ /^[0-9]+$/ || $2 == "-") && $3 ~ /^(0|0x[0-9a-f]+)$/ {
    a = hex($3)
    if (have && a > addr && line != "-")
      printf "%s %d %d %s %s\n", fn[k], addr, a, file, line
    file = $1; line = $2; addr = a; have = 1
    if ($2 == "-") { k++; have = 0 }
  }
  END { if (k - 1 != nf) { print "cubin-lines.sh: " k - 1 " sequences, " nf " relocations" > "/dev/stderr"; exit 1 } }'
