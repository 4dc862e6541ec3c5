# costbench: one non-recursive Makefile.
#   make          build ./costbench (installs the Debian packages first when missing)
#   make test     build and run the tests
#   make report   measure this machine and write out/report.md
#   make test SAN=1   the same tests built with -fsanitize=address,undefined,float-cast-overflow (in build-san/)
#   make WERROR=1     warnings as errors (CI)
#   make gpu          ./costbench-gpu, the GPU microbenchmarks (bench/gpu/, kernels/cuda/, src/gpu/),
#                     with the CUDA toolkit and a C compiler alone (no Debian package: a rented GPU
#                     node builds it); `make` builds it too where nvcc is found, and says so where not
#   make test-gpu     the GPU kernels against their references ("no GPU: skipped" without one)
#   make fuzz         libFuzzer runs of the CSV, safetensors and .idx/.bin parsers, the checkpoint
#                     checks of --resume, the log parsers, and `import --out` and `prices import
#                     --out` end to end, built with clang in build-fuzz/ (tests/fuzz/): each harness
#                     tries a fixed number of inputs from a fixed seed over the committed corpus
#                     (tests/fuzz/corpus/), the same inputs every run (CI; about 3 minutes)
#   make fuzz-explore exploratory fuzzing, FUZZ_SECONDS (default 60) each from a fresh random seed;
#                     the inputs that reach new coverage are merged into tests/fuzz/corpus/ (commit
#                     them), a crash's reproducer goes there once the bug is fixed. Run it before
#                     resolving an issue.

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
               libopenmpi-dev openmpi-bin libdnnl-dev libcurl4-openssl-dev
PC_PKGS     := openblas gsl plplot libcurl
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
PKG_LIBS   = $(filter-out -lgslcblas,$(shell $(PKG_CONFIG_ENV) pkg-config --libs $(PC_PKGS) $(MPI_PC) 2>/dev/null)) -ldnnl -lcsv -lm \
             -Wl,-rpath,$(OPENBLAS_DIR)
ALL_CFLAGS = $(BASE_CFLAGS) $(PKG_CFLAGS) -I$(BUILD) $(CFLAGS)
ALL_LDFLAGS = -fopenmp $(OPT) $(LDFLAGS)

LIB_SRC  := $(wildcard common/*.c kernels/*.c model/*.c bench/*.c bench/gpu/*.c report/*.c report/*/*.c)
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

.PHONY: all deps test report clean FORCE fuzz fuzz-explore fuzz-toolchain fuzz-corpus gpu gpu-if-nvcc test-gpu
all: $(BIN) gpu-if-nvcc

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

