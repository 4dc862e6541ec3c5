build/bench/matmul_bench.o: bench/matmul_bench.c bench/matmul_bench.h \
 bench/../common/record.h bench/../common/machine.h \
 bench/../model/config.h bench/runner.h bench/../common/stats.h \
 bench/../common/err.h bench/../common/mem.h bench/../common/timer.h \
 bench/../kernels/matmul.h
bench/matmul_bench.h:
bench/../common/record.h:
bench/../common/machine.h:
bench/../model/config.h:
bench/runner.h:
bench/../common/stats.h:
bench/../common/err.h:
bench/../common/mem.h:
bench/../common/timer.h:
bench/../kernels/matmul.h:
