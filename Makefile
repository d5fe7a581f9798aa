# onionfront — one non-recursive Makefile (no autotools).
#
#   make            build build/onionfront (release flags)
#   make test       install what is missing, build with ASan/UBSan, run unit, fuzz-smoke and integration tests;
#                   the fuzz smoke (tests/fuzz/smoke.sh) is the same work every time: each target replays
#                   tests/fuzz/seeds/<target>/ and tests/fuzz/regressions/<target>/, then FUZZ_SMOKE_RUNS
#                   (default 30000) inputs from -seed=FUZZ_SMOKE_SEED (default 1); no corpus of earlier runs
#   make unit       only the cmocka unit tests (and build/tools/promcheck, which test_proxy runs)
#   make stress-test  make test on RUNS (default 3) fresh clones of HEAD, each beside a CPU hog of two busy
#                   processes (tests/stress-make-test.sh; MAKE_TARGET=unit for a quick run)
#   make demo       install, build, run onionfront on a private local Tor network and fetch a page
#   make bench      benchmarks (not part of make test)
#   make soak       soak test, SOAK_SECONDS (default 600) on a private network (not part of make test)
#   make fuzz       build libFuzzer targets and run each FUZZ_SECONDS (default 600), random seed, corpus kept in
#                   tests/fuzz/corpus-<target>/; a crash input is written to build/fuzz/artifacts/<target>/:
#                   fix the bug, then add the input to tests/fuzz/regressions/<target>/ (tests/fuzz/README.md)
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean
#
# V=1 shows the commands. SANITIZE= overrides the test builds' sanitizers.

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_RUNS ?= 30000
FUZZ_SMOKE_SEED ?= 1
export FUZZ_SMOKE_RUNS FUZZ_SMOKE_SEED
SANITIZE ?= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

PKGS := libevent jansson libcurl openssl libsodium
# Evaluated once; silent when pkg-config is not installed yet (the deps step installs it and re-runs make).
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -I. $(PKG_CFLAGS) -MMD -MP
REL_CFLAGS := $(BASE_CFLAGS) -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2 $(CFLAGS)
SAN_CFLAGS := $(BASE_CFLAGS) -O1 -g $(SANITIZE) $(CMOCKA_CFLAGS) $(CFLAGS)
FUZZ_CFLAGS := $(BASE_CFLAGS) -O1 -g -fsanitize=fuzzer-no-link,address,undefined -DFUZZING
LIBS := $(PKG_LIBS) -lm

ifeq ($(V),1)
Q :=
else
Q := @
endif