# ---- the GPU microbenchmarks: ./costbench-gpu from the CUDA toolkit (nvcc, cudart, cuBLASLt) and a
# C compiler alone, so that `make gpu` works on a rented GPU node without Debian's -dev packages:
# the host C is built without libcsv (common/csvmini.h), OpenMP, a BLAS or GSL. Warnings are errors.
# GPU_ARCHS: the machine code built in (A100, H100/H200, B200), with PTX for newer devices.
NVCC      ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
GPU_BUILD := build-gpu
GPU_BIN   := costbench-gpu
GPU_ARCHS ?= 80 90 100
GPU_GENCODE := $(foreach a,$(GPU_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) -gencode arch=compute_100,code=compute_100
GPU_HOST_SRC := common/csvio.c common/err.c common/parse.c common/files.c common/schema.c common/precision.c \
                common/machine.c common/mem.c common/machine_data.c common/presets.c common/params.c common/counts.c common/oplist.c common/record.c common/opts.c \
                report/formats/devices.c report/formats/attncurves.c report/formats/inputs.c \
                kernels/rope.c kernels/bf16.c kernels/ropeplan.c bench/mmshapes.c $(wildcard bench/gpu/*.c src/gpu/*.c)
GPU_CU_SRC   := $(wildcard bench/gpu/*.cu kernels/cuda/*.cu)
GPU_OBJ      := $(GPU_HOST_SRC:%.c=$(GPU_BUILD)/%.o) $(GPU_CU_SRC:%.cu=$(GPU_BUILD)/%.o)
GPU_CFLAGS   := -std=c11 -D_GNU_SOURCE -DCB_NO_LIBCSV -g -O2 -march=native $(WARN) -Werror -Wno-unknown-pragmas \
                -I$(GPU_BUILD)
NVCC_FLAGS   := -std=c++17 -O3 -g -lineinfo $(GPU_GENCODE) -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror

gpu-if-nvcc:
ifeq ($(NVCC),)
	@echo "costbench: no nvcc (CUDA toolkit) found: the GPU microbenchmarks (make gpu) are skipped"
else
	@$(MAKE) --no-print-directory gpu
endif

gpu: $(GPU_BIN)

# The build identity common/machine.c writes into every row (its own version.h for this build).
$(GPU_BUILD)/version.h: FORCE
	@mkdir -p $(GPU_BUILD)
	@rev=$${GPU_REV:-$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}; \
	git diff --quiet HEAD 2>/dev/null || [ -n "$$GPU_REV" ] || rev="$$rev-dirty"; \
	printf '#define CB_GIT_REV "%s"\n#define CB_CFLAGS "%s"\n' "$$rev" "$(notdir $(NVCC)) -O3 $(GPU_ARCHS:%=sm_%)" > $@.tmp; \
	cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(GPU_BUILD)/%.o: %.c $(GPU_BUILD)/version.h
	@mkdir -p $(dir $@)
	$(CC) $(GPU_CFLAGS) -MMD -MP -c $< -o $@

$(GPU_BUILD)/%.o: %.cu $(GPU_BUILD)/version.h
	@test -n "$(NVCC)" || { echo "error: make gpu needs nvcc (the CUDA toolkit): not found in PATH or /usr/local/cuda/bin" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -I. -MMD -MP -c $< -o $@

$(GPU_BIN): $(GPU_OBJ)
	$(NVCC) $(GPU_GENCODE) -o $@ $^ -lcublasLt -lm -ldl -Xlinker -rpath=$(dir $(NVCC))../lib64

test-gpu: $(GPU_BIN)
	./$(GPU_BIN) test

# ---- fuzzing: libFuzzer harnesses of the parsers of untrusted files (tests/fuzz/), built with
# clang into build-fuzz/, apart from the gcc builds above. CI installs clang and
# libclang-rt-14-dev; this target installs nothing beyond `deps`.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
# The project sources the harnesses link: the parsers and everything they call. The report's two
# reader wings, report/formats/ and report/logs/, are taken whole (a new parser file is linked
# without a change here); when a parser gains a dependency on a file of common/ or model/, add
# that file here.
FUZZ_LIB_SRC := common/csvio.c common/err.c common/parse.c common/files.c common/schema.c model/safetensors.c model/dataset.c \
                model/ckpt_meta.c common/precision.c common/machine_data.c common/presets.c common/counts.c common/stats.c \
                common/params.c \
                common/frameworks.c \
                $(wildcard report/formats/*.c report/logs/*.c)
# GSL (the fits) with its own CBLAS: the harnesses link no OpenBLAS.
FUZZ_LIBS    := -lcsv -lgsl -lgslcblas -lm
FUZZ_TARGETS := csv safetensors idx ckpt logs import_out prices_out
# Largest input per format: a few data/*.csv heads, a header plus small tensors, an index pair,
# a checkpoint step's two files (about 1.5 KiB each with their metadata).
FUZZ_MAXLEN_csv         := 8192
FUZZ_MAXLEN_safetensors := 16384
FUZZ_MAXLEN_idx         := 4096
FUZZ_MAXLEN_ckpt        := 8192
FUZZ_MAXLEN_logs        := 8192
FUZZ_MAXLEN_import_out  := 8192
FUZZ_MAXLEN_prices_out  := 8192
# make fuzz: inputs each harness tries (its seeds included) from seed FUZZ_SEED, sized for 10 to
# 30 seconds each on a loaded 2-core machine (about 3 minutes in all).
FUZZ_SEED    ?= 1
FUZZ_RUNS_csv           := 120000
FUZZ_RUNS_safetensors   := 300000
FUZZ_RUNS_idx           := 300000
FUZZ_RUNS_ckpt          := 100000
FUZZ_RUNS_logs          := 20000
FUZZ_RUNS_import_out    := 20000
FUZZ_RUNS_prices_out    := 30000
# The dictionary of each harness (none: no file tests/fuzz/NAME.dict).
FUZZ_DICT_import_out    := tests/fuzz/logs.dict
FUZZ_DICT     = $(or $(FUZZ_DICT_$(1)),$(wildcard tests/fuzz/$(1).dict))
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer $(WARN)
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/%.o) $(FUZZ_BUILD)/tests/fuzz/fuzz_io.o
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

fuzz-toolchain:
	@command -v $(FUZZ_CC) >/dev/null || { echo "error: '$(FUZZ_CC)' not found: make fuzz needs clang" >&2; \
	  echo "hint: apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }
	@ls "$$($(FUZZ_CC) -print-runtime-dir)"/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || { \
	  echo "error: $(FUZZ_CC) has no libFuzzer runtime in '$$($(FUZZ_CC) -print-runtime-dir)'" >&2; \
	  echo "hint: apt-get install -y libclang-rt-14-dev" >&2; exit 1; }
	@mkdir -p $(FUZZ_BUILD) && echo '*' > $(FUZZ_BUILD)/.gitignore

$(FUZZ_BUILD)/%.o: %.c | deps fuzz-toolchain
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP -c $< -o $@

$(FUZZ_BIN): $(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ) | deps fuzz-toolchain
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -MMD -MP -MF $@.d -MT $@ -o $@ $< $(FUZZ_LIB_OBJ) $(FUZZ_LIBS)

# Each harness on a scratch copy of its seeds (make fuzz never writes tests/fuzz/corpus/); all of
# them run even when one fails, and any crash, leak, timeout or sanitizer report fails the target.
fuzz: $(FUZZ_BIN)
	@rc=0; $(foreach t,$(FUZZ_TARGETS),FUZZ_SEED=$(FUZZ_SEED) tests/fuzz/run.sh check $(FUZZ_BUILD)/fuzz_$(t) \
	  tests/fuzz/corpus/$(t) $(FUZZ_BUILD)/run/$(t) $(FUZZ_RUNS_$(t)) $(FUZZ_MAXLEN_$(t)) $(call FUZZ_DICT,$(t)) \
	  || rc=1;) exit $$rc

fuzz-explore: $(FUZZ_BIN)
	@rc=0; $(foreach t,$(FUZZ_TARGETS),tests/fuzz/run.sh explore $(FUZZ_BUILD)/fuzz_$(t) tests/fuzz/corpus/$(t) \
	  $(FUZZ_BUILD)/explore/$(t) $(FUZZ_SECONDS) $(FUZZ_MAXLEN_$(t)) $(call FUZZ_DICT,$(t)) || rc=1;) exit $$rc

# Writes the generated seeds of tests/fuzz/corpus/ from tests/fuzz/gen_corpus.c, data/, tests/logs/
# and tests/catalogs/ (the result is committed); the inputs fuzzing found there stay.
fuzz-corpus: | deps fuzz-toolchain
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -o $(FUZZ_BUILD)/gen_corpus tests/fuzz/gen_corpus.c $(FUZZ_LIB_SRC) $(FUZZ_LIBS)
	$(FUZZ_BUILD)/gen_corpus tests/fuzz/corpus data tests/logs tests/catalogs

clean:
	rm -rf build build-san build-fuzz build-gpu costbench costbench-gpu

-include $(GPU_OBJ:.o=.d)
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_BIN:=.d)
