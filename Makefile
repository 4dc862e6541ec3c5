# costbench: one non-recursive Makefile.
#   make          build ./costbench (installs the Debian packages first when missing)
#   make test     build and run the tests
#   make report   measure this machine and write out/report.md
#   make test SAN=1   the same tests built with -fsanitize=address,undefined,float-cast-overflow (in build-san/)
#   make WERROR=1     warnings as errors (CI)

CC      ?= cc
SAN     ?=
WERROR  ?=
BUILD   := build
ifeq ($(SAN),1)
BUILD   := build-san
endif

# OpenBLAS: Debian's OpenMP build (libopenblas-openmp-dev), so that sgemm and our own OpenMP
# kernels share one thread pool instead of two pools spinning against each other on the cores;
# the binary is linked with an rpath to it, whatever the system's libopenblas alternative.
DEBIAN_PKGS := libopenblas-dev libopenblas-openmp-dev libgsl-dev libcsv-dev libplplot-dev plplot-driver-cairo pkg-config \
               libopenmpi-dev openmpi-bin
PC_PKGS     := openblas gsl plplot
MULTIARCH   := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
OPENBLAS_DIR := /usr/lib/$(MULTIARCH)/openblas-openmp

WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
OPT     := -O3 -march=native
ifeq ($(SAN),1)
OPT     := -O1 -march=native -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow
endif
ifeq ($(WERROR),1)
WARN    += -Werror
endif
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -g -fopenmp $(OPT) $(WARN)
# Expanded when a recipe runs, after `deps` has installed pkg-config and the libraries.
# GSL's own CBLAS is left out: OpenBLAS provides the cblas_* symbols for GSL and for us.
PKG_CONFIG_ENV = PKG_CONFIG_PATH=$(OPENBLAS_DIR)/pkgconfig
# Open MPI (bench/comm.c) when its pkg-config file is there; without it the binary is one rank.
MPI_PC     = $(shell pkg-config --exists ompi-c 2>/dev/null && echo ompi-c)
PKG_CFLAGS = $(shell $(PKG_CONFIG_ENV) pkg-config --cflags $(PC_PKGS) $(MPI_PC) 2>/dev/null) $(if $(MPI_PC),-DCB_HAVE_MPI)
PKG_LIBS   = $(filter-out -lgslcblas,$(shell $(PKG_CONFIG_ENV) pkg-config --libs $(PC_PKGS) $(MPI_PC) 2>/dev/null)) -lcsv -lm \
             -Wl,-rpath,$(OPENBLAS_DIR)
ALL_CFLAGS = $(BASE_CFLAGS) $(PKG_CFLAGS) -I$(BUILD) $(CFLAGS)
ALL_LDFLAGS = -fopenmp $(OPT) $(LDFLAGS)

LIB_SRC  := $(wildcard common/*.c kernels/*.c model/*.c bench/*.c report/*.c)
CLI_SRC  := $(wildcard src/*.c)
TEST_SRC := $(wildcard tests/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
CLI_NOMAIN := $(filter-out $(BUILD)/src/main.o,$(CLI_OBJ))

ifeq ($(SAN),1)
BIN := $(BUILD)/costbench
else
BIN := costbench
endif
TEST_BIN := $(BUILD)/tests/costbench_tests

.PHONY: all deps test report clean FORCE
all: $(BIN)

deps:
	@missing=""; \
	for p in $(DEBIAN_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q ' installed$$' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "costbench: installing Debian packages:$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing || exit 1; \
	  else \
	    echo "error: missing Debian packages:$$missing" >&2; \
	    echo "hint: run: sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi

# Build identity for result files: rewritten only when it changes.
$(BUILD)/version.h: FORCE | deps
	@mkdir -p $(BUILD)
	@rev=$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); \
	git diff --quiet HEAD 2>/dev/null || rev="$$rev-dirty"; \
	printf '#define CB_GIT_REV "%s"\n#define CB_CFLAGS "%s"\n' "$$rev" "$(CC) $(BASE_CFLAGS)" > $@.tmp; \
	cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/common/machine.o: $(BUILD)/version.h

$(BIN): $(LIB_OBJ) $(CLI_OBJ)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(TEST_BIN): $(TEST_OBJ) $(LIB_OBJ) $(CLI_NOMAIN)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

ifeq ($(SAN),1)
TEST_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1
endif

test: $(BIN) $(TEST_BIN)
	$(TEST_ENV) ./$(TEST_BIN) ./$(BIN)

# The main job: measure this machine and write out/ (see README.md).
report: $(BIN)
	@./report/make_report.sh

clean:
	rm -rf build build-san costbench

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