CP_SRC := $(sort $(wildcard controlproto/*.c))
SIDECAR_LIB_SRC := $(sort $(filter-out sidecar/main.c,$(wildcard sidecar/*.c sidecar/*/*.c)))
TEST_SUPPORT_SRC := $(sort $(wildcard tests/fake/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
ITEST_SRC := $(sort $(wildcard tests/integration/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
TOOLS_SRC := $(sort $(wildcard tests/tools/*.c))
TOOLS_BIN := $(patsubst tests/tools/%.c,build/tools/%,$(TOOLS_SRC))

# Generated sources: the torrc template compiled into the binary (see sidecar/tor/torrc.h).
GEN_SRC := build/gen/torrc_template.c
REL_LIB_OBJ := $(patsubst %.c,build/rel/%.o,$(CP_SRC) $(SIDECAR_LIB_SRC)) build/rel/gen/torrc_template.o
SAN_LIB_OBJ := $(patsubst %.c,build/san/%.o,$(CP_SRC) $(SIDECAR_LIB_SRC)) build/san/gen/torrc_template.o
SAN_SUPPORT_OBJ := $(patsubst %.c,build/san/%.o,$(TEST_SUPPORT_SRC))
FUZZ_LIB_OBJ := $(patsubst %.c,build/fuzz/%.o,$(CP_SRC) $(SIDECAR_LIB_SRC)) build/fuzz/gen/torrc_template.o

UNIT_BIN := $(patsubst tests/unit/%.c,build/test/%,$(UNIT_SRC))
ITEST_BIN := $(patsubst tests/integration/%.c,build/test/%,$(ITEST_SRC))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build/fuzz/bin/%,$(FUZZ_SRC))

.PHONY: all deps deps-bench test test-run stress-test unit integration fuzz fuzz-build fuzz-smoke demo bench soak install clean check-layering
.DEFAULT_GOAL := all
# Keep object files that only pattern chains reach (make would delete them as intermediates).
.SECONDARY:

all: build/onionfront $(TOOLS_BIN)

# Test and demo helpers (a backend web server ...): plain builds, not part of the daemon.
build/tools/%: build/rel/tests/tools/%.o $(REL_LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD tool $@"
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBS)

# Test-only LD_PRELOAD shim (tests/preload/slowfs.c): widens a race window in test_privilege.sh.
build/test/slowfs.so: tests/preload/slowfs.c
	@mkdir -p $(dir $@)
	@echo "  LD shim $@"
	$(Q)$(CC) $(REL_CFLAGS) -fPIC -shared -o $@ $< -ldl

# Bench-only harness (make bench): onionfront's data path without tor, linked like the tools.
build/bench/proxybench: build/rel/tests/bench/proxybench.o $(REL_LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD bench $@"
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBS)

build/onionfront: build/rel/sidecar/main.o $(REL_LIB_OBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBS)

# The sanitizer build of the daemon, used by the integration tests.
build/onionfront-san: build/san/sidecar/main.o $(SAN_LIB_OBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN_CFLAGS) -o $@ $(filter %.o,$^) $(LIBS)

build/gen/torrc_template.c: templates/torrc.in
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	$(Q){ echo '/* generated from templates/torrc.in by the Makefile */'; \
	  echo '#include "sidecar/tor/torrc.h"'; echo 'const char torrc_template[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@

build/rel/gen/%.o: build/gen/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REL_CFLAGS) -c -o $@ $<

build/san/gen/%.o: build/gen/%.c
	@mkdir -p $(dir $@)
	@echo "  CC san  $<"
	$(Q)$(CC) $(SAN_CFLAGS) -c -o $@ $<

build/fuzz/gen/%.o: build/gen/%.c
	@mkdir -p $(dir $@)
	@echo "  CC fuzz $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

build/rel/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REL_CFLAGS) -c -o $@ $<

build/san/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC san  $<"
	$(Q)$(CC) $(SAN_CFLAGS) -c -o $@ $<

build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC fuzz $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# A unit test that counts calls across modules wraps them at link time (TEST_LDFLAGS_<test>): its
# __wrap_f counts and calls __real_f, and the code under test is left as it ships.
TEST_LDFLAGS_test_torscrape := -Wl,--wrap=onion_address_cmp,--wrap=onion_address_equal

build/test/%: build/san/tests/unit/%.o $(SAN_LIB_OBJ) $(SAN_SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD test $@"
	$(Q)$(CC) $(SAN_CFLAGS) -o $@ $(filter %.o,$^) $(TEST_LDFLAGS_$*) $(LIBS) $(CMOCKA_LIBS)

$(ITEST_BIN): build/test/%: build/san/tests/integration/%.o $(SAN_LIB_OBJ) $(SAN_SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD test $@"
	$(Q)$(CC) $(SAN_CFLAGS) -o $@ $(filter %.o,$^) $(LIBS) $(CMOCKA_LIBS)

build/fuzz/bin/%: build/fuzz/tests/fuzz/%.o $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD fuzz $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(LIBS)

deps:
	@sh tests/install-deps.sh test

deps-bench:
	@sh tests/install-deps.sh bench

# make test: install, then re-run make so pkg-config sees the freshly installed packages.
test: deps
	@$(MAKE) --no-print-directory -j$$(nproc 2>/dev/null || echo 2) test-run

test-run: all build/onionfront-san $(UNIT_BIN) $(ITEST_BIN) build/test/slowfs.so fuzz-build check-layering
	@sh tests/run-tests.sh

# Not part of make test: it runs make test itself, RUNS times.
stress-test:
	@bash tests/stress-make-test.sh

unit: $(UNIT_BIN) build/tools/promcheck
	@sh tests/run-tests.sh unit

integration: all build/onionfront-san $(ITEST_BIN) build/test/slowfs.so
	@sh tests/run-tests.sh integration

fuzz-build: $(FUZZ_BIN)

fuzz-smoke: fuzz-build
	@sh tests/run-tests.sh fuzz

fuzz: deps
	@$(MAKE) --no-print-directory -j$$(nproc 2>/dev/null || echo 2) fuzz-build
	@for f in $(FUZZ_BIN); do \
	  n=$$(basename $$f); mkdir -p tests/fuzz/corpus-$$n build/fuzz/artifacts/$$n; \
	  echo "== $$n for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/$$n/ \
	    tests/fuzz/corpus-$$n $$(ls -d tests/fuzz/seeds/$$n tests/fuzz/regressions/$$n 2>/dev/null) \
	    > build/fuzz/artifacts/$$n.log 2>&1; rc=$$?; tail -n 12 build/fuzz/artifacts/$$n.log; \
	  if [ $$rc -ne 0 ]; then \
	    echo "$$n failed: the input is in build/fuzz/artifacts/$$n/; once fixed, add it to tests/fuzz/regressions/$$n/"; \
	    exit 1; \
	  fi; \
	done

# Includes run only downward between folders, never in a circle: each folder's .may_include names what
# it may include (controlproto/ nothing of onionfront); tests/check-layering.sh says which file broke which rule,
# and tests/check-layering-selftest.sh shows it failing on a copy of the tree with an upward include or a circle.
check-layering:
	@sh tests/check-layering.sh
	@sh tests/check-layering-selftest.sh

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc 2>/dev/null || echo 2) all
	@bash tests/demo.sh

bench: deps-bench
	@$(MAKE) --no-print-directory all build/bench/proxybench
	@bash tests/bench/run.sh

# make soak [SOAK_SECONDS=600]: load and integrity through the full path on a private Tor network
# (tests/soak/run.sh; not part of make test).
soak: deps
	@$(MAKE) --no-print-directory -j$$(nproc 2>/dev/null || echo 2) all build/onionfront-san $(TOOLS_BIN)
	@bash tests/soak/run.sh

# make install [PREFIX=/usr/local] [DESTDIR=]: the daemon, man pages, templates, the operator documentation
# (DOC_FILES), systemd units (their ExecStart follows BINDIR) and the sysusers.d entry for the
# unit's user. tests/integration/test_install.sh checks the result and follows the README's production
# install.
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/onionfront
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/onionfront
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# The operator documentation, installed under DOCDIR with the source tree's layout so that the README's
# and the pages' relative links resolve there: the README, docs/ and every other page they link
# (test_install.sh checks every relative link of the installed tree).
DOC_FILES := README.md $(sort $(wildcard docs/*.md)) systemd/README.md docker/README.md tests/bench/RESULTS.md tests/bench/README.md \
  tests/testnet/README.md

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	install -m 0755 build/onionfront $(DESTDIR)$(BINDIR)/onionfront
	install -m 0644 templates/torrc.in templates/*.json templates/*.conf templates/*.yml $(DESTDIR)$(DATADIR)/
	for f in $(DOC_FILES); do install -D -m 0644 "$$f" "$(DESTDIR)$(DOCDIR)/$$f" || exit 1; done
	install -m 0644 sidecar/onionfront.1 $(DESTDIR)$(MANDIR)/man1/onionfront.1
	install -m 0644 sidecar/onionfront.json.5 $(DESTDIR)$(MANDIR)/man5/onionfront.json.5
	for u in systemd/*.service systemd/*.path; do \
	  sed -e 's|/usr/bin/onionfront|$(BINDIR)/onionfront|g' "$$u" > $(DESTDIR)$(SYSTEMDUNITDIR)/$${u#systemd/} && \
	  chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$${u#systemd/} || exit 1; \
	done
	install -m 0644 systemd/onionfront.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/onionfront.conf

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
