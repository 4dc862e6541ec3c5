build/bench/rope_bench.o: bench/rope_bench.c bench/rope_bench.h \
 bench/../common/record.h bench/../common/machine.h \
 bench/../model/config.h bench/runner.h bench/../common/stats.h \
 bench/../common/err.h bench/../common/mem.h bench/../kernels/rope.h
bench/rope_bench.h:
bench/../common/record.h:
bench/../common/machine.h:
bench/../model/config.h:
bench/runner.h:
bench/../common/stats.h:
bench/../common/err.h:
bench/../common/mem.h:
bench/../kernels/rope.h:
