# srq - the stop/resume queue toolkit.
#   make            build bin/
#   make deps       install the Debian packages srq needs (when missing)
#   make test       unit tests under ASan+UBSan, a fuzz smoke, then every bats
#                   suite on one Redis server and again on a Redis Cluster
#   make test-cluster  the bats suites on a local Redis Cluster only (3 masters, a replica each)
#   make fuzz       the libFuzzer targets, each for FUZZ_SECONDS (60)
#   make demo       a local Redis, sr-gwsim and a sample of cards, end to end
#   make bench      benchmarks (bench/): each figure and its ratio to a yardstick
#                   of the same run; BullMQ beside them when node is here
#   make man        man pages (build/man) from their sources in man/
#   make install PREFIX=/usr/local DESTDIR=
#   make install-units  the systemd units (share/systemd), their paths set,
#                   in UNITDIR: the other way to run srq than the crontab

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/srq
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SHAREDIR ?= $(PREFIX)/share/srq
# sr-gwsim is a test and demo tool, kept out of the production tools' PATH.
LIBEXECDIR ?= $(PREFIX)/lib/srq
# Where systemd looks for units installed under PREFIX (/usr/local/lib/...
# and /usr/lib/... are both on its path).
UNITDIR ?= $(PREFIX)/lib/systemd/system
PKG_CONFIG ?= pkg-config
CC ?= cc

CFLAGS ?= -g -O2
WARN = -std=c11 -Wall -Wextra -Werror -Wstrict-prototypes -Wwrite-strings -Wno-format-truncation
override CFLAGS += $(WARN) \
	-D_POSIX_C_SOURCE=200809L -Isrc/lib \
	$(shell $(PKG_CONFIG) --cflags hiredis libcurl jansson libcrypto)
LDLIBS = $(shell $(PKG_CONFIG) --libs hiredis libcurl jansson libcrypto) -lcsv
MHD_LIBS = $(shell $(PKG_CONFIG) --libs libmicrohttpd)

# Sanitizer build (make test uses it): separate object dir, same sources.
ifeq ($(SAN),1)
  override CFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  override LDFLAGS += -fsanitize=address,undefined
  OUT = build/san
else
  OUT = build/rel
endif
BIN = $(if $(filter 1,$(SAN)),build/san/bin,bin)

# Fuzzing build (make fuzz uses it): libFuzzer needs clang, whatever CC is.
# The library is instrumented for coverage (fuzzer-no-link); each target
# links libFuzzer's main. -Wno-unknown-warning-option: clang does not know
# every gcc -Wno- above.
FUZZ_CC ?= clang
ifeq ($(FUZZING),1)
  override CC := $(FUZZ_CC)
  override CFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -Wno-unknown-warning-option
  OUT = build/fuzz/obj
endif

TOOLS = sr-enqueue sr-claim sr-exec sr-confirm dev-eval sr-asset sr-stat sr-admin sr-sweep sr-rate sr-gwsim
# The production tools, and the cron wrappers (shell scripts in cron/, with
# what they share in cron/srq-lib.sh).
PROD_TOOLS = $(filter-out sr-gwsim,$(TOOLS))
SCRIPTS = srq-drain srq-expiry-scan srq-page
UNITS = $(wildcard share/systemd/*.service share/systemd/*.timer)
MANS = $(TOOLS:%=build/man/%.1) $(SCRIPTS:%=build/man/%.1)
VERSION := $(shell sed -n 's/^\#define SR_VERSION "\(.*\)"/\1/p' src/lib/sr.h)
# Bash completion, generated from the tools' --help (see its rule below).
COMPLETION = share/bash-completion/srq
# Every script in share/lua is embedded; includes/ holds the pieces they share.
LUA = $(sort $(wildcard share/lua/*.lua))
LUA_INC = $(wildcard share/lua/includes/*.lua)
# The library: every file in src/lib (one job each, its API in the .h of
# the same name), and the two made from share/ (the Lua scripts, the
# default profile). A tool is src/TOOL.c, or the files of a directory of
# its own, src/NAME/ for sr-NAME: a new file needs no line here.
GEN = src/lib/sr_lua_gen.c src/lib/sr_profile_gen.c
LIBOBJ = $(patsubst src/%.c,$(OUT)/%.o,$(sort $(wildcard src/lib/*.c) $(GEN)))
# sr-gwsim, the carrier simulator, is not srq: it is sim/ (one file per
# carrier API shape).
tool_src = $(if $(filter sr-gwsim,$(1)),$(wildcard sim/*.c),$(or $(wildcard src/$(1).c),$(wildcard src/$(1:sr-%=%)/*.c)))
tool_obj = $(patsubst sim/%.c,$(OUT)/sim/%.o,$(patsubst src/%.c,$(OUT)/%.o,$(call tool_src,$(1))))
# Every tests/unit/test_NAME.c is a unit test: a new one needs no line here.
UNIT = $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
# libFuzzer targets, tests/fuzz/fuzz_NAME.c, each with a seed corpus in
# tests/fuzz/corpus/NAME and a dictionary tests/fuzz/NAME.dict.
FUZZ_TARGETS = jsonl csv records classify
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10

# The tests' LD_PRELOAD shim that steps redis-server's wall clock
# (tests/helpers/clockshift.c, for tests/props/clock.bats): never sanitized, it
# goes into a redis-server that is not.
SHIM = build/clockshift.so

all: $(TOOLS:%=$(BIN)/%) $(SHIM) $(COMPLETION)

$(SHIM): tests/helpers/clockshift.c
	@mkdir -p build
	@echo "  CC      $@"
	@$(CC) $(WARN) -O2 -fPIC -shared -o $@ $< -ldl

# The Lua scripts are embedded: what is installed is exactly what Redis runs.
# scripts/lua-embed expands the includes and generates the enum of scripts.
# One grouped rule for both files: every object that includes the enum is
# rebuilt whenever a script is added or removed.
src/lib/sr_lua_gen.c src/lib/sr_lua_gen.h &: $(LUA) $(LUA_INC) scripts/lua-embed
	@scripts/lua-embed src/lib/sr_lua_gen $(LUA)

# The default carrier profile is built in, from the file that documents it.
src/lib/sr_profile_gen.c: share/profiles/default.profile
	@{ echo '/* generated from $< by make; do not edit */'; \
	   echo 'const char sr_default_profile[] ='; \
	   sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	   echo ';'; } > $@.tmp && mv $@.tmp $@

# Each object's headers are found by the compiler (-MMD: a .d file beside
# it), the generated enum made before the first.
$(OUT)/%.o: src/%.c | src/lib/sr_lua_gen.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(OUT)/sim/%.o: sim/%.c | src/lib/sr_lua_gen.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(wildcard $(OUT)/*.d $(OUT)/*/*.d)

# Every tool from its own objects and the library's; sr-gwsim serves HTTP
# with libmicrohttpd, on threads.
define tool_rule
$(BIN)/$(1): $(call tool_obj,$(1)) $(LIBOBJ)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS) $(if $(filter sr-gwsim,$(1)),$$(MHD_LIBS) -lpthread)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

$(OUT)/test_%: tests/unit/test_%.c $(LIBOBJ)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT:%=$(OUT)/%)
	@for t in $^; do $$t || exit 1; done

