build/src/cmd_bench.o: src/cmd_bench.c src/../bench/blascore.h \
 src/../bench/../common/machine.h src/../bench/matmul_bench.h \
 src/../bench/../common/record.h src/../bench/../common/machine.h \
 src/../bench/../model/config.h src/../bench/runner.h \
 src/../bench/../common/stats.h src/../bench/peak.h \
 src/../bench/rope_bench.h src/../common/err.h src/../common/machine.h \
 src/../common/mem.h src/../common/opts.h src/../common/parse.h \
 src/../common/record.h src/../kernels/rope.h src/../model/config.h \
 src/../report/plot.h src/commands.h
src/../bench/blascore.h:
src/../bench/../common/machine.h:
src/../bench/matmul_bench.h:
src/../bench/../common/record.h:
src/../bench/../common/machine.h:
src/../bench/../model/config.h:
src/../bench/runner.h:
src/../bench/../common/stats.h:
src/../bench/peak.h:
src/../bench/rope_bench.h:
src/../common/err.h:
src/../common/machine.h:
src/../common/mem.h:
src/../common/opts.h:
src/../common/parse.h:
src/../common/record.h:
src/../kernels/rope.h:
src/../model/config.h:
src/../report/plot.h:
src/commands.h:
