# tests/support/otf2.sh - sourced by the scripts of the OTF2 export
# (export-otf2.sh, export-otf2-disk-full.sh, build-follows.sh).
#
# otf2_headers: are the OTF2 3 headers installed (the Makefile's probe for
#   HAVE_OTF2, with $CC)? Where they are, a build without OTF2 support is
#   a build that missed them: its export's fallback is a failure, not a
#   reason to skip.
otf2_headers() {
  printf '#include <otf2/otf2.h>\n#if OTF2_VERSION_MAJOR < 3\n#error\n#endif\n' |
    ${CC:-cc} -E -x c - >/dev/null 2>&1
}
