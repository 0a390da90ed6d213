# tests/bench.mk - `make bench`: every hot path's figure, one line each:
#   BENCH <name> <value> <unit>
# Each program under tests/bench/bench_<name>.c is white-box (linked with the
# library objects) and prints its own BENCH lines, with a same-run baseline
# where one exists. Targets live here, never in timed unit tests.

BENCH_SRCS := $(wildcard tests/bench/bench_*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)

$(B)/bench/bench_%: tests/bench/bench_%.c $(LIB_OBJS) $(AN_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_OBJS) $(AN_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm

bench: deps-bench
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS)
	$(Q)for b in $(BENCH_BINS); do $$b || exit 1; done