# The shipped carrier profiles (every one but the built-in default),
# compiled into fuzz_classify: a target and its reproducers then need no
# file beside them, and a new profile is fuzzed with no list to keep.
FUZZ_PROFILES = $(filter-out share/profiles/default.profile,$(wildcard share/profiles/*.profile))
# (Its shape is made here: a tree built by an older Makefile makes it again.)
build/fuzz/fuzz_profiles.c: $(FUZZ_PROFILES) Makefile
	@mkdir -p build/fuzz
	@{ echo '/* generated from share/profiles by make; do not edit */'; \
	   echo 'const char *const fuzz_profile_name[] = {'; \
	   for f in $(FUZZ_PROFILES); do echo "\"$$(basename $$f .profile)\","; done; \
	   echo '0 };'; \
	   echo 'const char *const fuzz_profile_text[] = {'; \
	   for f in $(FUZZ_PROFILES); do \
	     sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; \
	     echo ','; \
	   done; echo '0 };'; } > $@.tmp && mv $@.tmp $@

build/fuzz/fuzz_classify: build/fuzz/fuzz_profiles.c

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(LIBOBJ)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $(filter %.c %.o,$^) $(LDLIBS)

fuzz-bin: $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)

# Each target for FUZZ_SECONDS on a fresh copy of its corpus (what it finds
# stays under build/); any crash, leak or sanitizer report fails.
fuzz:
	$(MAKE) FUZZING=1 fuzz-bin
	./scripts/fuzz-run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

deps:
	./scripts/deps.sh

# The whole suite: the size budgets (scripts/shape), every source file
# saying its job (scripts/layout), unit tests, a short run of each fuzz
# target (about 40 s) and the bats suites, on one Redis server and then on
# a Redis Cluster, all on sanitizer builds; then how long it took. The builds use both cores; the suites run TEST_JOBS files at a
# time (a test spends most of its time waiting: intervals, leases, an
# outage's 30 s), the tests of a file in order. CI's budget is 30 minutes.
TEST_JOBS ?= 4
test: deps
	@start=$$(date +%s); \
	{ scripts/shape && scripts/layout >/dev/null && \
	  $(MAKE) -j2 SAN=1 unit all && \
	  $(MAKE) -j2 fuzz-smoke && \
	  $(MAKE) -j2 all && \
	  { SRQ_BIN="$(CURDIR)/build/san/bin" SRQ_TEST_JOBS=$(TEST_JOBS) tests/run; one=$$?; \
	    $(MAKE) test-cluster && [ $$one = 0 ]; }; }; rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s ($$( [ $$rc = 0 ] && echo passed || echo FAILED))"; \
	exit $$rc

# The bats suites again, each test's Redis a local 3-master cluster instead
# of one server (tests/test_helper.bash, SRQ_TEST_REDIS); the files
# tagged own-redis start their own Redis either way and run once, above.
test-cluster:
	$(MAKE) SAN=1 all
	SRQ_BIN="$(CURDIR)/build/san/bin" SRQ_TEST_REDIS=cluster SRQ_TEST_JOBS=$(TEST_JOBS) \
		tests/run --filter-tags '!own-redis' tests

# Man pages: written as pages, in mdoc, one per tool in man/ (from its
# --help and the README); make puts the version in. tests/tools/man.bats renders
# each, fails on any warning, and fails when an option the tool's --help
# lists is not in its page. (Each file is written aside and renamed into
# place: two makes at once, as two test files may run, never show a reader
# half a file.)
man: $(MANS)

build/man/%.1: man/%.1 src/lib/sr.h
	@mkdir -p build/man
	@sed 's/@VERSION@/$(VERSION)/g' $< >$@.$$$$ && mv -f $@.$$$$ $@

# Bash completion: each tool's options, those that take a value or a file,
# the values an option lists, sr-admin's commands and the scenes, read from
# the tools' --help as built (scripts/completion-gen, scripts/help-options):
# completion offers what a tool takes, a new option with no edit here.
$(COMPLETION): share/bash-completion/srq.in scripts/completion-gen scripts/help-options \
		$(TOOLS:%=$(BIN)/%) $(SCRIPTS:%=cron/%)
	@echo "  GEN     $@"
	@scripts/completion-gen $(TOOLS:%=$(BIN)/%) $(SCRIPTS:%=cron/%) >$@.$$$$ && mv -f $@.$$$$ $@

# The production tools and the cron wrappers in BINDIR (each told where
# srq-lib.sh is: LIBEXECDIR, when it is not beside it); sr-gwsim and
# srq-lib.sh apart in LIBEXECDIR; man pages; bash completion (one file, linked under every
# tool's name, which is how bash-completion finds it); the README, docs/*.md
# (in DOCDIR/docs, as in the tree, so that the README's links to them and
# theirs back resolve there too) and the crontab example as documentation;
# in SHAREDIR, the Prometheus rules (with
# their unit tests, to run again after editing a threshold) and the Grafana
# dashboard, for the operator's monitoring to load; and the example carrier
# profiles with their recorded answers, which a profile's 'from = NAME'
# finds there (the tools look in ../share/srq/profiles from their own
# directory: keep SHAREDIR beside BINDIR). The Lua scripts are compiled into
# the binaries.
install: all man
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(COMPLETIONDIR) \
		$(DESTDIR)$(SHAREDIR)/prometheus $(DESTDIR)$(SHAREDIR)/grafana $(DESTDIR)$(SHAREDIR)/profiles
	install -m0755 $(PROD_TOOLS:%=bin/%) $(DESTDIR)$(BINDIR)
	for s in $(SCRIPTS); do \
		sed 's|@LIBEXECDIR@|$(LIBEXECDIR)|g' cron/$$s >$(DESTDIR)$(BINDIR)/$$s && \
		chmod 0755 $(DESTDIR)$(BINDIR)/$$s || exit 1; \
	done
	install -m0755 bin/sr-gwsim $(DESTDIR)$(LIBEXECDIR)
	install -m0644 cron/srq-lib.sh $(DESTDIR)$(LIBEXECDIR)
	install -m0644 $(MANS) $(DESTDIR)$(MANDIR)/man1
	install -m0644 README.md cron/crontab.example $(DESTDIR)$(DOCDIR)
	install -m0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs
	install -m0644 share/bash-completion/srq $(DESTDIR)$(COMPLETIONDIR)/srq
	install -m0644 share/prometheus/srq.rules.yml share/prometheus/srq.rules.test.yml \
		$(DESTDIR)$(SHAREDIR)/prometheus
	install -m0644 share/grafana/srq.json $(DESTDIR)$(SHAREDIR)/grafana
	install -m0644 share/profiles/*.profile share/profiles/*.test.jsonl $(DESTDIR)$(SHAREDIR)/profiles
	for t in $(PROD_TOOLS) $(SCRIPTS); do ln -sf srq $(DESTDIR)$(COMPLETIONDIR)/$$t; done

# The systemd units, each with the tools' path (BINDIR) put in: a service
# for the drain and one for dev-eval, run continuously; a timer and its
# service for the expiry scan, the sweep and sr-stat; the notify template
# their failures page through (srq-page). tests/props/systemd.bats verifies them.
install-units:
	mkdir -p $(DESTDIR)$(UNITDIR)
	for u in $(UNITS); do \
		sed 's|@BINDIR@|$(BINDIR)|g' $$u >$(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; \
	done

demo: deps
	$(MAKE) all
	./scripts/demo.sh

bench: all
	@mkdir -p build
	./bench/core.sh | tee build/bench-core.jsonl
	@bench/table <build/bench-core.jsonl
	./bench/instructions.sh
	./bench/layout.sh
	./bench/cluster.sh
	./bench/asset.sh
	./bench/rate.sh
	SRQ_RATE_WINDOW_MS=1000 ./bench/rate.sh
	./bench/latency.sh

# The lists above, for what must know every tool (the tests, the
# completion): make -s print-tools, print-prod-tools, print-scripts.
print-tools:
	@echo $(TOOLS)
print-prod-tools:
	@echo $(PROD_TOOLS)
print-scripts:
	@echo $(SCRIPTS)

clean:
	rm -rf build bin src/lib/sr_lua_gen.c src/lib/sr_lua_gen.h src/lib/sr_profile_gen.c $(COMPLETION)

.PHONY: all deps unit fuzz fuzz-bin fuzz-smoke test test-cluster man install install-units demo bench clean \
	print-tools print-prod-tools print-scripts
